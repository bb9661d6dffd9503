"""Plots of a comparison as matplotlib Figures, drawn on the Agg canvas (no display needed).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so no global figure state is
kept and nothing needs closing. Each run keeps one colour across every plot. The plots read a
:class:`~optisched.comparison.compare.Comparison` through the :class:`Compared` protocol, so this
module sits below the one whose ``plot_*`` methods call it.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, Protocol

import numpy as np
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .. import metrics as m
from .tables import format_value, shown_resources

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from ..model.state import ClusterState
    from .runs import PlacementRun

__all__ = ["Compared", "plot_budgets", "plot_devices", "plot_fragmentation", "plot_placed_by_priority",
           "plot_spread",
           "plot_utilization"]

P = ParamSpec("P")
MAX_BARS = 40  # per-node bar plots show at most this many nodes
MAX_SPREAD_PANELS = 6


def literal_text(plot: Callable[P, Figure]) -> Callable[P, Figure]:
    """Draw names from the input as typed: ``$...$`` in a zone or resource name is not parsed as
    mathtext (a malformed formula would raise while the figure is drawn)."""
    @functools.wraps(plot)
    def drawn(*args: P.args, **kwargs: P.kwargs) -> Figure:
        with rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)

    return drawn


class Compared(Protocol):
    """What the plots read of a comparison (``Comparison`` has these fields)."""

    state: ClusterState
    runs: list[PlacementRun]
    workload: m.Workload
    spread: list[m.SpreadDomains]
    spread_skews: pd.DataFrame
    devices: dict[str, m.DeviceUsage]
    device_fragmentation: dict[str, m.GpuFragmentation]


def _figure(rows: int, cols: int, width: float, height: float) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False).ravel())
    return fig, axes


def _colour(i: int) -> str:
    return f"C{i % 10}"


def _group_offsets(k: int, width: float = 0.8) -> tuple[np.ndarray, float]:
    bar = width / max(k, 1)
    return (np.arange(k) - (k - 1) / 2) * bar, bar


def _legend(ax: Axes) -> None:
    """Outside the plot, on the right, so no bar is hidden."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _per_resource(state: ClusterState, width: float, row_height: float
                  ) -> tuple[Figure, np.ndarray, list[str]]:
    """A figure with one row per resource shown, or one row saying no schedulable node offers any (then
    no resource is returned, so the caller draws nothing more)."""
    shown = shown_resources(state)
    fig, axes = _figure(len(shown) or 1, 1, width, row_height * max(len(shown), 1))
    if not shown:
        _empty(axes[0], "no schedulable node offers any resource")
    return fig, axes, shown


@literal_text
def plot_utilization(c: Compared) -> Figure:
    """Per resource, each run's per-node utilization sorted from the fullest node down: packing shows
    as a few full nodes and a tail of empty ones, spreading as a flat line."""
    state = c.state
    fig, axes, shown = _per_resource(state, 9, 2.6)
    ok = ~state.unschedulable
    for ax, res in zip(axes, shown):
        j = state.resource_col(res)
        offers = ok & (state.allocatable[:, j] > 0)
        n = int(offers.sum())
        offsets, bar = _group_offsets(len(c.runs))
        for i, run in enumerate(c.runs):
            util = np.sort(m.utilization(state, run.node_of)[offers, j])[::-1] * 100
            x = np.arange(1, n + 1)
            if n <= MAX_BARS:
                ax.bar(x + offsets[i], util, bar, color=_colour(i), label=run.name)
            else:
                ax.step(x, util, where="mid", color=_colour(i), label=run.name)
        ax.set_title(f"{res}: requested / allocatable per node ({n} nodes, fullest first)")
        ax.set_ylabel("utilization %")
        ax.set_xlabel("node rank")
        ax.set_ylim(0, 105)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _legend(ax)
    return fig


@literal_text
def plot_placed_by_priority(c: Compared) -> Figure:
    """Pending pods placed by each run per priority level, against how many were pending."""
    state = c.state
    pending = np.asarray(state.pending, dtype=np.int64)
    fig, axes = _figure(1, 1, 8, 3.6)
    ax = axes[0]
    if not len(pending):
        _empty(ax, "no pending pods in the input")
        return fig
    prios = state.pod_priority[pending]
    levels = sorted(set(prios.tolist()), reverse=True)
    x = np.arange(len(levels))
    totals = [int(np.count_nonzero(prios == p)) for p in levels]
    ax.bar(x, totals, 0.9, color="#eeeeee", edgecolor="#999999", label="pending in the input")
    offsets, bar = _group_offsets(len(c.runs))
    for i, run in enumerate(c.runs):
        placed = [int(np.count_nonzero(run.node_of[pending[prios == p]] >= 0)) for p in levels]
        bars = ax.bar(x + offsets[i], placed, bar, color=_colour(i), label=run.name)
        ax.bar_label(bars, fontsize=8)
    ax.set_xticks(x, [f"{p}\n({t} pending)" for p, t in zip(levels, totals)])
    ax.set_xlabel("priority")
    ax.set_ylabel("pods placed")
    ax.set_title("Pending pods placed, by priority")
    ax.set_ylim(0, max(totals) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend(ax)
    return fig


def _frag_nodes(c: Compared, j: int) -> np.ndarray:
    """Schedulable nodes offering the resource; beyond MAX_BARS, those with the most free in any run."""
    state = c.state
    nodes = np.flatnonzero(~state.unschedulable & (state.allocatable[:, j] > 0))
    if len(nodes) <= MAX_BARS:
        return nodes
    most = np.max([m.free_capacity(state, r.node_of)[nodes, j] for r in c.runs], axis=0)
    return np.sort(nodes[np.argsort(-most, kind="stable")[:MAX_BARS]])


@literal_text
def plot_fragmentation(c: Compared) -> Figure:
    """Per resource and node, each run's free capacity split into what some workload shape can use
    (solid) and what none can (hatched): fragmentation as defined in :mod:`optisched.metrics`."""
    state = c.state
    fig, axes, shown = _per_resource(state, 10, 2.8)
    for ax, res in zip(axes, shown):
        j = state.resource_col(res)
        nodes = _frag_nodes(c, j)
        x = np.arange(len(nodes))
        offsets, bar = _group_offsets(len(c.runs))
        scale, unit = _unit(res)
        shares = []
        for i, run in enumerate(c.runs):
            free = m.free_capacity(state, run.node_of)[nodes, j] / scale
            frag = m.fragmented_free(state, run.node_of, c.workload)[nodes, j] / scale
            ax.bar(x + offsets[i], free - frag, bar, color=_colour(i), label=f"{run.name}: usable")
            ax.bar(x + offsets[i], frag, bar, bottom=free - frag, color="white", edgecolor=_colour(i),
                   hatch="///", label=f"{run.name}: fragmented")
            share = m.fragmentation(state, run.node_of, c.workload)[j]
            text = f"{run.name} {format_value('pct', float(share))}"
            if res == m.GPU:
                text += f" (FGD {m.gpu_fragmentation(state, run.node_of, c.workload).amount:.2f} GPUs)"
            shares.append(text)
        ax.set_xticks(x, [state.node_names[n] for n in nodes], rotation=45 if len(nodes) > 8 else 0,
                      ha="right" if len(nodes) > 8 else "center", fontsize=8)
        ax.set_ylabel(f"free {res}{unit}")
        ax.set_title(f"free {res} per node\nfragmented share: " + ", ".join(shares), fontsize=10)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
        _legend(ax)
    return fig


@literal_text
def plot_devices(c: Compared) -> Figure:
    """Per node publishing DRA devices, each run's devices split into allocated (solid), free that some
    pending claim can use (light) and stranded (hatched): :mod:`optisched.metrics.devices`."""
    fig, axes = _figure(1, 1, 10, 3.2)
    ax = axes[0]
    if not c.devices:
        _empty(ax, "no node publishes DRA devices")
        return fig
    first = c.devices[c.runs[0].name]
    nodes = np.flatnonzero(first.published > 0)
    if len(nodes) > MAX_BARS:  # the nodes with the most stranded devices in any run
        most = np.max([c.devices[r.name].stranded[nodes] for r in c.runs], axis=0)
        nodes = np.sort(nodes[np.argsort(-most, kind="stable")[:MAX_BARS]])
    x = np.arange(len(nodes))
    offsets, bar = _group_offsets(len(c.runs))
    totals = []
    for i, run in enumerate(c.runs):
        use = c.devices[run.name]
        held, stranded = use.allocated[nodes], use.stranded[nodes]
        usable = use.free[nodes] - stranded
        ax.bar(x + offsets[i], held, bar, color=_colour(i), label=f"{run.name}: allocated")
        ax.bar(x + offsets[i], usable, bar, bottom=held, color=_colour(i), alpha=0.3,
               label=f"{run.name}: free, usable")
        ax.bar(x + offsets[i], stranded, bar, bottom=held + usable, color="white", edgecolor=_colour(i),
               hatch="///", label=f"{run.name}: stranded")
        totals.append(f"{run.name} {int(use.allocated.sum())} allocated, {int(use.stranded.sum())} stranded")
    ax.set_xticks(x, [c.state.node_names[n] for n in nodes], rotation=45 if len(nodes) > 8 else 0,
                  ha="right" if len(nodes) > 8 else "center", fontsize=8)
    ax.set_ylabel("DRA devices")
    ax.set_title("DRA devices per node: " + "; ".join(totals), fontsize=10)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend(ax)
    return fig


def _unit(res: str) -> tuple[float, str]:
    if res == "cpu":
        return 1000.0, " (cores)"
    if res in ("memory", "ephemeral-storage"):
        return float(2**30), " (GiB)"
    return 1.0, ""


@literal_text
def plot_spread(c: Compared) -> Figure:
    """Matching pods per topology domain for the spread constraints, worst first (as ``spread_skews``)."""
    state = c.state
    if not c.spread:
        fig, axes = _figure(1, 1, 8, 2)
        _empty(axes[0], "no topology spread constraints in the input")
        return fig
    by_name = {sd.name: sd for sd in c.spread}
    panels = [by_name[name] for name in c.spread_skews["constraint"].head(MAX_SPREAD_PANELS)]
    fig, axes = _figure(len(panels), 1, 9, 2.8 * len(panels))
    for ax, sd in zip(axes, panels):
        offsets, bar = _group_offsets(len(c.runs))
        skews = []
        domains: list[str] = []
        for i, run in enumerate(c.runs):
            domains, counts = m.domain_counts(state, run.node_of, sd)
            ax.bar(np.arange(len(domains)) + offsets[i], counts, bar, color=_colour(i), label=run.name)
            skews.append(f"{run.name} {m.spread_skew(state, run.node_of, sd)}")
        ax.set_xticks(np.arange(len(domains)), domains, fontsize=8)
        ax.set_ylabel("matching pods")
        ax.set_title(f"{sd.name}\nskew: " + ", ".join(skews), fontsize=10)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        _legend(ax)
    return fig


def plot_budgets(c: Compared) -> Figure:
    """Per PodDisruptionBudget a run touches: its moves (solid) and preemption victims (hatched, stacked)
    per run, against ``disruptionsAllowed`` (the black tick): what crosses the tick breaks the budget."""
    rows = {r.name: {u["budget"]: u for u in r.budget_rows(c.state)} for r in c.runs}
    budgets = sorted({b for per in rows.values() for b in per})[:MAX_BARS]
    fig, axes = _figure(1, 1, 8, max(2.4, 0.45 * len(budgets) + 1.2))
    ax = axes[0]
    if not budgets:
        _empty(ax, "no run disrupts a pod a PodDisruptionBudget covers")
        return fig
    y = np.arange(len(budgets))
    offsets, bar = _group_offsets(len(c.runs))
    for i, run in enumerate(c.runs):
        use = [rows[run.name].get(b, {}) for b in budgets]
        moves = np.array([u.get("moves", 0) for u in use])
        victims = np.array([u.get("victims", 0) for u in use])
        ax.barh(y + offsets[i], moves, bar, color=_colour(i), label=f"{run.name}: moves")
        ax.barh(y + offsets[i], victims, bar, left=moves, color=_colour(i), alpha=0.45, hatch="//",
                label=f"{run.name}: preemption victims")
    allowed = {b: u["disruptionsAllowed"] for per in rows.values() for b, u in per.items()}
    ax.scatter([allowed[b] for b in budgets], y, marker="|", s=400, color="black", label="disruptionsAllowed",
               zorder=3)
    ax.set_yticks(y, budgets)
    ax.invert_yaxis()
    ax.set_xlabel("covered pods that leave their node")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    most = max([*allowed.values(), *(u["moves"] + u["victims"] for per in rows.values() for u in per.values())])
    ax.set_xlim(0, most + 1)
    ax.set_title("Moves and preemption victims per budget")
    _legend(ax)
    return fig
