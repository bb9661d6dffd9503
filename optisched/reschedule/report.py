"""``reschedule --report DIR``: the plan written to a folder for people and for tools, as compare's
report is (:mod:`optisched.report`: the same manifest rules, so no file optisched did not write there is
overwritten and nothing is deleted; the same self-contained page).

``report.html``: the goal and its certificate, before → after metrics, utilization per node before and
after (the nodes emptied marked), the waves as a timeline with each PodDisruptionBudget's use, the
landings kube-scheduler's replay predicts that differ from the target, the Pareto curve (``--pareto``)
and, for ``consolidate``, the removable nodes and the hourly saving. Beside it: ``reschedule.json``
(plan.json), ``waves.csv``, ``nodes.csv``, ``landings.csv``, ``pareto.csv`` and the plots as PNG files.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..comparison.tables import shown_resources
from ..metrics.cost import node_costs
from ..metrics.resources import pods_per_node, utilization
from ..model.state import ClusterState
from ..preemption.pdb import PDBLedger
from ..report import check_report_dir, claim_report_dir, csv_file, png_bytes
from ..report.page import e, figure, is_number, page, table
from .goals import Goal
from .plan import ReschedulePlan, on_target
from .report_plots import plot_node_utilization, plot_pareto, plot_waves

__all__ = ["REPORT_FILES", "check_reschedule_report", "write_reschedule_report"]

REPORT_FILES = ("report.html", "reschedule.json", "waves.csv", "nodes.csv", "landings.csv", "pareto.csv",
                "utilization.png", "waves.png", "pareto.png")

DEFINITIONS = [
    ("move", ("an eviction (policy/v1 Eviction); the pod's controller creates a replacement that kube-scheduler "
     "places.")),
    ("wave", ("evictions issued together; the next wave starts once this wave's replacements are scheduled. "
     "A PodDisruptionBudget counts a pod as disrupted until its replacement is placed, so a wave's evictions "
     "under one budget never exceed its disruptionsAllowed.")),
    ("target / predicted", ("where the optimizer puts a pod / where the replay of kube-scheduler (greedy mode, "
     "the same profile) places its replacement at that wave.")),
    ("certificate", ("per tier of the target's solve: the value reached, the best bound proved and the gap "
     "between them (0 %: optimal).")),
    ("knee", ("with moves and gain each scaled to [0, 1], the Pareto point farthest above the chord from the "
     "first point to the last: past it each further move buys less of the goal than the curve's average.")),
]


def check_reschedule_report(out_dir: str | Path) -> None:
    """Refuse a folder holding files of the report's names that optisched did not write there."""
    check_report_dir(out_dir, REPORT_FILES)


def final_rows(state: ClusterState, plan: ReschedulePlan) -> np.ndarray:
    """The predicted end state as a node row per pod row (-1: pending)."""
    return np.array([state.node_index[n] if (n := plan.staging.final.get(p.key)) is not None else -1
                     for p in state.pods], dtype=np.int64)


def nodes_frame(state: ClusterState, plan: ReschedulePlan) -> pd.DataFrame:
    """Per node: utilization and pods before and after, whether the plan empties it; the nodes the plan
    touches (evicted from, landed on, emptied) first."""
    after = final_rows(state, plan)
    resources = shown_resources(state)
    cols = [state.resource_col(r) for r in resources]
    ub, ua = utilization(state, state.pod_node)[:, cols], utilization(state, after)[:, cols]
    frame = pd.DataFrame({"node": state.node_names, "pods:before": pods_per_node(state, state.pod_node),
                          "pods:after": pods_per_node(state, after)})
    for i, r in enumerate(resources):
        frame[f"before:{r}"], frame[f"after:{r}"] = ub[:, i], ua[:, i]
    frame["emptied"] = frame["node"].isin(plan.removable)
    frame["cordoned"] = frame["node"].isin(plan.staging.cordoned)
    moves = plan.waves_frame()
    touched = set(moves["from"]) | set(moves["predicted"].dropna()) | set(plan.removable)
    order = np.argsort(~frame["node"].isin(touched).to_numpy(), kind="stable")
    return frame.iloc[order].reset_index(drop=True)


def waves_frame(plan: ReschedulePlan) -> pd.DataFrame:
    """``ReschedulePlan.waves_frame()`` with the target's node (``planned``) beside ``to``, which follows
    an accepted landing."""
    frame = plan.waves_frame()
    frame.insert(4, "planned", frame["pod"].map(plan.target))
    return frame


def budgets_frame(state: ClusterState, plan: ReschedulePlan) -> pd.DataFrame:
    """Per wave and PodDisruptionBudget: evictions counted against it and its disruptionsAllowed."""
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    allowed = dict(zip(ledger.names, ledger.allowed))
    rows = [{"wave": i + 1, "budget": b, "used": n, "disruptionsAllowed": allowed.get(b)}
            for i, w in enumerate(plan.staging.waves) for b, n in sorted(w.budgets.items())]
    return pd.DataFrame(rows, columns=["wave", "budget", "used", "disruptionsAllowed"])


def landings_frame(state: ClusterState, plan: ReschedulePlan) -> pd.DataFrame:
    """Every pod whose predicted end node differs from the target's, and why."""
    dropped = {m.key: why for m, why in plan.staging.dropped}
    moved = {m.key for w in plan.staging.waves for m in w.moves}
    names = state.node_names
    rows = []
    for p, pod in enumerate(state.pods):
        planned, predicted = plan.target.get(pod.key), plan.staging.final.get(pod.key)
        if planned == predicted:
            continue
        src = names[int(state.pod_node[p])] if state.pod_node[p] >= 0 else None
        if pod.key in dropped:
            what = f"dropped, stays: {dropped[pod.key]}"
        elif pod.key in moved:
            what = "kube-scheduler puts the replacement elsewhere; the landing is accepted"
        elif src is None:
            what = "pending pod: kube-scheduler's queue places it " + ("elsewhere" if predicted else "nowhere")
        else:
            what = "differs from the target"
        rows.append({"pod": pod.key, "from": src, "planned": planned, "predicted": predicted, "what": what})
    return pd.DataFrame(rows, columns=["pod", "from", "planned", "predicted", "what"])


def _cells(frame: pd.DataFrame) -> list[list[tuple[str, bool, bool]]]:
    """Every row of ``frame`` as table cells (text escaped by :func:`optisched.report.page.table`)."""
    def text(v: object) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            return "–"
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    return [[(text(v), is_number(v), False) for v in row] for row in frame.itertuples(index=False)]


def _metrics(plan: ReschedulePlan) -> str:
    b, a = plan.before.to_dict(), plan.after.to_dict()
    rows = []
    for k in b:
        pairs = [(f"{k}[{r}]", b[k][r], a[k].get(r)) for r in b[k]] if isinstance(b[k], dict) else [(k, b[k], a[k])]
        for name, x, y in pairs:
            if x is not None:
                rows.append([(name, False, False), (str(x), is_number(x), False), (str(y), is_number(y), x != y)])
    return table(["metric", "before", "after (predicted)"], rows)


def _certificate(plan: ReschedulePlan) -> str:
    c = plan.certificate
    tiers = [t.to_dict() for t in c.tiers]
    rows = [[(t["name"], False, False), (str(t["objective"]), True, False), (str(t["bound"]), True, False),
             ("no useful bound" if t["gap"] is None else f"{100 * t['gap']:.2f}%", True, False),
             (t["status"], False, False)] for t in tiers]
    return (f'<p>Target solve: <b>{e(c.status)}</b> in {c.seconds:.2f}s.</p>'
            + table(["tier", "value", "bound", "gap", "status"], rows))


def _lead(plan: ReschedulePlan) -> str:
    evicted = [m for w in plan.staging.waves for m in w.moves]
    on = sum(1 for m in evicted if on_target(m))
    text = (f"<b>{len(evicted)}</b> eviction(s) in <b>{len(plan.staging.waves)}</b> wave(s); replacements "
            f"predicted on their target: <b>{on}/{len(evicted)}</b>")
    if plan.staging.cordoned:
        text += f"; cordon first: {e(', '.join(plan.staging.cordoned))}"
    if plan.staging.held:
        text += f"; cordoned during the plan (empty already): {len(plan.staging.held)} node(s)"
    reach = "".join(f"<br>{e(r.line())}" for r in plan.reach)
    if plan.side_effects:
        reach += f"<br>worse on what no goal of the plan is about: {e('; '.join(plan.side_effects))}"
    return f'<p class="lead">{text}.{reach}</p>'


def _consolidation(state: ClusterState, plan: ReschedulePlan) -> list[str]:
    if Goal.CONSOLIDATE not in plan.goals and not plan.removable:
        return []
    costs = node_costs(state)
    rows = [[(n, False, False), ("–" if costs is None else f"{costs[state.node_index[n]] / 1000:.3f}", True, False)]
            for n in plan.removable]
    saving = "" if plan.saving is None else f" Hourly saving: <b>{plan.saving:.3f}</b>."
    head = (f"<p>{len(plan.removable)} node(s) left with only DaemonSet and mirror pods, which an autoscaler "
            f"can remove.{saving}</p>")
    return ["<h2>Removable nodes</h2>", head + (table(["node", "hourly cost"], rows) if rows else "")]


def _notes(plan: ReschedulePlan) -> list[str]:
    lines = [*plan.staging.notes, *(plan.pareto.notes if plan.pareto is not None else [])]
    return ["<h2>Notes</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"] if lines else []


def _versus(plan: ReschedulePlan) -> list[str]:
    """--compare-descheduler: the descheduler's strategy beside the plan, replayed the same way."""
    if plan.versus is None:
        return []
    frame = plan.versus.frame()
    return [f"<h2>Beside the descheduler ({e(', '.join(plan.versus.strategies))})</h2>",
            ('<p class="note">The descheduler\'s strategy for the same goal on the same snapshot, its evicted pods\' '
             "replacements placed by the same kube-scheduler replay (docs/whatif.md).</p>"),
            table(list(frame.columns), _cells(frame))]


def _pareto(plan: ReschedulePlan, pngs: dict[str, bytes]) -> list[str]:
    curve = plan.pareto
    if curve is None:
        return []
    frame = curve.frame()
    frame["budget"] = frame["budget"].astype(object).where(frame["budget"].notna(), "plan")
    frame["knee"] = frame["knee"].map({True: "knee", False: ""})
    frame["gap"] = frame["gap"].map(lambda g: "no useful bound" if g is None or pd.isna(g) else f"{100 * g:.2f}%")
    cols = ["budget", "moves", "value", "bound", "gap", "gain", "status", "fromBudget", "knee"]
    caption = (f"{curve.goal} ({curve.sense}imized; {curve.unit}) against the moves each budget's target makes; "
               "dashed: the bound proved at that budget; red star: the knee (see Definitions). "
               "To carry a point out, run again with --max-moves at its budget.")
    return ["<h2>Goal against moves (--pareto)</h2>", figure(pngs["pareto.png"], "Pareto curve", caption),
            table(cols, _cells(frame[cols]))]


def _body(state: ClusterState, plan: ReschedulePlan, tables: dict[str, pd.DataFrame], pngs: dict[str, bytes],
          files: list[str]) -> list[str]:
    waves, landings = tables["waves.csv"], tables["landings.csv"]
    sub = (f"plan {plan.plan_id}: {state.num_nodes} nodes, {len(state.pods)} pods ({int(np.count_nonzero(state.pod_node < 0))} "
           f"pending); kube-scheduler {plan.kubernetes_version} semantics")
    parts = [f"<h1>Rescheduling plan: {e(', '.join(plan.goals))}</h1>", f'<p class="sub">{e(sub)}</p>',
             _lead(plan), "<h2>Certificate</h2>", _certificate(plan), "<h2>Before and after</h2>", _metrics(plan),
             "<h2>Node utilization</h2>",
             figure(pngs["utilization.png"], "Node utilization before and after",
                    "Per node, requested / allocatable before (grey) and after the plan as predicted (blue); "
                    "nodes the plan empties are shaded red and marked (emptied)."),
             "<h2>Waves</h2>",
             figure(pngs["waves.png"], "Waves", "Evictions per wave, each PodDisruptionBudget's use per wave "
                    "against its disruptionsAllowed, and every eviction at its wave (orange: its replacement "
                    "is predicted elsewhere than the planned node). In the table, to is the node the plan "
                    "keeps (an accepted landing), planned the target's.")]
    parts.append(table(list(waves.columns), _cells(waves), tall=True)
                 if len(waves) else "<p>No eviction.</p>")
    if len(tables["budgets"]):
        parts.append(table(["wave", "PodDisruptionBudget", "evictions counted", "disruptionsAllowed"],
                           _cells(tables["budgets"])))
    parts.append("<h2>Predicted landings that differ from the target</h2>")
    parts.append(table(list(landings.columns), _cells(landings), tall=True) if len(landings) else
                 "<p>None: kube-scheduler's replay puts every pod where the target does.</p>")
    parts += _consolidation(state, plan) + _versus(plan) + _pareto(plan, pngs) + _notes(plan)
    parts.append("<h2>Definitions</h2><dl class=\"defs\">" +
                 "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in DEFINITIONS) + "</dl>")
    parts.append('<p class="note">Files: ' + ", ".join(f'<a href="{e(f)}">{e(f)}</a>' for f in files) + "</p>")
    return parts


def write_reschedule_report(plan: ReschedulePlan, state: ClusterState, out_dir: str | Path) -> dict[str, Path]:
    """Write the report files into ``out_dir`` (created if missing; the manifest first); returns file
    name -> path. ``state``: the cluster the plan was made for."""
    out = Path(out_dir)
    check_reschedule_report(out)
    nodes, budgets = nodes_frame(state, plan), budgets_frame(state, plan)
    tables = {"waves.csv": waves_frame(plan), "nodes.csv": nodes, "landings.csv": landings_frame(state, plan)}
    figures = {"utilization.png": plot_node_utilization(nodes, shown_resources(state)),
               "waves.png": plot_waves(tables["waves.csv"], budgets)}
    if plan.pareto is not None:
        tables["pareto.csv"] = plan.pareto_frame()
        figures["pareto.png"] = plot_pareto(plan.pareto)
    names = [*figures, *tables, "reschedule.json", "report.html"]
    claim_report_dir(out, names)
    pngs = {name: png_bytes(fig) for name, fig in figures.items()}
    for name, data in pngs.items():
        (out / name).write_bytes(data)
    for name, frame in tables.items():
        csv_file(frame, out / name)
    (out / "reschedule.json").write_text(json.dumps(plan.to_dict(), indent=1) + "\n", encoding="utf-8")
    written = {name: out / name for name in names[:-1]}
    body = _body(state, plan, {**tables, "budgets": budgets}, pngs, list(written))
    (out / "report.html").write_text(page(f"optisched: reschedule {', '.join(plan.goals)}", body), encoding="utf-8")
    written["report.html"] = out / "report.html"
    return written
