"""``drain --report DIR``: the drain as a self-contained HTML page, with ``plan.json`` and ``waves.csv``.

Built from the shared report pieces (:mod:`optisched.report`): the same stylesheet and tables as
``compare --report``, every input text escaped by :func:`optisched.textsafe.html_text`, CSV cells
neutralized, and the folder rule of :func:`optisched.report.check_report_dir` (a file of the report's names
that no earlier report wrote there is refused before the run; nothing is deleted).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..model.state import ClusterState
from ..report import check_report_dir, claim_report_dir, csv_file
from ..report.page import page, table
from ..textsafe import html_text
from ..version import KUBE_VERSION
from .drain import DrainOutcome

__all__ = ["DRAIN_FILES", "check_drain_report", "write_drain_report"]

DRAIN_FILES = ("report.html", "plan.json", "waves.csv")


def check_drain_report(out_dir: str | Path) -> None:
    """Refuse a folder holding a drain report's file that optisched did not write."""
    check_report_dir(out_dir, DRAIN_FILES)


def waves_frame(outcome: DrainOutcome) -> pd.DataFrame:
    """One row per eviction: wave, pod, node it leaves, kube-scheduler's landing, optisched's target."""
    target = outcome.optimal.placements if outcome.optimal is not None else {}
    rows = [{"wave": i + 1, "pod": e["pod"], "from": e["from"], "kube-scheduler": e["predicted"] or "pending",
             "optimal": target.get(e["pod"], "") or "pending"} for i, w in enumerate(outcome.waves) for e in w]
    return pd.DataFrame(rows, columns=["wave", "pod", "from", "kube-scheduler", "optimal"])


def _cells(values: list) -> list[tuple[str, bool, bool]]:
    return [(str(v), isinstance(v, int) and not isinstance(v, bool), False) for v in values]


def _page(outcome: DrainOutcome, state: ClusterState) -> str:
    e = html_text
    nodes = outcome.per_node()
    parts = [f"<h1>Drain: {e(', '.join(outcome.nodes))}</h1>",
             (f'<p class="sub">{state.num_nodes} nodes, {len(state.pods)} pods; kubectl drain and kube-scheduler '
              f"{e(KUBE_VERSION)} semantics</p>"), "<h2>Nodes</h2>",
             table(["node", "drains", "waves", "blocked by"],
                    [_cells([n, "yes" if i["drains"] else "no", i["waves"],
                             "; ".join(f"{b['pod']}: {b['reason']}" for b in i["blockers"]) or "—"])
                     for n, i in nodes.items()])]
    frame = waves_frame(outcome)
    parts += ["<h2>Waves</h2>", ('<p class="note">Each wave evicts what the PodDisruptionBudgets allow; the next '
                                 "starts once its replacements run. Optimal: optisched's best placement of the "
                                 "evicted pods.</p>"),
              table(list(frame.columns), [_cells(list(r)) for r in frame.itertuples(index=False)], tall=True)]
    extra = (outcome.optimal.lines() if outcome.optimal is not None else []) + \
        (outcome.largest.lines() if outcome.largest is not None else [])
    if outcome.skipped or extra:
        parts += ["<h2>Notes</h2>", "<ul>" + "".join(f"<li>{e(x)}</li>" for x in extra) +
                  "".join(f"<li>skipped {e(s['pod'])}: {e(s['reason'])}</li>" for s in outcome.skipped) + "</ul>"]
    return page('Drain ' + ', '.join(outcome.nodes), parts)


def write_drain_report(outcome: DrainOutcome, state: ClusterState, out_dir: str | Path) -> dict[str, Path]:
    """Write report.html, plan.json and waves.csv into ``out_dir``; the manifest first."""
    out = Path(out_dir)
    check_drain_report(out)
    claim_report_dir(out, list(DRAIN_FILES))
    (out / "plan.json").write_text(json.dumps(outcome.to_dict(), indent=1) + "\n", encoding="utf-8")
    csv_file(waves_frame(outcome), out / "waves.csv")
    (out / "report.html").write_text(_page(outcome, state), encoding="utf-8")
    return {n: out / n for n in DRAIN_FILES}
