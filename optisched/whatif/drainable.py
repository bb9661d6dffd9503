"""The optimizer's side of a drain: the best placement of the evicted pods, and the largest set of the given
nodes that can be drained together.

**Optimal side.** Optimal mode (:func:`optisched.optimal.solve.solve_optimal`) places the pods kubectl
evicts (their replacements; a bare pod evicted with ``--force`` is gone) on the cluster with the drained
nodes cordoned, beside the pods already pending; every other running pod stays. It is what the best
re-placement would be, beside what kube-scheduler's replay does (:mod:`.drain`).

**Largest drainable set.** A set of nodes can be drained together when optimal mode can place every pod
evicted from them on the other nodes (pods already pending left aside: they need not run for a drain).
Adding a node to a set only adds pods to place and removes room, so a set that cannot be drained has no
drainable superset. The search visits the subsets of the candidate nodes (those without a refused pod),
largest first, each answered by one CP-SAT solve of the placement tiers; the first size with a drainable
subset is the answer. It is *proven* largest when every larger subset was proven undrainable (CP-SAT
closed the placement tier's bound below the pods to place) and the answer's placement exists. When the
subsets exceed the solve budget, the set is grown greedily instead (nodes with the fewest pods first,
each kept when the set stays drainable): a drainable set, not proven largest.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import combinations

from ..model.objects import cordoned
from ..model.state import ClusterState, compile_cluster
from ..optimal.solve import OptimalOptions, solve_optimal
from ..profile import SchedulerConfig
from .drain import DrainFlags, evictable

__all__ = ["Drainable", "OptimalSide", "largest_drainable", "optimal_side"]


def _without(state: ClusterState, nodes: set[str], evicted: set[str], keep_pending: bool) -> ClusterState:
    """``nodes`` cordoned, the ``evicted`` pods pending again (bare ones gone), other pending pods kept or not."""
    cluster = state.cluster
    node_objs = cordoned(cluster.nodes, nodes)
    pods = []
    for p in state.pods:
        if p.key in evicted:
            if p.metadata.owner_references:
                pods.append(p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": None}),
                                                 "status": p.status.without_resize()}))
        elif p.spec.node_name or keep_pending:
            pods.append(p)
    return compile_cluster(replace(cluster, nodes=node_objs, pods=pods))


@dataclass(frozen=True)
class OptimalSide:
    placements: dict[str, str | None]  # evicted pod -> optisched's best node (None: not placed)
    by_kube: int  # evicted pods kube-scheduler's replay runs again
    status: str

    def to_dict(self) -> dict:
        placed = sum(v is not None for v in self.placements.values())
        return {"placements": self.placements, "placed": placed, "placedByKubeScheduler": self.by_kube,
                "status": self.status}

    def lines(self) -> list[str]:
        placed = sum(v is not None for v in self.placements.values())
        return [(f"optimal re-placement: {placed} of {len(self.placements)} evicted pod(s) run again "
                 f"(kube-scheduler's replay: {self.by_kube}); certificate {self.status}")]


def optimal_side(state: ClusterState, config: SchedulerConfig, nodes: list[str], evicted: list[str],
                 final: dict[str, str | None], time_limit: float = 10.0) -> OptimalSide:
    """optisched's best placement of ``evicted`` with ``nodes`` cordoned; ``final``: the replay's end state."""
    owned = [k for k in evicted if state.pods[state.pod_index[k]].metadata.owner_references]
    sub = _without(state, set(nodes), set(evicted), keep_pending=True)
    result = solve_optimal(sub, config, OptimalOptions(time_limit=time_limit))
    placed = result.placements()
    return OptimalSide({k: placed.get(k) for k in owned}, sum(final.get(k) is not None for k in owned),
                       result.certificate.status)


@dataclass
class Drainable:
    nodes: list[str]  # the largest drainable set found
    proven: bool
    how: str
    solves: int
    refused: list[str] = field(default_factory=list)  # candidates left out: a pod refuses the drain
    replay_drains: bool | None = None  # kube-scheduler's replay drains that set too

    def to_dict(self) -> dict:
        return {"nodes": self.nodes, "proven": self.proven, "how": self.how, "solves": self.solves,
                "refused": self.refused, "replayDrains": self.replay_drains}

    def lines(self) -> list[str]:
        proof = "proven largest" if self.proven else "not proven largest"
        replay = "" if self.replay_drains is None else \
            f"; kube-scheduler's replay {'drains' if self.replay_drains else 'does not drain'} it"
        return [f"largest drainable set: {', '.join(self.nodes) or 'none'} ({proof}; {self.how}){replay}"]


def _check(state: ClusterState, config: SchedulerConfig, subset: tuple[str, ...], flags: DrainFlags,
           time_limit: float) -> tuple[bool, bool]:
    """(drainable, proven undrainable) for ``subset``."""
    evicted, refused, _ = evictable(state, list(subset), flags)
    owned = [k for k in evicted if state.pods[state.pod_index[k]].metadata.owner_references]
    if refused:
        return False, True
    if not owned:
        return True, False
    sub = _without(state, set(subset), set(evicted), keep_pending=False)
    result = solve_optimal(sub, config, OptimalOptions(time_limit=time_limit, stop_after="placed"))
    placed = result.placements()
    ok = all(placed.get(k) is not None for k in owned)
    return ok, not ok and result.certificate.status == "OPTIMAL"


def largest_drainable(state: ClusterState, config: SchedulerConfig, nodes: list[str], flags: DrainFlags,
                      time_limit: float = 5.0, budget: int = 64) -> Drainable:
    """The largest subset of ``nodes`` that can be drained together (see the module docstring)."""
    _, refused, _ = evictable(state, nodes, flags)
    bad = sorted({b["node"] for b in refused})
    cands = [n for n in nodes if n not in bad]
    total = sum(len(list(combinations(cands, k))) for k in range(1, len(cands) + 1))
    if total > budget:
        return _greedy(state, config, cands, flags, time_limit, bad)
    solves, all_proven = 0, True
    for k in range(len(cands), 0, -1):
        for subset in combinations(cands, k):
            ok, proven_no = _check(state, config, subset, flags, time_limit)
            solves += 1
            if ok:
                return Drainable(list(subset), all_proven, "every larger subset checked by CP-SAT", solves, bad)
            all_proven &= proven_no
    return Drainable([], all_proven, "no single node can be drained", solves, bad)


def _greedy(state: ClusterState, config: SchedulerConfig, cands: list[str], flags: DrainFlags,
            time_limit: float, bad: list[str]) -> Drainable:
    load = {n: int((state.pod_node == state.node_index[n]).sum()) for n in cands}
    chosen: list[str] = []
    solves = 0
    for n in sorted(cands, key=lambda n: (load[n], n)):
        ok, _ = _check(state, config, (*chosen, n), flags, time_limit)
        solves += 1
        if ok:
            chosen.append(n)
    return Drainable(chosen, False, f"grown greedily: {len(cands)} candidates are too many subsets to check",
                     solves, bad)


def annotate(outcome, state: ClusterState, config: SchedulerConfig, flags: DrainFlags,  # type: ignore[no-untyped-def]
             time_limit: float = 10.0) -> None:
    """Add the optimal side, and (when some node does not drain) the largest drainable set, to a
    :class:`.drain.DrainOutcome`."""
    from .drain import run_drain

    outcome.optimal = optimal_side(state, config, outcome.nodes, outcome.evicted, outcome.final, time_limit)
    if len(outcome.nodes) > 1 and not all(outcome.drained.values()):
        largest = largest_drainable(state, config, outcome.nodes, flags, min(time_limit, 5.0))
        if largest.nodes:
            largest.replay_drains = all(run_drain(state, config, largest.nodes, flags).drained.values())
        outcome.largest = largest

