"""Rich rendering of summaries, schedules and explanations for the terminal."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import interrupt
from ..model.quantity import human_quantity
from ..optimal.tier_labels import tier_glossary, tier_label
from ..textsafe import plain, safe, safe_text
from ..version import KUBE_VERSION
from .summaries import optimal_summary

__all__ = ["render_explain", "render_inspect", "render_optimal_summary", "render_schedule_summary"]


def _amount(resource: str, v: int) -> str:
    return human_quantity(resource, v)


def render_inspect(console: Console, s: dict[str, Any]) -> None:
    n = s["nodes"]
    t = Table(title=f"Nodes: {n['total']} ({n['unschedulable']} unschedulable)")
    _name_column(t, "zone")
    t.add_column("nodes", justify="right")
    for z, c in n["byZone"].items():
        t.add_row(safe_text(z), str(c))
    console.print(t)
    t = Table(title="Node shapes (allocatable)")
    for c in ("cpu", "memory", "nodes"):
        t.add_column(c, justify="right")
    for sh in n["byShape"]:
        t.add_row(_amount("cpu", sh["cpu"]), _amount("memory", sh["memory"]), str(sh["count"]))
    console.print(t)
    p = s["pods"]
    t = Table(title=f"Pods: {p['total']} ({p['bound']} bound, {p['pending']} pending)")
    if p["finished"]:
        t.caption = f"and {p['finished']} finished (Succeeded/Failed), holding nothing"
    for c in ("priority", "bound", "pending"):
        t.add_column(c, justify="right")
    for row in p["byPriority"]:
        t.add_row(str(row["priority"]), str(row.get("bound", 0)), str(row.get("pending", 0)))
    console.print(t)
    t = Table(title="Requested vs allocatable")
    for c in ("resource", "allocatable", "bound pods", "pending pods", "bound %"):
        t.add_column(c, justify="right")
    for r in s["resources"]:
        pct = f"{100 * r['requestedBound'] / r['allocatable']:.1f}" if r["allocatable"] else "-"
        t.add_row(safe_text(r["resource"]), _amount(r["resource"], r["allocatable"]), _amount(r["resource"], r["requestedBound"]),
                  _amount(r["resource"], r["requestedPending"]), pct)
    console.print(t)
    if s["pdbs"]:
        t = Table(title="PodDisruptionBudgets")
        _name_column(t, "pdb")
        for c in ("pods", "healthy", "desired", "disruptions allowed"):
            t.add_column(c, justify="right")
        for b in s["pdbs"]:
            t.add_row(safe_text(b["pdb"]), str(b["pods"]), str(b["currentHealthy"]), str(b["desiredHealthy"]),
                      str(b["disruptionsAllowed"]))
        console.print(t)
    if s.get("groups"):
        t = Table(title="Pod groups (all or nothing from their minimum on)")
        _name_column(t, "group")
        for c in ("members", "bound", "minimum"):
            t.add_column(c, justify="right")
        t.add_column("topology")
        for g in s["groups"][:200]:
            topo = (f"required {g['requiredTopology']}" if g.get("requiredTopology") else
                    f"preferred {g['preferredTopology']}" if g.get("preferredTopology") else "")
            size = f"{g['members']} of {g['declaredSize']}" if "declaredSize" in g else str(g["members"])
            t.add_row(safe_text(g["group"] + (f" ({g['missing']})" if g.get("missing") else "")), size,
                      str(g["bound"]), str(g["minimum"]), safe_text(topo))
        if len(s["groups"]) > 200:
            t.caption = f"first 200 of {len(s['groups'])}; --json lists all"
        console.print(t)
    if s["pendingPods"]:
        t = Table(title="Pending pods (effective requests)")
        _name_column(t, "pod")
        t.add_column("priority", justify="right")
        t.add_column("requests")
        for pp in s["pendingPods"][:200]:
            req = ", ".join(f"{k} {_amount(k, v)}" for k, v in pp["requests"].items())
            t.add_row(safe_text(pp["pod"]), str(pp["priority"]), safe_text(req))
        if len(s["pendingPods"]) > 200:
            t.caption = f"first 200 of {len(s['pendingPods'])}; --json lists all"
        console.print(t)
    _render_profile(console, s["profile"])
    kubelets = ", ".join(f"{v} ×{n}" for v, n in s["kubeletVersions"].items()) or "no nodes"
    console.print(safe_text(f"kube-scheduler release followed: {s['kubernetesVersion']}; nodes' kubelets: {kubelets}"),
                  highlight=False)
    if s["skippedKinds"]:
        console.print("Skipped kinds: " + ", ".join(safe(f"{k} ×{v}") for k, v in s["skippedKinds"].items()),
                      highlight=False)


def percentage_text(pct: int) -> str:
    """``percentageOfNodesToScore`` as a person reads it: 0 means kube's adaptive default."""
    return "adaptive (kube's default)" if pct == 0 else f"{pct}%"


def _render_profile(console: Console, prof: dict[str, Any]) -> None:
    """The profile as plugin/weight rows, its NodeResourcesFit scoring strategy named."""
    t = Table(title=safe_text(f"Profile {prof['schedulerName']} ({prof['source']})"))
    t.add_column("score plugin")
    t.add_column("weight", justify="right")
    for plugin, weight in prof["scoreWeights"].items():
        t.add_row(safe_text(plugin), str(weight))
    ss = prof["scoringStrategy"]
    t.caption = safe_text(f"NodeResourcesFit scoring strategy {ss['type']} ("
                     + ", ".join(f"{r} weight {w}" for r, w in ss["resources"].items())
                     + f"); percentageOfNodesToScore {percentage_text(prof['percentageOfNodesToScore'])}")
    console.print(t)
    if prof["notModelled"]:
        console.print(safe_text(f"Not modelled (accepted, no effect): {', '.join(prof['notModelled'])}"))


def render_schedule_summary(console: Console, summary: dict[str, Any]) -> None:
    """Greedy mode's summary (:func:`optisched.cli.summaries.placement_summary`): counts, preemptions made,
    unschedulable pods with their FitError, utilization."""
    _render_placement(console, summary, f"Greedy placement (kube-scheduler {summary.get('kubernetesVersion', KUBE_VERSION)})")


def render_optimal_summary(console: Console, result: Any, summary: dict[str, Any]) -> None:
    """Optimal mode's summary: the same tables as greedy mode, then the certificate."""
    _render_placement(console, summary, "Optimal batch placement (CP-SAT)")
    cert = result.certificate
    stopped = ", interrupted" if cert.interrupted else ""
    t = Table(title=f"Certificate: {cert.status} ({cert.seconds:.1f} s{stopped}, answer from the {cert.source})")
    shown = [tier_label(x.key) + ("" if x.fidelity == "EXACT" else f" ({x.fidelity.lower()})") for x in cert.tiers]
    t.add_column("tier", no_wrap=True, min_width=min(max(map(len, shown), default=4), 40))  # names never cut
    for c in ("objective", "bound", "gap", "greedy", "status", "s"):
        t.add_column(c, justify="left" if c == "status" else "right")
    if not cert.tiers:  # no tier was solved: nothing to bound the answer with
        console.print(f"Certificate: {cert.status} ({cert.seconds:.1f} s{stopped}, answer from the {cert.source}): "
                      "no tier solved, so no bound and no gap")
    for tier, name in zip(cert.tiers, shown):
        d = tier.to_dict()  # in the tier's unit, as JSON and the report show it
        gap = "no useful bound" if d["gap"] is None else f"{100 * d['gap']:.2f}%"
        t.add_row(safe(name), f"{d['objective']:,}", f"{d['bound']:,}", gap,
                  "" if d["greedy"] is None else f"{d['greedy']:,}", tier.status, f"{tier.seconds:.1f}")
    if cert.tiers:
        console.print(t)
    for term, unit in tier_glossary(x.key for x in cert.tiers):
        console.print(f"  {safe(term)}: {unit}")
    if cert.greedy_optimal:
        console.print("kube-scheduler's placement is optimal for this batch.")
    if result.explanations:
        t = Table(title="Why pods stay pending")
        for c in ("pods", "priority", "why", "detail"):
            t.add_column(c)
        for e in result.explanations[:50]:
            pods = ", ".join(e.pods[:3]) + (f" (+{len(e.pods) - 3})" if len(e.pods) > 3 else "")
            t.add_row(safe(pods), str(e.priority), e.kind, safe(e.detail))
        console.print(t)
    from ..metrics import evicted, moved
    from ..optimal.eviction.pdb_model import budget_use

    ev, mv = int(evicted(result.state, result.node_of).sum()), int(moved(result.state, result.node_of).sum())
    if ev or mv:
        console.print(f"running pods: {ev} evicted, {mv} moved")
    render_budgets(console, budget_use(result.batch, result.node_of))
    for note in cert.notes:
        console.print(f"note: {safe(note)}")
    if result.violations:
        console.print(f"[bold red]{len(result.violations)} placement(s) fail the greedy filters:[/]")
        for v in result.violations[:20]:
            console.print(f"  {safe(str(v))}")


def _name_column(t: Table, header: str) -> None:
    """A column of pod or node names: a name too long for the terminal folds onto the next line, never cut
    (a cut name cannot be searched for). No minimum width: one would make rich crop the table's edge."""
    t.add_column(header, overflow="fold")


def _render_placement(console: Console, s: dict[str, Any], title: str) -> None:
    c = s["counts"]
    t = Table(title=title)
    heads = ["pending", "scheduled", "unschedulable", "not handled"] + [k for k in ("evicted", "moved") if c[k]]
    for h in heads:
        t.add_column(h, justify="right")
    t.add_row(*(str(c[h.replace("not handled", "notHandled")]) for h in heads))
    console.print(t)
    if s.get("interrupted"):
        untried = c.get("notAttempted")
        console.print(f"interrupted ({interrupt.cause()}): the answer so far" +
                      (f"; {untried} pending pod(s) not attempted" if untried else ""), highlight=False)
    _render_evicted(console, s["evicted"])
    if s["unschedulable"]:
        t = Table(title="Unschedulable pods")
        _name_column(t, "pod")
        t.add_column("priority", justify="right")
        t.add_column("reason", overflow="fold")
        for key, u in list(s["unschedulable"].items())[:50]:
            t.add_row(safe_text(key), str(u["priority"]), safe_text(u["reason"]))
        if len(s["unschedulable"]) > 50:
            t.caption = f"first 50 of {len(s['unschedulable'])}; --json lists all"
        console.print(t)
    t = Table(title="Utilization (requested / allocatable)")
    for col in ("resource", "requested", "allocatable", "%", "max node %"):
        t.add_column(col, justify="right")
    for u in s["utilization"]:
        r = u["resource"]
        t.add_row(safe_text(r), _amount(r, u["requested"]), _amount(r, u["allocatable"]), f"{u['percent']:.1f}",
                  f"{u['maxNodePercent']:.1f}")
    console.print(t)


def _render_evicted(console: Console, evicted: dict[str, Any]) -> None:
    """The preemptions a run made: each victim, its node, and for whom it was evicted."""
    if not evicted:
        return
    t = Table(title="Preemptions made (evicted pods)")
    _name_column(t, "victim")
    t.add_column("priority", justify="right")
    _name_column(t, "node")
    _name_column(t, "for")
    for key, e in evicted.items():
        t.add_row(safe_text(key), str(e["priority"]), safe_text(e["node"]), safe_text(e["preemptor"] or "the optimal batch"))
    console.print(t)


def render_explain(console: Console, ex: dict[str, Any]) -> None:
    """One pod's cycles (:func:`optisched.greedy.explain.explain_pod`): a table of nodes per attempt."""
    where = f"bound to {ex['node']}" if ex["node"] else "left pending"
    console.print(Text.assemble((plain(ex["pod"]), "bold"), f" priority {ex['priority']}, {len(ex['attempts'])} "
                                f"attempt(s), {where}"))
    for at in ex["attempts"]:
        _render_attempt(console, at)


def _render_attempt(console: Console, at: dict[str, Any]) -> None:
    nominated = f", nominated node {at['nominatedNode']}" if at["nominatedNode"] else ""
    console.print(safe_text(f"Attempt {at['attempt']}{nominated}", style="bold"))
    if at["preFilter"] is not None:
        pf = at["preFilter"]
        console.print(safe_text(f"PreFilter {pf['plugin']} rejected the pod on every node: {', '.join(pf['reasons'])}"))
    if at.get("absentNodes"):
        ab = at["absentNodes"]
        console.print(safe_text(f"PreFilter result of {', '.join(ab['plugins'])} left out {len(ab['nodes'])} node(s) "
                           f"({'; '.join(ab['reasons'])}): {', '.join(ab['nodes'])}"))
    plugins = next((list(n["scores"]) for n in at["nodes"] if n.get("scores")), [])
    t = Table(title=f"Nodes (evaluation order), attempt {at['attempt']}")
    _name_column(t, "node")
    t.add_column("result", overflow="fold")
    for p in plugins:
        t.add_column(p, justify="right", overflow="fold")
    t.add_column("total", justify="right")
    for n in at["nodes"]:
        cells: list[Text | str]
        if n["result"] == "rejected":
            cells = [Text.assemble((plain(n["plugin"]), "red"), plain(": " + "; ".join(n["reasons"])))]
            cells += [""] * len(plugins) + [""]
        else:
            style = {"chosen": "green", "not evaluated": "dim"}.get(n["result"], "")
            scores = n.get("scores") or {}
            cells = [safe_text(n["result"], style=style), *(str(scores.get(p, "")) for p in plugins),
                     "" if n.get("total") is None else str(n["total"])]
        t.add_row(safe_text(n["node"]), *cells)
    console.print(t)
    if at["scorePluginsSkipped"]:
        console.print(safe_text(f"Score plugins skipped: {', '.join(at['scorePluginsSkipped'])}"))
    if at["message"]:
        console.print(safe_text(at["message"]))
    pre = at["preemption"]
    if pre is not None and pre["node"] is not None:
        victims = ", ".join(f"{v['pod']} (priority {v['priority']})" for v in pre["victims"]) or "none"
        console.print(safe_text(f"Preemption: nominated {pre['node']}, evicting {victims}"))
    elif pre is not None and pre["message"]:
        console.print(safe_text(pre["message"]))


def render_preemptions(console: Console, plan: list) -> None:
    if not plan:
        console.print("No preemption: every pod that could be placed fitted without evicting anything.")
        return
    t = Table(title="Preemptions (kube-scheduler DefaultPreemption)")
    _name_column(t, "preemptor")
    t.add_column("priority", justify="right")
    _name_column(t, "node")
    _name_column(t, "victims (priority, PDBs)")
    t.add_column("placed")
    for p in plan:
        victims = "\n".join(f"{v} ({prio}{', ' + ', '.join(pdbs) if pdbs else ''})" for v, prio, pdbs in p.victims)
        t.add_row(safe_text(p.preemptor), str(p.priority), safe_text(p.node), safe_text(victims), "yes" if p.placed else "no")
    console.print(t)


def _key_text(key: tuple | None, n_victims: int) -> str:
    if key is None:
        return "-"
    return f"{key[0]} PDB violations, highest {key[1] if n_victims else '-'}, {key[3]} victim(s)"


def render_minimal_preemption(console: Console, answers: list) -> None:
    """Optimal single-pod preemption: the minimal victims beside kube-scheduler's for the same pod."""
    for a in answers:
        console.print(safe_text(f"{a.preemptor} is treated as the head of the queue: the other pending pods are not "
                           "placed first (kube-scheduler would preempt for it only when its turn comes)."))
        t = Table(title=f"Preemption for {safe(a.preemptor)} (priority {a.priority}"
                        f"{', cross-node' if a.cross_node else ''})")
        for c in ("mode", "node", "victims (priority, node, PDBs)", "key", "status"):
            t.add_column(c, overflow="fold")

        def victims(vs: tuple) -> str:
            return "\n".join(safe(f"{v.pod} ({v.priority}, {v.node}{', ' + ', '.join(v.pdbs) if v.pdbs else ''})")
                             for v in vs) or "-"

        note = a.message if a.status != "OPTIMAL" or not a.victims else ""
        t.add_row("optimal", safe_text(a.node or "-"), victims(a.victims), _key_text(a.key, len(a.victims)),
                  safe(a.status + (f": {note}" if note else "")))
        t.add_row("kube-scheduler", safe_text(a.greedy_node or "-"), victims(a.greedy_victims),
                  _key_text(a.greedy_key, len(a.greedy_victims)), safe(a.greedy_message or ""))
        console.print(t)
        if a.tiers:
            def shown(tier: Any, v: int) -> int | str:  # no victim: no highest priority
                return "-" if tier.name == "highestVictimPriority" and v == -2**31 else v

            console.print("  tiers (objective / bound): " + ", ".join(
                f"{tier.name} {shown(tier, tier.objective)} / {shown(tier, tier.bound)} {tier.status}"
                for tier in a.tiers), highlight=False)
        if a.violations:
            console.print(f"[bold red]the answer fails the greedy filters:[/] {safe(a.message)}")


def render_batch_preemptions(console: Console, plan: list, result: Any) -> None:
    """Optimal batch preemption: per node, the preemptors placed there and who leaves (evicted or moved)."""
    if not plan:
        console.print("No preemption: the optimal batch evicts and moves nothing.")
    else:
        t = Table(title="Preemptions (optimal batch, CP-SAT)")
        for c in ("node", "preemptors placed (priority)", "victims (priority, PDBs)", "outcome"):
            t.add_column(c, overflow="fold")
        for b in plan:
            pre = "\n".join(safe(f"{p} ({prio})") for p, prio in b.preemptors) or "-"
            vs = "\n".join(safe(f"{v} ({prio}{', ' + ', '.join(pdbs) if pdbs else ''})") for v, prio, pdbs, _ in b.victims)
            outcome = "\n".join("evicted" if m is None else f"moved to {safe(m)}" for *_, m in b.victims)
            t.add_row(safe(b.node), pre, vs, outcome)
        console.print(t)
        ev, mv = sum(b.evictions for b in plan), sum(b.moves for b in plan)
        console.print(f"{ev} eviction(s), {mv} move(s) on {len(plan)} node(s)")
    render_optimal_summary(console, result, optimal_summary(result))


def render_budgets(console: Console, budgets: list) -> None:
    """PodDisruptionBudgets a placement uses: allowed, used by moves, broken by preemption."""
    if not budgets:
        return
    t = Table(title="PodDisruptionBudgets used")
    for c in ("budget", "disruptionsAllowed", "moves", "preemption victims", "violated"):
        t.add_column(c, justify="left" if c == "budget" else "right")
    for u in budgets:
        t.add_row(safe(u.name), str(u.allowed), str(u.moves), str(u.victims),
                  f"[red]{u.violated}[/]" if u.violated else "0")
    console.print(t)


def render_landing(console: Console, landing: Any) -> None:
    """How far kube-scheduler's replay after the evictions follows the plan's target."""
    differs = landing.differs
    console.print(f"kube-scheduler's replay after the evictions: {len(landing.target) - len(differs)} of "
                  f"{len(landing.target)} pod(s) land on the plan's node"
                  + (f", {len(landing.preempted)} further preemption(s)" if landing.preempted else ""))
    if differs:
        t = Table(title="Pods kube-scheduler places elsewhere than the plan")
        for c in ("pod", "plan", "kube-scheduler"):
            t.add_column(c)
        for k, (want, got) in list(differs.items())[:50]:
            t.add_row(safe(k), safe(want or "(pending)"), safe(got or "(pending)"))
        console.print(t)
