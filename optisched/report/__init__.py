"""``write_report``: a comparison written to a folder for people and for tools.

``report.html`` (self-contained: opens from disk, plots embedded), the plots as PNG files,
``summary.json`` (the summary and each run's facts), ``pods.csv`` (the per-pod diff), ``nodes.csv``
(one row per run and node) and ``spread.csv`` (the skew of every topology spread constraint per run).

The folder keeps a manifest, ``.optisched-report``, of the files written there. A later report may
overwrite those, and nothing else: a folder holding a file of one of the report's names that the manifest
does not list (a user's own ``nodes.csv``) is refused before the run (:func:`check_report_dir`). Nothing is
ever deleted. CSV files quote every field and neutralize formula-leading cells.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..textsafe import csv_cell
from .html import render_html

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ..comparison.compare import Comparison

__all__ = ["REPORT_FILES", "check_report_dir", "claim_report_dir", "csv_file", "png_bytes", "write_report"]

DPI = 100
MANIFEST = ".optisched-report"
REPORT_FILES = ("report.html", "summary.json", "pods.csv", "nodes.csv", "spread.csv", "placed-by-priority.png",
                "utilization.png", "fragmentation.png", "devices.png", "spread.png", "budgets.png")


def _owned(out: Path) -> set[str]:
    """The file names an earlier report wrote in ``out`` (from its manifest)."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return {str(f) for f in manifest["files"]} if manifest.get("writtenBy") == "optisched" else set()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def check_report_dir(out_dir: str | Path, files: tuple[str, ...] = REPORT_FILES) -> None:
    """Refuse a report folder holding files of the report's names (``files``; compare's by default)
    that optisched did not write there."""
    out = Path(out_dir)
    if not out.is_dir():
        return
    foreign = [n for n in (MANIFEST, *files) if (out / n).exists() or (out / n).is_symlink()]
    if (out / MANIFEST).exists() and _owned(out):
        foreign = [n for n in foreign if n != MANIFEST and n not in _owned(out)]
    if foreign:
        raise InputError(f"the folder holds {', '.join(foreign)}, not written by an earlier report; "
                         "give an empty or new folder (nothing is overwritten)", source="--report")


def claim_report_dir(out: Path, names: list[str]) -> None:
    """Create ``out`` and list ``names`` in its manifest beside what earlier reports wrote there; first,
    so a report interrupted half-way can be written again in its folder."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"writtenBy": "optisched", "files": sorted(set(names) | _owned(out))}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def csv_file(frame: pd.DataFrame, path: Path) -> None:
    """Every field quoted; text cells that a spreadsheet would run as a formula get a leading '."""
    safe = frame.copy()
    for col in safe.columns[safe.dtypes == object]:
        safe[col] = safe[col].map(csv_cell)
    safe.to_csv(path, index=False, quoting=csv.QUOTE_ALL)


def png_bytes(fig: Figure) -> bytes:
    from matplotlib import rc_context

    buf = io.BytesIO()
    with rc_context({"text.parse_math": False}):  # tick labels are made while drawing: names as typed
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
    if c.devices:
        plots["DRA devices"] = ("devices.png", c.plot_devices(),
                                ("Per node publishing DRA devices (ResourceSlices of its own): devices some "
                                 "claim holds (solid), free ones a pending pod's claims can be allocated on "
                                 "(light) and stranded ones (hatched: free, and no pod left pending with "
                                 "claims fits there)."))
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
    """Write the report files into ``out_dir`` (created if missing); returns file name -> path.

    The manifest is written first, so a report interrupted half-way can be written again in its folder.
    """
    out = Path(out_dir)
    check_report_dir(out)
    plots = _plots(comparison)
    names = [name for name, _, _ in plots.values()] + ["summary.json", "pods.csv", "nodes.csv", "spread.csv",
                                                       "report.html"]
    claim_report_dir(out, names)
    written: dict[str, Path] = {}
    pngs: dict[str, tuple[bytes, str]] = {}
    for title, (name, fig, caption) in plots.items():
        data = png_bytes(fig)
        (out / name).write_bytes(data)
        written[name] = out / name
        pngs[title] = (data, caption)
    (out / "summary.json").write_text(json.dumps(comparison.to_json(), indent=1) + "\n", encoding="utf-8")
    csv_file(comparison.pods, out / "pods.csv")
    csv_file(comparison.nodes, out / "nodes.csv")
    csv_file(comparison.spread_skews, out / "spread.csv")
    for name in ("summary.json", "pods.csv", "nodes.csv", "spread.csv"):
        written[name] = out / name
    page = render_html(comparison, pngs, list(written))
    (out / "report.html").write_text(page, encoding="utf-8")
    written["report.html"] = out / "report.html"
    return written
