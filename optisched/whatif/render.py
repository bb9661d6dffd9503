"""The terminal table of a node-pressure what-if."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..model.quantity import human_quantity
from .pressure import PressureOutcome

__all__ = ["render_pressure"]


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
