"""``write_report``: a comparison written to a folder for people and for tools.

``report.html`` (self-contained: opens from disk, plots embedded), the plots as PNG files,
``summary.json`` (the summary and each run's facts), ``pods.csv`` (the per-pod diff), ``nodes.csv``
(one row per run and node) and ``spread.csv`` (the skew of every topology spread constraint per run).
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from .html import render_html

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..experiments.compare import Comparison

__all__ = ["write_report"]

DPI = 100


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _plots(c: Comparison) -> dict[str, tuple[str, Figure, str]]:
    """Section title -> (file name, figure, caption), in page order."""
    plots = {
        "Pending pods placed, by priority": ("placed-by-priority.png", c.plot_placed_by_priority(),
                                             ("Grey: pods pending in the input at each priority; coloured: "
                                             "how many each run places.")),
        "Node utilization": ("utilization.png", c.plot_utilization(),
                             "Per resource, every node's requested / allocatable, fullest node first, per run."),
        "Free capacity and fragmentation": ("fragmentation.png", c.plot_fragmentation(),
                                            ("Free capacity per node; hatched: the part no pending pod shape "
                                            "can use (fragmented).")),
    }
    if c.spread:
        plots["Topology spread"] = ("spread.png", c.plot_spread(),
                                    ("Matching pods per topology domain for the pods' spread constraints, worst "
                                    "skew first."))
    if any(r.budget_rows(c.state) for r in c.runs):
        plots["PodDisruptionBudgets used"] = ("budgets.png", c.plot_budgets(),
                                              ("Per budget a run touches: moves (solid, through the Eviction API, "
                                               "never past the tick) and preemption victims (hatched) against "
                                               "disruptionsAllowed (black tick)."))
    return plots


def write_report(comparison: Comparison, out_dir: str | Path) -> dict[str, Path]:
    """Write the report files into ``out_dir`` (created if missing); returns file name -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    pngs: dict[str, tuple[bytes, str]] = {}
    for title, (name, fig, caption) in _plots(comparison).items():
        data = _png(fig)
        (out / name).write_bytes(data)
        written[name] = out / name
        pngs[title] = (data, caption)
    (out / "summary.json").write_text(json.dumps(comparison.to_json(), indent=1) + "\n", encoding="utf-8")
    comparison.pods.to_csv(out / "pods.csv", index=False)
    comparison.nodes.to_csv(out / "nodes.csv", index=False)
    comparison.spread_skews.to_csv(out / "spread.csv", index=False)
    for name in ("summary.json", "pods.csv", "nodes.csv", "spread.csv"):
        written[name] = out / name
    page = render_html(comparison, pngs, list(written))
    (out / "report.html").write_text(page, encoding="utf-8")
    written["report.html"] = out / "report.html"
    return written
