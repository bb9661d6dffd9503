"""``fit-pending``'s start: kube-scheduler's preemption, each victim moved instead of evicted; else
defragmentation moves of any priority.

For a placement tier (the pods of one priority on a node) the start is the answer so far with its
pending pods of that priority placed, in kube-scheduler's queue order (priority, then input order):
where the filters pass, on the most allocated node; else where kube-scheduler's DefaultPreemption would
make room (kubernetes/kubernetes v1.35 ``pkg/scheduler/framework/preemption/preemption.go``
``SelectVictimsOnNode`` on each candidate node, ``pickOneNodeForPreemption`` among them: greedy mode's
own :class:`optisched.preemption.default_preemption.DefaultPreemption` on the start's snapshot). Its
victims, lower-priority pods the eviction policy lets leave, are then re-placed on other nodes by the
same filters (a move, not an eviction); when one finds no node, the next candidate is tried. When no
candidate works, pods of any priority that may leave are moved instead (:mod:`.start_defrag`: the
fewest and least important whose moves make room, the defragmentation per-node preemption cannot do),
and a pod nothing makes room for stays pending (as do the pods identical to it, by optimal mode's
class signature, until another pod is placed: they would be refused the same way).
"""
from __future__ import annotations

import numpy as np

from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..greedy.scheduler import start_times
from ..model.state import ClusterState
from ..optimal.check import check_placement
from ..optimal.classes import signature
from ..preemption.default_preemption import Candidate, DefaultPreemption
from ..preemption.pdb import PDBLedger
from ..profile import SchedulerConfig
from .start import Accept, Placer, by_size
from .start_defrag import defragment, short

__all__ = ["fit_pending_start", "start_breaks"]


def _hopeless(placer: Placer, p: int, may_leave: np.ndarray) -> np.ndarray:
    """bool [N]: nodes where ``p`` does not fit even with every lower-priority pod that may leave gone
    (capacity only: the other filters are left to the dry run)."""
    return short(placer, p, may_leave & (placer.state.pod_priority < placer.state.pod_priority[p]))


def _candidates(placer: Placer, fw: Framework, p: int, may_leave: np.ndarray,
                preemption: DefaultPreemption) -> list[Candidate]:
    """DefaultPreemption's candidates for ``p`` whose victims may all leave, in node order, as many as
    ``calculateNumCandidates`` asks for."""
    state = placer.state

    def filter_node(_cycle: CycleState, n: int) -> tuple[bool, str, Code, list[str]]:
        only = np.zeros(state.num_nodes, dtype=bool)
        only[n] = True
        fits = len(placer.feasible(p, only)) > 0
        return fits, "", Code.SUCCESS if fits else Code.UNSCHEDULABLE, []
    cycle = CycleState(p, placer.snapshot, fw.profile)
    found: list[Candidate] = []
    for n in np.flatnonzero(~_hopeless(placer, p, may_leave)).tolist():
        cand, _ = preemption.select_victims(cycle, n, filter_node)
        if cand is not None and cand.victims and all(may_leave[v] for v in cand.victims):
            found.append(cand)
            if len(found) >= preemption.num_candidates(state.num_nodes):
                break
    return found


def _make_room(placer: Placer, p: int, may_leave: np.ndarray, preemption: DefaultPreemption,
               accept: Accept | None) -> bool:
    """Place ``p`` on the best candidate whose victims all find another node; False when none does."""
    fw = placer.frameworks[placer.state.pods[p].spec.scheduler_name]
    found = _candidates(placer, fw, p, may_leave, preemption)
    snap = placer.snapshot
    while found:
        best = preemption.pick(found)
        found.remove(best)
        for v in best.victims:
            snap.remove(v)
        snap.add(p, best.node)
        away = np.ones(placer.state.num_nodes, dtype=bool)
        away[best.node] = False
        landed = []
        for v in by_size(placer.state, best.victims):
            if placer.place(v, away, accept) < 0:
                break
            landed.append(v)
        if len(landed) == len(best.victims):
            return True
        for v in landed:
            snap.remove(v)
        snap.remove(p)
        for v in best.victims:
            snap.add(v, best.node)
    return False


def fit_pending_start(state: ClusterState, config: SchedulerConfig, may_leave: np.ndarray, node_of: np.ndarray,
                      pods: list[int], accept: Accept | None = None) -> tuple[np.ndarray, list[int]]:
    """The placement reached from ``node_of`` by placing ``pods`` (pending there) as the module docstring
    says, and the pods of ``pods`` placed by defragmentation; ``may_leave``: the running pods that may
    move; ``accept``: where a moved pod may go besides the filters."""
    placer = Placer(state, config, node_of)
    start_time, _ = start_times(state)
    ledger = PDBLedger(state, (placer.snapshot.node_of >= 0).tolist())
    everywhere = np.ones(state.num_nodes, dtype=bool)
    defragmented = []
    failed: set[tuple] = set()  # signatures of pods nothing made room for since the last placement
    for p in sorted(pods, key=lambda q: (-int(state.pod_priority[q]), q)):
        fw = placer.frameworks.get(state.pods[p].spec.scheduler_name)
        if fw is None or (shape := signature(state.pods[p])) in failed:
            continue
        if placer.place(p, everywhere) >= 0:
            failed.clear()
            continue
        preemption = DefaultPreemption(placer.snapshot, fw.profile.preemption, start_time, ledger)
        if _make_room(placer, p, may_leave, preemption, accept):
            failed.clear()
        elif defragment(placer, p, may_leave, accept, start_time, preemption.num_candidates(state.num_nodes)):
            failed.clear()
            defragmented.append(p)
        else:
            failed.add(shape)
    return placer.snapshot.node_of.copy(), defragmented


def start_breaks(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, out: np.ndarray) -> str | None:
    """Why ``out``, a start found from ``node_of``, may not be offered: a pod ``node_of`` places left
    without a node, or a pod the filters reject in ``out`` (batch semantics, as optimal mode checks its
    answers: :func:`optisched.optimal.check.check_placement`) that they did not reject in ``node_of``;
    None when it may."""
    homeless = np.flatnonzero((node_of >= 0) & (out < 0))
    if len(homeless):
        return f"{state.pods[int(homeless[0])].key} left without a node"
    bad = check_placement(state, config, out)
    changed = out != node_of
    fresh = [v for v in bad if changed[state.pod_index[v.pod]]]
    if bad and not fresh:
        before = {v.pod for v in check_placement(state, config, node_of)}
        fresh = [v for v in bad if v.pod not in before]
    return str(fresh[0]) if fresh else None
