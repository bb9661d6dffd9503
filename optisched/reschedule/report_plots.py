"""The plots of ``reschedule --report`` as matplotlib Figures on the Agg canvas (no display needed),
built as compare's are (:mod:`optisched.comparison.plots`): no pyplot state, names from the input drawn
as typed (no mathtext) with control characters shown escaped (:func:`optisched.textsafe.plain`)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..comparison.plots import MAX_BARS, literal_text
from ..textsafe import plain
from .pareto import ParetoCurve

__all__ = ["plot_node_utilization", "plot_pareto", "plot_waves"]

BEFORE, AFTER, OFF, KNEE = "#9aa5b1", "C0", "C1", "#d62728"
MAX_TIMELINE = 40  # evictions drawn one per row in the timeline; the table lists all


def _figure(rows: int, width: float, height: float) -> tuple[Figure, list]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, list(np.atleast_1d(fig.subplots(rows, 1, squeeze=False).ravel()))


def _empty(ax, text: str) -> None:  # type: ignore[no-untyped-def]
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


@literal_text
def plot_node_utilization(nodes: pd.DataFrame, resources: list[str]) -> Figure:
    """Per resource, each shown node's requested / allocatable before (grey) and after (colour) the
    plan; nodes the plan empties are shaded red and their names marked ``(emptied)``. ``nodes``: the
    report's node table, the nodes to show first (at most :data:`MAX_BARS`)."""
    shown = nodes.head(MAX_BARS)
    fig, axes = _figure(max(1, len(resources)), max(7.0, 0.35 * len(shown) + 3), 2.8 * max(1, len(resources)))
    if shown.empty or not resources:
        _empty(axes[0], "no node offers a resource a pod requests")
        return fig
    x = np.arange(len(shown))
    labels = [plain(n) + ("\n(emptied)" if e else "") for n, e in zip(shown["node"], shown["emptied"])]
    first = int(np.argmax(shown["emptied"].to_numpy())) if shown["emptied"].any() else -1
    for ax, r in zip(axes, resources):
        ax.bar(x - 0.2, shown[f"before:{r}"].fillna(0) * 100, 0.4, color=BEFORE, label="before")
        ax.bar(x + 0.2, shown[f"after:{r}"].fillna(0) * 100, 0.4, color=AFTER, label="after (predicted)")
        for i in np.flatnonzero(shown["emptied"].to_numpy()).tolist():
            ax.axvspan(i - 0.5, i + 0.5, color=KNEE, alpha=0.1, label="emptied by the plan" if i == first else None)
        ax.set_xticks(x, labels, rotation=45 if len(shown) > 8 else 0, ha="right" if len(shown) > 8 else "center",
                      fontsize=8)
        for tick, emptied in zip(ax.get_xticklabels(), shown["emptied"]):
            tick.set_color(KNEE if emptied else "black")
        ax.set_ylabel(f"{plain(r)} requested / allocatable (%)")
        ax.set_ylim(0, max(100.0, float(np.nanmax([shown[f"before:{r}"].max(), shown[f"after:{r}"].max()])) * 105))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    more = f" (first {len(shown)} of {len(nodes)} nodes: those the plan touches first)" if len(nodes) > len(shown) else ""
    axes[0].set_title("Node utilization before and after the plan" + more)
    return fig


def _wave_axis(ax, waves: int) -> None:  # type: ignore[no-untyped-def]
    """Waves 1..``waves`` on the x axis, whole numbers only."""
    ax.set_xlim(0.5, waves + 0.5)
    if waves <= 20:
        ax.set_xticks(range(1, waves + 1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("wave")


def _timeline(ax, waves: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    """One row per eviction: a marker at its wave, blue when the replay lands the replacement on the
    planned node, orange otherwise (its predicted node in the label)."""
    shown = waves.head(MAX_TIMELINE)
    y = np.arange(len(shown))
    on = (shown["predicted"] == shown["planned"]) | (shown["planned"].isna() & (shown["predicted"] != shown["from"]))
    on = on.to_numpy()
    ax.scatter(shown["wave"][on], y[on], color=AFTER, marker="o", label="replacement predicted on the planned node")
    ax.scatter(shown["wave"][~on], y[~on], color=OFF, marker="X", label="replacement predicted elsewhere")
    labels = [f"{plain(p)}: {plain(f)} → {_node(t)}" + ("" if ok else f" (predicted {_node(d)})")
              for p, f, t, d, ok in zip(shown["pod"], shown["from"], shown["planned"], shown["predicted"], on)]
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    _wave_axis(ax, int(waves["wave"].max()))
    more = f" (first {len(shown)} of {len(waves)})" if len(waves) > len(shown) else ""
    ax.set_title("Evictions: pod, from → planned node, at its wave" + more)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _node(name: object) -> str:
    return plain(name) if isinstance(name, str) else "(none)"


def _budget_use(ax, budgets: pd.DataFrame) -> None:  # type: ignore[no-untyped-def]
    """Per PodDisruptionBudget, its evictions per wave against its disruptionsAllowed (dashed)."""
    names = list(dict.fromkeys(budgets["budget"]))[:8]
    waves = sorted(set(budgets["wave"]))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        rows = budgets[budgets["budget"] == name].set_index("wave")
        used = [int(rows["used"].get(w, 0)) for w in waves]
        ax.bar(np.array(waves) + (i - (len(names) - 1) / 2) * width, used, width, color=f"C{i % 10}",
               label=plain(name))
        ax.axhline(int(rows["disruptionsAllowed"].iloc[0]), color=f"C{i % 10}", linestyle="--", linewidth=1)
    _wave_axis(ax, int(max(waves)))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("evictions counted")
    ax.set_title("PodDisruptionBudget use per wave (dashed: disruptionsAllowed)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


@literal_text
def plot_waves(waves: pd.DataFrame, budgets: pd.DataFrame) -> Figure:
    """The plan as a timeline: evictions per wave, each PodDisruptionBudget's use per wave (when a
    budget covers an eviction) and each eviction (pod, from, planned node, predicted) at its wave.
    ``waves``: ``ReschedulePlan.waves_frame()`` with the target's node as ``planned``; ``budgets``:
    rows of wave, budget, used, disruptionsAllowed."""
    rows = min(len(waves), MAX_TIMELINE)
    panels = 3 if len(budgets) else 2
    fig, axes = _figure(panels, 10, 2.4 * (panels - 1) + max(1.5, 0.22 * rows + 0.8))
    if waves.empty:
        _empty(axes[0], "no eviction: the input already meets the goal, or no move is allowed")
        for ax in axes[1:]:
            ax.set_axis_off()
        return fig
    counts = waves.groupby("wave").size()
    axes[0].bar(counts.index, counts.to_numpy(), 0.6, color=AFTER)
    _wave_axis(axes[0], int(waves["wave"].max()))
    axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("evictions")
    axes[0].set_title("Evictions per wave (the next starts once these replacements are scheduled)"
                      + ("" if len(budgets) else "; no PodDisruptionBudget covers them"))
    if len(budgets):
        _budget_use(axes[1], budgets)
    _timeline(axes[-1], waves)
    return fig


@literal_text
def plot_pareto(curve: ParetoCurve) -> Figure:
    """The goal's value (solid) and the proved bound (dashed) against the moves each budget's target
    makes; the knee is the red star."""
    fig, (ax,) = _figure(1, 8, 4)
    x = [p.moves for p in curve.points]
    ax.plot(x, [p.value for p in curve.points], marker="o", color=AFTER, label="goal value")
    ax.plot(x, [p.bound for p in curve.points], linestyle="--", color=BEFORE, label="bound proved")
    for p in curve.points:
        ax.annotate("plan" if p.budget is None else f"budget {p.budget}", (p.moves, p.value), textcoords="offset points",
                    xytext=(4, 6), fontsize=8)
    if curve.knee is not None:
        k = curve.points[curve.knee]
        ax.scatter([k.moves], [k.value], marker="*", s=260, color=KNEE, zorder=3, label="knee")
    ax.margins(x=0.1, y=0.15)  # room for the labels at the ends
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("moves (evictions)")
    ax.set_ylabel(f"{plain(curve.goal)} ({curve.sense}imized)")
    ax.set_title("The goal against the moves allowed (labels: the move budget)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig
