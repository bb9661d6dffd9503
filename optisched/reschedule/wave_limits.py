"""A wave's limits: per PodDisruptionBudget its ``disruptionsAllowed``, per workload (controller owner)
``--max-unavailable-per-workload``; the staging (:mod:`.waves`) takes a wave's moves in order within them."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from ..model.pdb import scaled_value
from ..model.state import ClusterState
from ..preemption.pdb import PDBLedger

__all__ = ["owner", "pick", "workload_caps"]


class _Evicted(Protocol):
    pod: int


M = TypeVar("M", bound=_Evicted)


def owner(state: ClusterState, p: int) -> str | None:
    """``namespace/Kind/name`` of the pod's controller (else its first owner), None for a bare pod."""
    refs = state.pods[p].metadata.owner_references
    ctl = [o for o in refs if o.controller] or list(refs)
    return f"{state.pods[p].metadata.namespace or 'default'}/{ctl[0].kind}/{ctl[0].name}" if ctl else None


def workload_caps(state: ClusterState, budget: str | None) -> dict[str, int]:
    """Per owner: the pods a wave may take (rounded down as a Deployment's maxUnavailable, at least 1)."""
    if budget is None:
        return {}
    sizes: dict[str, int] = {}
    for p in range(len(state.pods)):
        if (o := owner(state, p)) is not None:
            sizes[o] = sizes.get(o, 0) + 1
    value: int | str = budget if budget.endswith("%") else int(budget)
    return {o: max(1, scaled_value(value, n, round_up=False)) for o, n in sizes.items()}


def pick(state: ClusterState, moves: Sequence[M], ledger: PDBLedger,
         caps: dict[str, int]) -> tuple[list[M], dict[str, int]]:
    """The moves, in order, that fit one wave's PodDisruptionBudgets and per-workload limits."""
    used_pdb: dict[int, int] = {}
    used_owner: dict[str, int] = {}
    wave = []
    for m in moves:
        pdbs = ledger.budgets_of(m.pod)
        who = owner(state, m.pod)
        if any(used_pdb.get(b, 0) >= ledger.allowed[b] for b in pdbs):
            continue
        if who in caps and used_owner.get(who, 0) >= caps[who]:
            continue
        for b in pdbs:
            used_pdb[b] = used_pdb.get(b, 0) + 1
        if who is not None:
            used_owner[who] = used_owner.get(who, 0) + 1
        wave.append(m)
    return wave, {ledger.names[b]: n for b, n in used_pdb.items()}
