"""A comparison in the terminal: the summary side by side, then the pods placed differently."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from ..textsafe import safe
from .compare import Comparison
from .tables import format_value, tier_definitions

__all__ = ["render_comparison"]

MAX_POD_ROWS = 30


def _cell(v: Any) -> str:
    return format_value("text", v)


def render_comparison(console: Console, c: Comparison, max_pod_rows: int = MAX_POD_ROWS) -> None:
    """Print the summary (one column per run; a value that differs from the first run's is bold) and the
    first rows of the per-pod diff."""
    t = Table(title=f"Comparison of {len(c.runs)} runs ({len(c.state.pending)} pending pods, "
                    f"{c.state.num_nodes} nodes)")
    t.add_column("metric")
    for r in c.runs:
        t.add_column(safe(r.name), justify="right")
    for metric, row in c.summary.iterrows():
        kind = c.formats.get(str(metric), "text")
        cells = [safe(format_value(kind, v)) for v in row.tolist()]
        marked = [cells[0]] + [f"[bold]{x}[/]" if x != cells[0] else x for x in cells[1:]]
        t.add_row(safe(str(metric)), *marked)
    console.print(t)
    for term, what in tier_definitions(c.runs):
        console.print(f"  {safe(term)}: {safe(what)}")
    _render_budgets(console, c)
    if c.pods.empty:
        console.print("Every run places every pod as the first run does.")
        return
    first = c.runs[0].name
    p = Table(title=f"Pods placed differently from {safe(first)}")
    cols = ["pod", "priority", *(f"node:{r.name}" for r in c.runs), "change", f"reason:{first}"]
    for col in cols:
        p.add_column(safe(col.removeprefix("node:")), overflow="fold")
    for _, rec in c.pods.head(max_pod_rows).iterrows():
        p.add_row(*(safe(_cell(rec[col])) for col in cols))
    if len(c.pods) > max_pod_rows:
        p.caption = f"first {max_pod_rows} of {len(c.pods)}; the report's pods.csv lists all"
    console.print(p)


def _render_budgets(console: Console, c: Comparison) -> None:
    """Per run and budget: disruptionsAllowed, moves (Eviction API) and preemption victims, violations."""
    rows = [(r.name, u) for r in c.runs for u in r.budget_rows(c.state)]
    if not rows:
        return
    t = Table(title="PodDisruptionBudgets used")
    for col in ("run", "budget", "disruptionsAllowed", "moves", "preemption victims", "violated"):
        t.add_column(col, justify="left" if col in ("run", "budget") else "right")
    for name, u in rows:
        t.add_row(safe(name), safe(u["budget"]), str(u["disruptionsAllowed"]), str(u["moves"]), str(u["victims"]),
                  f"[red]{u['violated']}[/]" if u["violated"] else "0")
    console.print(t)
