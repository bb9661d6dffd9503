"""The terminal table of a descheduling cycle and its replay."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .run import DeschedulerOutcome

__all__ = ["render_outcome"]


def render_outcome(console: Console, out: DeschedulerOutcome) -> None:
    """One row per eviction (strategy, from, where the replacement lands), then the totals."""
    t = Table(title="Descheduler evictions, replayed through kube-scheduler", title_justify="left")
    for header in ("pod", "strategy", "from", "lands on"):
        t.add_column(header, overflow="fold")
    loops, gone = set(out.loops), set(out.gone)
    for e in out.evictions:
        where = "gone (no controller)" if e.pod in gone else (e.landed or "pending")
        t.add_row(e.pod, e.strategy, e.node, f"{where} (back where it was)" if e.pod in loops else where)
    if out.evictions:
        console.print(t)
    console.print(f"{len(out.evictions)} eviction(s); {len(out.loops)} landed back on the node they left; "
                  f"{len(out.pending)} replacement(s) left pending; {len(out.gone)} bare pod(s) gone; "
                  f"nodes emptied: {', '.join(out.emptied) or 'none'}", highlight=False)
    console.print(f"a second cycle on the result would evict {len(out.second_cycle)} pod(s)"
                  + (f": {', '.join(e.pod for e in out.second_cycle[:10])}" if out.second_cycle else ""),
                  highlight=False)
