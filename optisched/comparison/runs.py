"""``PlacementRun``: one mode's answer for a batch, in the shape every comparison reads.

A run is the node of every pod row of the :class:`~optisched.model.state.ClusterState` after the mode
ran (-1 = not placed), with what the mode knows besides: why pods stayed pending, its optimality
certificate, its score objective, the per-plugin scores greedy mode gave each pod. Evictions and
moves are not stored: a pod bound in the input that ends at -1 was evicted, at another node moved.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..greedy.scheduler import GreedyOptions, GreedyResult
    from ..model.state import ClusterState
    from ..profile import SchedulerConfig

__all__ = ["PlacementRun", "placement_run", "run_greedy"]


@dataclass
class PlacementRun:
    name: str  # "greedy", "optimal", "greedy:MostAllocated", ...
    mode: str  # "greedy" | "optimal"
    node_of: np.ndarray  # int64 [P]: node row of every pod row after the run, -1 = not placed
    seconds: float  # wall time of the run
    unschedulable: dict[int, str] = field(default_factory=dict)  # pending pod row -> why it is not placed
    not_handled: dict[int, str] = field(default_factory=dict)  # gated pods, other schedulers' pods -> why
    # optimal mode: {"status": "OPTIMAL"|"FEASIBLE"|..., "tiers": [{"name","objective","bound","gap"}],
    #                "greedyOptimal": bool}
    certificate: dict | None = None
    score_objective: float | None = None  # the profile's score objective value, when the mode computes it
    pod_scores: dict[int, dict[str, int]] = field(default_factory=dict)  # pod row -> plugin -> weighted score
    # PodDisruptionBudgets the run uses (pdb_model.BudgetUse.to_dict); None: every departure a preemption victim
    budgets: list[dict] | None = None
    # DRA devices (``driver/pool/device``) the claims hold after the run; None: not known (settled from
    # ``node_of`` when compared, :func:`optisched.optimal.check.settled_devices`)
    devices: frozenset[str] | None = None

    def budget_rows(self, state: ClusterState) -> list[dict]:
        """Per budget: allowed, used by moves, broken by preemption (greedy mode's departures are victims)."""
        if self.budgets is not None:
            return self.budgets
        from ..optimal.eviction.pdb_model import budget_use_of

        return [u.to_dict() for u in budget_use_of(state, self.node_of, np.zeros(len(self.node_of), dtype=bool))]

    @classmethod
    def from_greedy(cls, name: str, result: GreedyResult, seconds: float) -> PlacementRun:
        """A greedy run: placements from the final snapshot; each placed pod's weighted per-plugin scores
        on its node from the last cycle that scored it (needs ``GreedyOptions(record=True)``)."""
        node_of = np.asarray(result.snapshot.node_of, dtype=np.int64).copy()
        scores: dict[int, dict[str, int]] = {}
        for rec in result.cycles:
            if rec.chosen is None or rec.scores is None:
                continue
            hit = np.flatnonzero(rec.scores.nodes == rec.chosen)
            if len(hit):
                i = int(hit[0])
                scores[rec.pod] = {plugin: int(w[i]) for plugin, w in rec.scores.weighted.items()}
        scores = {p: s for p, s in scores.items() if node_of[p] >= 0}
        devices = None
        if result.state.cluster.resource_slices:
            from ..plugins.dynamicresources.claims import claim_book

            devices = frozenset(claim_book(result.snapshot).allocated_devices)
        return cls(name, "greedy", node_of, float(seconds), dict(result.unschedulable),
                   not_handled=dict(result.skipped), pod_scores=scores, devices=devices)


def run_greedy(state: ClusterState, config: SchedulerConfig, name: str = "greedy",
               options: GreedyOptions | None = None) -> PlacementRun:
    """Run greedy mode on ``state`` (recording cycles, for the per-plugin scores) and time it."""
    from ..greedy.scheduler import GreedyOptions, GreedyScheduler

    opts = options if options is not None else GreedyOptions(record=True)
    start = time.perf_counter()
    result = GreedyScheduler(state, config, opts).run()
    return PlacementRun.from_greedy(name, result, time.perf_counter() - start)


def placement_run(state: ClusterState, name: str, placements: Mapping[str, str | None],
                  seconds: float = 0.0) -> PlacementRun:
    """A run from a placement given as ``{"ns/name": "node" or None}``, e.g. another scheduler's answer.

    Pods not named keep their node in the input (bound pods stay, pending pods stay pending); ``None``
    leaves a pod off every node (a bound pod named so counts as evicted). An unknown pod or node is an
    :class:`~optisched.errors.InputError` naming the run and the name.
    """
    from ..errors import InputError

    node_of = np.asarray(state.pod_node, dtype=np.int64).copy()
    for pod, node in placements.items():
        row = state.pod_index.get(pod)
        if row is None:
            raise InputError(f"pod {pod!r} is not in the cluster (pods are named 'namespace/name')",
                             source=f"placements[{name!r}]")
        if node is not None and node not in state.node_index:
            raise InputError(f"pod {pod!r}: node {node!r} is not in the cluster", source=f"placements[{name!r}]")
        node_of[row] = -1 if node is None else state.node_index[node]
    return PlacementRun(name, "given", node_of, float(seconds))
