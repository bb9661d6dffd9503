"""What optimal mode returns: the placement, the certificate of how good it is, and what it relied on."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..greedy.scheduler import GreedyResult
from ..model.state import ClusterState
from .check import Violation
from .classes import Batch
from .explain import Explanation
from .tiers import Tier

__all__ = ["NOT_ATTEMPTED", "Certificate", "OptimalResult", "placed_per_level"]

NOT_ATTEMPTED = "not attempted: the run was interrupted first"


@dataclass
class Certificate:
    """How good the answer is: per tier the objective, the best bound and the gap."""

    status: str  # OPTIMAL | FEASIBLE | INFEASIBLE | UNKNOWN
    tiers: list[Tier]
    seconds: float
    source: str  # "solver" or "greedy" (the greedy placement was at least as good)
    greedy_optimal: bool
    notes: list[str] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C ended the run early: the best answer found before it

    def to_dict(self) -> dict:
        return {"status": self.status, "tiers": [t.to_dict() for t in self.tiers],
                "seconds": round(self.seconds, 3), "source": self.source,
                "greedyOptimal": self.greedy_optimal, "notes": self.notes, "interrupted": self.interrupted}


@dataclass
class OptimalResult:
    state: ClusterState
    batch: Batch
    node_of: np.ndarray  # node row per pod row after the batch, -1 = not placed
    certificate: Certificate
    greedy: GreedyResult
    violations: list[Violation]
    explanations: list[Explanation] = field(default_factory=list)
    used: float = 0.0  # nominal seconds of the run's clock (deterministic work by default) spent
    order: list[np.ndarray] = field(default_factory=list)  # pod rows per class in the arrival order relied on
    # parallel to order: the victims still in place until that block lands (.victim_times)
    evicted: list[np.ndarray] = field(default_factory=list)
    ledger: dict[str, dict[str, float]] = field(default_factory=dict)  # per phase: work counted, CPU (.clock)

    def placements(self) -> dict[str, str | None]:
        names = self.state.node_names
        return {p.key: (names[n] if (n := int(self.node_of[i])) >= 0 else None)
                for i, p in enumerate(self.state.pods)}

    @property
    def unschedulable(self) -> dict[int, str]:
        """Pending pods the answer leaves without a node, with the greedy FitError for context."""
        out = {}
        untried = set(self.greedy.not_attempted)
        for c in self.batch.classes:
            for p in c.pending:
                if self.node_of[p] < 0:
                    out[p] = NOT_ATTEMPTED if p in untried else \
                        self.greedy.unschedulable.get(p, "not placed by the optimal batch")
        return out


def placed_per_level(batch: Batch, node_of: np.ndarray) -> dict[int, int]:
    """Batch pods on a node per priority level."""
    out = dict.fromkeys(batch.levels, 0)
    for c in batch.classes:
        rows = c.pending + [p for pods in c.running.values() for p in pods]
        out[c.priority] += int(np.count_nonzero(node_of[rows] >= 0))
    return out

