"""The terminal table of a node-pressure what-if."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..model.quantity import human_quantity
from ..textsafe import safe_text
from .drain import DrainOutcome
from .failure import FailureOutcome
from .pressure import PressureOutcome
from .taint import TaintOutcome

__all__ = ["render_drain", "render_failure", "render_pressure", "render_taint"]


def render_pressure(console: Console, out: PressureOutcome) -> None:
    """One row per node under pressure, then one per evicted pod with where its replacement lands."""
    if not out.nodes:
        console.print("no node is under memory or disk pressure with this usage and these thresholds",
                      highlight=False)
        return
    t = Table(title="Nodes under pressure (kubelet node-pressure eviction)", title_justify="left")
    for h in ("node", "signal", "available", "threshold", "evicts until", "evicted pods"):
        t.add_column(h, overflow="fold")
    for n in out.nodes:
        t.add_row(n.node, n.signal, human_quantity("memory", n.available), human_quantity("memory", n.threshold),
                  human_quantity("memory", n.goal), ", ".join(n.evicted) or "none (only critical pods)")
    console.print(t)
    for pod, node in out.landed.items():
        console.print(f"{pod}: replacement lands on {node or 'nothing (pending, or no controller re-creates it)'}",
                      highlight=False)


def render_drain(console: Console, out: DrainOutcome) -> None:
    """Per node whether it drains and in how many waves, each wave's evictions with kube-scheduler's
    predicted landing (and optisched's best target when computed), then what blocks, the optimal side and
    the largest drainable set."""
    for n, info in out.per_node().items():
        console.print(safe_text(f"{n}: {'drains' if info['drains'] else 'does not drain'} "
                                f"({info['waves']} wave(s))"), highlight=False)
    target = out.optimal.placements if out.optimal is not None else None
    for i, wave in enumerate(out.waves, start=1):
        t = Table(title=f"wave {i}", title_justify="left")
        for h in ("pod", "from", "kube-scheduler puts it on", *(("optimal",) if target is not None else ())):
            t.add_column(h, overflow="fold")
        for e in wave:
            extra = (target.get(e["pod"]) or "pending",) if target is not None else ()
            t.add_row(*(safe_text(x) for x in (e["pod"], e["from"], e["predicted"] or "pending", *extra)))
        console.print(t)
    for b in out.blocked:
        console.print(safe_text(f"blocked: {b['pod']} on {b['node']}: {b['reason']}"), highlight=False)
    for s in out.skipped:
        console.print(safe_text(f"skipped: {s['pod']}: {s['reason']}"), highlight=False)
    for line in (out.optimal.lines() if out.optimal is not None else []) + \
            (out.largest.lines() if out.largest is not None else []):
        console.print(safe_text(line), highlight=False)


def render_taint(console: Console, out: TaintOutcome) -> None:
    """The deletions over time, where each replacement lands, and the budgets broken."""
    if not out.timeline:
        console.print("no pod is deleted: every pod tolerates the taint without a time limit", highlight=False)
    for seconds, pods in sorted(out.timeline.items()):
        console.print(f"after {seconds}s: {', '.join(pods)} deleted", highlight=False)
    for pod, node in out.landed.items():
        best = f" (optimal: {out.optimal.get(pod) or 'pending'})" if pod in out.optimal else ""
        console.print(safe_text(f"{pod}: replacement lands on "
                                f"{node or 'nothing (pending, or no controller re-creates it)'}{best}"), highlight=False)
    for pdb, n in out.broken_budgets.items():
        console.print(safe_text(f"PodDisruptionBudget {pdb}: {n} disruption(s) beyond what it allows"),
                      highlight=False)


def render_failure(console: Console, out: FailureOutcome) -> None:
    """What the failure deletes and when, where the replacements land, what stays pending and why, the
    budgets broken and the capacity left."""
    console.print(safe_text(f"failed: {', '.join(out.failed)}"), highlight=False)
    for seconds, pods in sorted(out.timeline.items()):
        console.print(safe_text(f"after {seconds}s: {', '.join(pods)} deleted"), highlight=False)
    for pod, node in out.landed.items():
        best = f" (optimal: {out.optimal.get(pod) or 'pending'})" if out.optimal else ""
        console.print(safe_text(f"{pod}: replacement lands on {node or 'nothing (pending)'}{best}"), highlight=False)
    for pod in out.lost:
        console.print(safe_text(f"{pod}: lost (no controller re-creates it)"), highlight=False)
    for pod, why in out.pending.items():
        console.print(safe_text(f"pending {pod}: {why}"), highlight=False)
    for pod, cons in out.blocking_spread.items():
        console.print(safe_text(f"spread constraint blocking {pod}: {'; '.join(cons)}"), highlight=False)
    for pdb, n in out.broken_budgets.items():
        console.print(safe_text(f"PodDisruptionBudget {pdb}: {n} disruption(s) beyond what it allows"),
                      highlight=False)
    t = Table(title="Capacity left on the surviving nodes", title_justify="left")
    for h in ("resource", "allocatable", "requested", "free"):
        t.add_column(h)
    for r, c in out.capacity.items():
        t.add_row(r, *(human_quantity(r, c[k]) for k in ("allocatable", "requested", "free")))
    console.print(t)
