"""The preemptions a greedy run made (DefaultPreemption's nominations and victims), in the order they
happened; :mod:`optisched.plans.plan` writes them as a table and as Eviction objects."""
from __future__ import annotations

from dataclasses import dataclass

from ..greedy.scheduler import GreedyResult
from .pdb import PDBLedger

__all__ = ["Preemption", "preemptions"]


@dataclass(frozen=True)
class Preemption:
    preemptor: str
    priority: int
    node: str
    victims: tuple[tuple[str, int, tuple[str, ...]], ...]  # (pod, priority, PDBs covering it)
    placed: bool  # the preemptor ended on the node


def preemptions(result: GreedyResult, ledger: PDBLedger, pod: str | None = None) -> list[Preemption]:
    """Every preemption of a greedy run (or only ``pod``'s), in the order they happened."""
    state = result.state
    final = result.placements()
    out = []
    for rec in result.cycles:
        if not rec.preemption or rec.post_filter is None or rec.post_filter.nominated is None:
            continue
        key = state.pods[rec.pod].key
        if pod is not None and key != pod:
            continue
        node = state.node_names[rec.post_filter.nominated]
        victims = tuple((state.pods[v].key, int(state.pod_priority[v]),
                         tuple(ledger.names[i] for i in ledger.budgets_of(v))) for v in rec.post_filter.victims)
        out.append(Preemption(key, int(state.pod_priority[rec.pod]), node, victims, final.get(key) == node))
    return out
