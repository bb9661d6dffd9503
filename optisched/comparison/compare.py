"""``build_comparison``: several placements of one batch side by side, as tables and plots.

The first run is the reference (usually greedy mode, kube-scheduler's answer): the per-pod diff lists
the pods another run places differently from it, with its per-plugin scores. The workload that
fragmentation is measured against is fixed from the input (see :mod:`optisched.metrics.fragmentation`),
so every run is judged against the same pods.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import metrics as m
from ..model.state import ClusterState
from .runs import PlacementRun
from .tables import nodes_table, pods_table, spread_table, summary_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..profile import SchedulerConfig

__all__ = ["Comparison", "build_comparison"]


@dataclass
class Comparison:
    """Runs of one batch compared. ``summary``: one column per run; ``pods``: the per-pod diff against
    the first run; ``nodes``: one row per run and node; ``spread_skews``: one row per topology spread
    constraint, the worst first (the summary names the first few)."""

    state: ClusterState
    config: SchedulerConfig | None
    runs: list[PlacementRun]
    workload: m.Workload
    spread: list[m.SpreadDomains]
    summary: pd.DataFrame
    pods: pd.DataFrame
    nodes: pd.DataFrame
    spread_skews: pd.DataFrame
    formats: dict[str, str] = field(default_factory=dict)  # summary row -> format (see tables.format_value)
    # run name -> its DRA devices per node (:mod:`optisched.metrics.devices`); empty without DRA devices
    devices: dict[str, m.DeviceUsage] = field(default_factory=dict)
    device_fragmentation: dict[str, m.GpuFragmentation] = field(default_factory=dict)

    def plot_utilization(self) -> Figure:
        from .plots import plot_utilization

        return plot_utilization(self)

    def plot_placed_by_priority(self) -> Figure:
        from .plots import plot_placed_by_priority

        return plot_placed_by_priority(self)

    def plot_fragmentation(self) -> Figure:
        from .plots import plot_fragmentation

        return plot_fragmentation(self)

    def plot_budgets(self) -> Figure:
        from .plots import plot_budgets

        return plot_budgets(self)

    def plot_devices(self) -> Figure:
        from .plots import plot_devices

        return plot_devices(self)

    def plot_spread(self) -> Figure:
        from .plots import plot_spread

        return plot_spread(self)

    def to_json(self) -> dict[str, Any]:
        """The summary and each run's facts as plain JSON values (NaN as null)."""
        state = self.state
        runs = []
        for r in self.runs:
            runs.append({
                "name": r.name, "mode": r.mode, "seconds": _plain(r.seconds), "certificate": r.certificate,
                "scoreObjective": r.score_objective,
                "unschedulable": {state.pods[p].key: why for p, why in sorted(r.unschedulable.items())},
                "notHandled": {state.pods[p].key: why for p, why in sorted(r.not_handled.items())},
                "pdbViolations": [vars(v) for v in m.pdb_violations(state, r.node_of)],
                "evictions": int(m.evicted(state, r.node_of).sum()), "moves": int(m.moved(state, r.node_of).sum()),
                "budgets": r.budget_rows(state),
            })
        summary = {metric: {run: _plain(v) for run, v in row.items()} for metric, row in self.summary.iterrows()}
        return {"runs": runs, "summary": summary, "formats": self.formats,
                "profile": self.config.profiles[0].scheduler_name if self.config and self.config.profiles else None}


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def build_comparison(state: ClusterState, config: SchedulerConfig | None, runs: list[PlacementRun],
                     workload: m.Workload | None = None) -> Comparison:
    """Compare ``runs`` of the batch in ``state`` (the first is the reference). ``workload`` defaults to
    the input's pending pods (:func:`optisched.metrics.workload_of`)."""
    if not runs:
        raise ValueError("build_comparison needs at least one run")
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise ValueError(f"run names must be distinct: {names}")
    for r in runs:
        if np.shape(r.node_of) != (len(state.pods),):
            raise ValueError(f"run {r.name!r}: node_of has shape {np.shape(r.node_of)}, expected ({len(state.pods)},)")
        if len(r.node_of) and int(np.max(r.node_of)) >= state.num_nodes:
            raise ValueError(f"run {r.name!r}: node_of names a node row past the {state.num_nodes} nodes")
    wl = workload if workload is not None else m.workload_of(state)
    spread = m.spread_constraints(state)
    skews = np.array([[m.spread_skew(state, r.node_of, sd) for r in runs] for sd in spread],
                     dtype=np.int64).reshape(len(spread), len(runs))
    skew_table = spread_table(spread, runs, skews)
    devices, frag = _devices(state, config, runs)
    summary, formats = summary_table(state, runs, wl, skew_table, devices, frag)
    return Comparison(state, config, list(runs), wl, spread, summary, pods_table(state, runs),
                      nodes_table(state, runs, wl, devices), skew_table, formats, devices, frag)


def _devices(state: ClusterState, config: SchedulerConfig | None,
             runs: list[PlacementRun]) -> tuple[dict[str, m.DeviceUsage], dict[str, m.GpuFragmentation]]:
    """Each run's DRA devices per node, and their FGD fragmentation; none when no node publishes a device.
    A run that does not know its devices (an optimal answer, a given placement) has them settled from its
    placement as the optimal re-check does (:func:`optisched.optimal.check.settled_devices`)."""
    if not m.published_devices(state):
        return {}, {}
    from ..optimal.check import settled_devices
    from ..profile import default_config

    work = m.device_workload(state)
    usage, frag = {}, {}
    for r in runs:
        held = r.devices
        if held is None:
            held, _ = settled_devices(state, config if config is not None else default_config(), r.node_of)
        usage[r.name] = m.device_usage(state, r.node_of, held, work)
        frag[r.name] = m.device_fragmentation(state, usage[r.name], work)
    return usage, frag
