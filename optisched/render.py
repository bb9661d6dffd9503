"""Rich rendering of summaries, schedules and explanations for the terminal."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from .model.quantity import format_quantity
from .textsafe import safe

__all__ = ["progress_bar", "render_explain", "render_inspect", "render_optimal_summary", "render_schedule_summary",
           "solver_status"]


@contextmanager
def progress_bar(console: Console, label: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (hidden when not a terminal); yields ``advance(done, total)``."""
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as prog:
        task = prog.add_task(label, total=total)
        last = [0]

        def advance(done: int, of: int) -> None:
            if done - last[0] >= 50 or done == of:
                prog.update(task, completed=done, total=max(of, done))
                last[0] = done

        yield advance


def _amount(resource: str, v: int) -> str:
    return format_quantity(resource, v)


def render_inspect(console: Console, s: dict[str, Any]) -> None:
    n = s["nodes"]
    t = Table(title=f"Nodes: {n['total']} ({n['unschedulable']} unschedulable)")
    t.add_column("zone")
    t.add_column("nodes", justify="right")
    for z, c in n["byZone"].items():
        t.add_row(safe(z), str(c))
    console.print(t)
    t = Table(title="Node shapes (allocatable)")
    for c in ("cpu", "memory", "nodes"):
        t.add_column(c, justify="right")
    for sh in n["byShape"]:
        t.add_row(sh["cpu"], sh["memory"], str(sh["count"]))
    console.print(t)
    p = s["pods"]
    t = Table(title=f"Pods: {p['total']} ({p['bound']} bound, {p['pending']} pending)")
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
        t.add_row(safe(r["resource"]), _amount(r["resource"], r["allocatable"]), _amount(r["resource"], r["requestedBound"]),
                  _amount(r["resource"], r["requestedPending"]), pct)
    console.print(t)
    if s["pdbs"]:
        t = Table(title="PodDisruptionBudgets")
        for c in ("pdb", "pods", "healthy", "desired", "disruptions allowed"):
            t.add_column(c)
        for b in s["pdbs"]:
            t.add_row(safe(b["pdb"]), str(b["pods"]), str(b["currentHealthy"]), str(b["desiredHealthy"]),
                      str(b["disruptionsAllowed"]))
        console.print(t)
    if s["pendingPods"]:
        t = Table(title="Pending pods (effective requests)")
        for c in ("pod", "priority", "requests"):
            t.add_column(c)
        for pp in s["pendingPods"][:200]:
            req = ", ".join(safe(f"{k}={_amount(k, v)}") for k, v in pp["requests"].items())
            t.add_row(safe(pp["pod"]), str(pp["priority"]), req)
        if len(s["pendingPods"]) > 200:
            t.caption = f"first 200 of {len(s['pendingPods'])}; --json lists all"
        console.print(t)
    prof = s["profile"]
    console.print(f"Profile [bold]{safe(prof['schedulerName'])}[/] from {safe(prof['source'])}; percentageOfNodesToScore "
                  f"{prof['percentageOfNodesToScore']}; weights {safe(prof['scoreWeights'])}")
    if prof["notModelled"]:
        console.print(f"Not modelled (accepted, no effect): {safe(', '.join(prof['notModelled']))}")
    if s["skippedKinds"]:
        console.print("Skipped kinds: " + ", ".join(safe(f"{k} ×{v}") for k, v in s["skippedKinds"].items()))
    for w in s["warnings"]:
        console.print(f"[yellow]warning:[/] {safe(w)}", highlight=False)


def render_schedule_summary(console: Console, result: Any) -> None:
    """Greedy mode's summary: counts, unschedulable pods with their FitError, utilization."""
    _render_placement(console, result.state, result.snapshot.node_of, result.unschedulable, result.skipped,
                      "Greedy placement (kube-scheduler v1.35.4)")


def render_optimal_summary(console: Console, result: Any) -> None:
    """Optimal mode's summary: the same tables as greedy mode, then the certificate."""
    _render_placement(console, result.state, result.node_of, result.unschedulable, result.batch.skipped,
                      "Optimal batch placement (CP-SAT)")
    cert = result.certificate
    t = Table(title=f"Certificate: {cert.status} ({cert.seconds:.1f} s, answer from the {cert.source})")
    for c in ("tier", "objective", "bound", "gap", "greedy", "status", "s"):
        t.add_column(c, justify="left" if c in ("tier", "status") else "right")
    for tier in cert.tiers:
        name = tier.name if tier.fidelity == "EXACT" else f"{tier.name} ({tier.fidelity.lower()})"
        t.add_row(safe(name), str(tier.objective), str(tier.bound), f"{100 * tier.gap:.2f}%",
                  "" if tier.greedy is None else str(tier.greedy), tier.status, f"{tier.seconds:.1f}")
    console.print(t)
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
    for note in cert.notes:
        console.print(f"note: {safe(note)}")
    if result.violations:
        console.print(f"[bold red]{len(result.violations)} placement(s) fail the greedy filters:[/]")
        for v in result.violations[:20]:
            console.print(f"  {safe(str(v))}")


def _render_placement(console: Console, state: Any, node_of: np.ndarray, un: dict, skipped: dict, title: str) -> None:
    pending = state.pending
    placed = int(np.count_nonzero(node_of[pending] >= 0)) if len(pending) else 0
    t = Table(title=title)
    for c in ("pending", "scheduled", "unschedulable", "not handled"):
        t.add_column(c, justify="right")
    t.add_row(str(len(pending)), str(placed), str(len(un)), str(len(skipped)))
    console.print(t)
    if un:
        t = Table(title="Unschedulable pods")
        t.add_column("pod")
        t.add_column("priority", justify="right")
        t.add_column("reason")
        for p, msg in list(un.items())[:50]:
            t.add_row(safe(state.pods[p].key), str(int(state.pod_priority[p])), safe(msg))
        console.print(t)
    requested = np.zeros_like(state.allocatable)
    on = node_of >= 0
    np.add.at(requested, node_of[on], state.pod_requests[on])
    t = Table(title="Utilization (requested / allocatable)")
    for c in ("resource", "requested", "allocatable", "%", "max node %"):
        t.add_column(c, justify="right")
    for j, r in enumerate(state.resources):
        alloc = state.allocatable[:, j]
        if not alloc.any():
            continue
        req = requested[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(alloc > 0, req / np.maximum(alloc, 1), 0)
        t.add_row(safe(r), _amount(r, int(req.sum())), _amount(r, int(alloc.sum())), f"{100 * req.sum() / alloc.sum():.1f}",
                  f"{100 * per.max():.1f}")
    console.print(t)


@contextmanager
def solver_status(console: Console) -> Iterator[Callable[[str, float | None, float | None, float], None]]:
    """A live line on stderr while optimal mode runs: phase or tier, incumbent, bound, gap, elapsed."""
    from .optimal.tiers import relative_gap  # (CP-SAT is loaded only when optimal mode runs)

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True, disable=not console.is_terminal) as prog:
        task = prog.add_task("starting", total=None)

        def update(name: str, incumbent: float | None, bound: float | None, elapsed: float) -> None:
            text = name
            if incumbent is not None and bound is not None:
                gap = relative_gap(incumbent, bound)
                text = f"{name}: incumbent {incumbent:.0f}, bound {bound:.0f}, gap {100 * gap:.2f}%"
            prog.update(task, description=safe(text))

        yield update


def render_explain(console: Console, result: Any, rec: Any) -> None:
    state = result.state
    names = state.node_names
    pod = state.pods[rec.pod]
    console.print(f"[bold]{safe(pod.key)}[/] priority {int(state.pod_priority[rec.pod])}, attempt {rec.attempt}")
    if rec.pre_filter is not None:
        st, plugin = rec.pre_filter
        console.print(f"PreFilter {safe(plugin)} rejected the pod on every node: {safe(', '.join(st.reasons))}")
    fp, sp = rec.filters, rec.scores
    t = Table(title="Nodes (evaluation order)")
    t.add_column("node")
    t.add_column("result")
    plugins = list(sp.weighted) if sp is not None else []
    for p in plugins:
        t.add_column(safe(p), justify="right")
    t.add_column("total", justify="right")
    scored = {int(n): i for i, n in enumerate(sp.nodes)} if sp is not None else {}
    seen = set()
    if fp is not None:
        for pos, n in enumerate(fp.evaluated):
            n = int(n)
            seen.add(n)
            if fp.passed[pos]:
                i = scored.get(n)
                cells = [str(int(sp.weighted[p][i])) for p in plugins] if i is not None else [""] * len(plugins)
                total = str(int(sp.total[i])) if i is not None else ""
                mark = "[green]chosen[/]" if n == rec.chosen else "feasible"
                t.add_row(safe(names[n]), mark, *cells, total)
            else:
                plugin = fp.plugin_names[int(fp.fail_plugin[pos])]
                why = f"[red]{safe(plugin)}[/]: " + safe("; ".join(fp.reasons_at(pos)))
                t.add_row(safe(names[n]), why, *[""] * len(plugins), "")
    for n in result.node_order:
        if int(n) not in seen and rec.pre_filter is None:
            t.add_row(safe(names[int(n)]), "[dim]not evaluated[/]", *[""] * len(plugins), "")
    console.print(t)
    if sp is not None and sp.skipped:
        console.print(f"Score plugins skipped: {safe(', '.join(sp.skipped))}")
    if rec.message:
        console.print(safe(rec.message), highlight=False)


def render_preemptions(console: Console, plan: list) -> None:
    if not plan:
        console.print("No preemption: every pod that could be placed fitted without evicting anything.")
        return
    t = Table(title="Preemptions (kube-scheduler DefaultPreemption)")
    for c in ("preemptor", "priority", "node", "victims (priority, PDBs)", "placed"):
        t.add_column(c)
    for p in plan:
        victims = "\n".join(safe(f"{v} ({prio}{', ' + ', '.join(pdbs) if pdbs else ''})") for v, prio, pdbs in p.victims)
        t.add_row(safe(p.preemptor), str(p.priority), safe(p.node), victims, "yes" if p.placed else "no")
    console.print(t)


def _key_text(key: tuple | None, n_victims: int) -> str:
    if key is None:
        return "-"
    return f"{key[0]} PDB violations, highest {key[1] if n_victims else '-'}, {key[3]} victim(s)"


def render_minimal_preemption(console: Console, answers: list) -> None:
    """Optimal single-pod preemption: the minimal victims beside kube-scheduler's for the same pod."""
    for a in answers:
        t = Table(title=f"Preemption for {safe(a.preemptor)} (priority {a.priority}"
                        f"{', cross-node' if a.cross_node else ''})")
        for c in ("mode", "node", "victims (priority, node, PDBs)", "key", "status"):
            t.add_column(c)

        def victims(vs: tuple) -> str:
            return "\n".join(safe(f"{v.pod} ({v.priority}, {v.node}{', ' + ', '.join(v.pdbs) if v.pdbs else ''})")
                             for v in vs) or "-"

        note = a.message if a.status != "OPTIMAL" or not a.victims else ""
        t.add_row("optimal", safe(a.node or "-"), victims(a.victims), _key_text(a.key, len(a.victims)),
                  safe(a.status + (f": {note}" if note else "")))
        t.add_row("kube-scheduler", safe(a.greedy_node or "-"), victims(a.greedy_victims),
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
            t.add_column(c)
        for b in plan:
            pre = "\n".join(safe(f"{p} ({prio})") for p, prio in b.preemptors) or "-"
            vs = "\n".join(safe(f"{v} ({prio}{', ' + ', '.join(pdbs) if pdbs else ''})") for v, prio, pdbs, _ in b.victims)
            outcome = "\n".join("evicted" if m is None else f"moved to {safe(m)}" for *_, m in b.victims)
            t.add_row(safe(b.node), pre, vs, outcome)
        console.print(t)
        ev, mv = sum(b.evictions for b in plan), sum(b.moves for b in plan)
        console.print(f"{ev} eviction(s), {mv} move(s) on {len(plan)} node(s)")
    render_optimal_summary(console, result)
