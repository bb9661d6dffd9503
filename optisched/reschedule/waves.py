"""A target placement as waves of evictions kube can carry out, each checked by a kube-scheduler replay.

Kubernetes cannot move a pod: a move is a ``policy/v1`` Eviction, after which the pod's controller
creates a replacement that kube-scheduler places. So a wave is a set of evictions issued together; the
next starts once the wave's replacements are scheduled. After each wave's evictions, greedy mode
(:func:`optisched.plans.landing.predict_landing`: the same profile, kube-scheduler v1.35.4's
PrioritySort queue, so replacements go by priority, then by the order they were evicted) places the
replacements and the pods still pending, and says where each lands.

A wave is emitted only when it is **scheduler-consistent**: every replacement lands on its target, none
lands back on the node it left (a loop), none stays pending, none preempts a pod on arrival. Where the
replay disagrees, the plan is changed from the predicted state, and the change is reported:

1. *accept*: a replacement landing on another node that the target does not empty keeps that landing;
2. *reorder*: the move waits for a later wave (the pods that make room for it leave first);
3. *drop*: a wave that cannot start with any of its moves drops its first one; the pod stays — unless
   that move waits on the others in a cycle (:mod:`.cycles`: evicted together in the right order, else a
   detour through a third node, else dropped).

Limits at every intermediate state: per PodDisruptionBudget, a wave's evictions never exceed its
``disruptionsAllowed`` (an evicted pod counts as disrupted until its replacement is placed, i.e. until the
wave ends; kubernetes v1.35.4 ``pkg/registry/core/pod/storage/eviction.go`` refuses more); per workload
(controller owner), at most ``--max-unavailable-per-workload`` pods per wave. ``--max-moves`` and
``--max-moves-per-node`` cap the plan as a whole (the first moves in queue order are kept).
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol

import numpy as np

from ..model.objects import cordoned as cordoned_nodes
from ..model.state import ClusterState, compile_cluster, resized
from ..preemption.pdb import PDBLedger
from ..profile import SchedulerConfig
from .cycles import CycleReport, resolve_cycle
from .live import LiveCluster
from .replays import Replays, Trial, last_replays, preempted_moves
from .wave_limits import owner as _owner
from .wave_limits import pick as _pick
from .wave_limits import workload_caps as _workload_caps
from .wave_pack import schedule_moves

__all__ = ["Budgets", "Move", "Staging", "Wave", "stage"]


@dataclass(frozen=True)
class Budgets:
    max_moves: int | None = None
    max_moves_per_node: int | None = None
    max_unavailable_per_workload: str | None = None  # a count ("2") or a percent of the owner's pods ("25%")


@dataclass
class Move:
    pod: int  # row in the input state
    key: str
    source: str
    target: str | None  # None: evicted without a node to go to (made room; its controller's problem)
    reason: str
    predicted: str | None = None


@dataclass
class Wave:
    moves: list[Move]
    budgets: dict[str, int]  # PodDisruptionBudget -> evictions this wave counts against it


@dataclass
class Staging:
    waves: list[Wave] = field(default_factory=list)
    dropped: list[tuple[Move, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    final: dict[str, str | None] = field(default_factory=dict)  # every pod's predicted node at the end
    cordoned: list[str] = field(default_factory=list)  # nodes to cordon before the first wave
    held: list[str] = field(default_factory=list)  # empty nodes cordoned during the plan, uncordoned after it
    cycles: list[CycleReport] = field(default_factory=list)  # moves waiting on each other, and what was done
    replays: int = 0  # kube-scheduler replays run: one per eviction order tried (each wave, its re-plans, cycles)
    reused: int = 0  # replays answered from one already run for the same wave and eviction order
    minimal: bool | None = None  # the wave count is proven the fewest for the budgets (None: no moves)
    seconds: float = 0.0  # the staging's time (packing and replays)


def state_at(state: ClusterState, node_of: np.ndarray, cordoned: frozenset[str] = frozenset()) -> ClusterState:
    """The input cluster with every pod bound as ``node_of`` says (-1: pending), and the ``cordoned``
    nodes marked unschedulable (``kubectl cordon``)."""
    names = state.node_names
    nodes = cordoned_nodes(state.cluster.nodes, cordoned)
    pods = []
    for p, pod in enumerate(state.pods):
        n = int(node_of[p])
        node = names[n] if n >= 0 else None
        if node != pod.spec.node_name:
            pod = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": node})})
        pods.append(pod)
    return compile_cluster(replace(state.cluster, pods=pods, nodes=nodes))


def _capped(state: ClusterState, moves: list[Move], budgets: Budgets, staging: Staging,
            homeless: bool) -> list[Move]:
    """The moves within ``--max-moves`` and ``--max-moves-per-node``; the others are dropped. Unless
    ``homeless`` (fit-pending: evicted to make room), a pod the target leaves without a node stays."""
    kept: list[Move] = []
    per_node: dict[str, int] = {}
    for m in moves:
        if m.target is None and not homeless:
            staging.dropped.append((m, "the target leaves it without a node (not an optimal target); it stays"))
        elif budgets.max_moves is not None and len(kept) >= budgets.max_moves:
            staging.dropped.append((m, "over --max-moves"))
        elif budgets.max_moves_per_node is not None and per_node.get(m.source, 0) >= budgets.max_moves_per_node:
            staging.dropped.append((m, f"over --max-moves-per-node on {m.source}"))
        else:
            per_node[m.source] = per_node.get(m.source, 0) + 1
            kept.append(m)
    return kept


def cordon(state: ClusterState, cordoned: frozenset[str]) -> ClusterState:
    """``state`` with the ``cordoned`` nodes marked unschedulable (``kubectl cordon``), without a recompile:
    only the nodes and their mask change (the pods' rows and arrays are shared)."""
    if not cordoned:
        return state
    nodes = cordoned_nodes(state.cluster.nodes, cordoned)
    mask = state.unschedulable | np.isin(np.array(state.node_names, dtype=object), list(cordoned))
    return replace(state, cluster=replace(state.cluster, nodes=nodes), unschedulable=mask, memo={})


def _verdict(m: Move, landed: str | None, preempts: dict[str, str], emptied: frozenset[str]) -> str | None:
    """Why a move's replacement is not consistent with the plan (None: it is); ``accept:NODE`` when its
    landing elsewhere may be kept."""
    if m.key in preempts:
        return f"would preempt {preempts[m.key]} on arrival"
    if landed == m.target:
        return None
    if m.target is None:
        return None if landed != m.source else f"loop: lands back on {m.source}"
    if landed is None:
        return "replacement predicted to stay pending"
    if landed == m.source:
        return f"loop: lands back on {m.source}"
    return f"accept:{landed}" if landed not in emptied else f"lands on {landed}, a node the plan leaves empty"


class Guard(Protocol):
    """Whether a wave's predicted end state is no worse than the cluster left alone (:mod:`.monotone`)."""

    def worse(self, node_of: np.ndarray) -> str | None: ...

    def empty(self, node_of: np.ndarray) -> np.ndarray: ...


# accept(pod row, landing node row, placement before the wave, predicted placement after it): why the
# landing breaks a goal there (None: it may be kept); see .accept
Accept = Callable[[int, int, np.ndarray, np.ndarray], str | None]


def _settle(replays: Replays, wave: list[Move], emptied: frozenset[str], staging: Staging,
            idle: frozenset[str] = frozenset(), accept: Accept | None = None) -> tuple[Trial | None, dict[str, str]]:
    """Replay ``wave`` until every move left in it is consistent: a landing elsewhere that may be kept (and
    that ``accept`` finds every goal still holding at) is accepted (the target follows it), any other
    disagreement takes the move out of the wave (it waits). Returns the last replay (None when the wave
    emptied) and, per move taken out, why. A round that only accepted landings evicted the same pods in
    the same order, so its replay stands: kube-scheduler never reads a move's target."""
    trial = None
    why_out: dict[str, str] = {}
    while wave:
        trial = replays(wave)
        out = False
        for m in list(wave):
            why = _verdict(m, trial.landed.get(m.key), trial.preempts, emptied | idle)
            if why is None:
                continue
            if why.startswith("accept:") and accept is not None:
                why = accept(m.pod, replays.base.node_index[why[7:]], replays.current, trial.after) or why
            if why.startswith("accept:"):
                staging.notes.append(f"{m.key}: kube-scheduler puts it on {why[7:]}, not {m.target}; "
                                     "the landing is accepted")
                m.target = why[7:]
            else:
                wave.remove(m)
                why_out[m.key] = why
                out = True
        if not out:
            break
    return trial, why_out


def stage(state: ClusterState, config: SchedulerConfig, target: np.ndarray, reasons: dict[int, str],
          budgets: Budgets | None = None, emptied: frozenset[str] = frozenset(), homeless: bool = False,
          idle: frozenset[str] = frozenset(), pack: bool = True, accept: Accept | None = None,
          incremental: bool = True, deadline: float | None = None, guard: Guard | None = None) -> Staging:
    """Turn ``target`` (a node row per pod row of ``state``) into scheduler-consistent waves (see the
    module docstring). ``reasons``: why each moved pod moves; ``emptied``: nodes the target empties, which
    the plan cordons before its first wave (as ``kubectl drain`` and cluster-autoscaler's scale-down do:
    without it kube-scheduler's LeastAllocated score sends a replacement back to the emptiest node, the
    descheduler's eviction loop). ``homeless``: pods the target evicts without a node may be evicted
    (fit-pending makes room with them); otherwise they stay. ``idle``: further nodes the target leaves
    empty (consolidate: empty already, so not cordoned): a replacement landing there is not accepted, it
    would put the node in use, but a detour (:mod:`.cycles`) may stop there. ``pack``: the fewest waves
    for all budgets at once (:mod:`.wave_pack`); else waves filled first-fit in queue order. ``accept``:
    whether the goals still hold where a replacement lands elsewhere than its target (:mod:`.accept`).
    ``incremental``: every replay on one greedy setup kept across the waves (:mod:`.live`); else each
    built afresh (:func:`.replays.full_replay`, the reference the incremental path is tested against).
    ``deadline`` (``time.perf_counter()``): past it, the moves a wave takes out are dropped, not tried in
    a later wave, and cycles are no longer resolved (:func:`_drop_late`); the waves kept stay
    scheduler-consistent. ``guard``: every wave's predicted end state must be no worse than the cluster
    left alone (:mod:`.monotone`); a wave that is not is tried without the moves that put a node in use,
    then as whole nodes' moves, and when neither is no worse the plan ends before it, its moves left
    dropped (:func:`_guarded`)."""
    budgets = budgets or Budgets()
    t0 = time.perf_counter()
    staging = Staging(cordoned=sorted(emptied), held=sorted(idle))
    names = state.node_names
    current = state.pod_node.copy()
    moved = np.flatnonzero((current >= 0) & (target != current)).tolist()
    moved.sort(key=lambda p: (-int(state.pod_priority[p]), state.pods[p].key))
    moves = [Move(p, state.pods[p].key, names[int(current[p])],
                  names[int(target[p])] if target[p] >= 0 else None, reasons.get(p, "")) for p in moved]
    remaining = _capped(state, moves, budgets, staging, homeless)
    pending = {p: int(target[p]) for p in np.flatnonzero(current < 0).tolist()}
    ledger = PDBLedger(state, (current >= 0).tolist())
    caps = _workload_caps(state, budgets.max_unavailable_per_workload)
    base = cordon(state, emptied | idle)
    # the live cluster keeps each row's requests, and a resized pod's replacement requests its spec
    incremental = incremental and not any(resized(p) for p in state.pods)
    live = LiveCluster(base, config) if incremental and remaining else None
    gone = np.zeros(len(state.pods), dtype=bool)
    requeued: tuple[int, ...] = ()  # pods preempted by a kept wave, re-created by their controllers
    plan: dict[str, int] = {}
    while remaining:
        if not plan:  # the first wave, or the last one went otherwise than planned: plan the rest
            plan = _plan(state, remaining, ledger, caps, current, pending, pack)
            staging.minimal = plan.pop("", 0) == 1 and staging.minimal is not False
        nxt = min(plan[m.key] for m in remaining)
        wave, used = _pick(state, [m for m in remaining if plan[m.key] == nxt], ledger, caps)
        first = wave[0] if wave else remaining[0]
        planned = len(wave)
        replays = Replays(base, config, current, gone, pending, live, requeued)
        landing, why_out = _settle(replays, wave, emptied, staging, idle, accept)
        late = deadline is not None and time.perf_counter() > deadline
        if not wave and late:  # no time left to resolve cycles or plan again: the wave's moves are dropped
            _tally(staging, replays)
            _drop_late(staging, remaining, why_out or {first.key: "no wave can take it within the budgets"})
            continue
        if not wave:
            wave, landing, why = _unstick(state, replays, first, remaining, emptied, ledger, caps, staging, budgets)
            plan, staging.minimal = {}, False  # the moves left are planned again (a detour adds a leg)
            if not wave:
                _tally(staging, replays)
                staging.dropped.append((first, why or why_out.get(first.key, "no wave can take it within the budgets")))
                remaining.remove(first)
                continue
        elif len(wave) < planned:
            plan, staging.minimal = {}, False
        assert landing is not None
        if guard is not None:
            wave, landing, cut = _guarded(replays, wave, landing, guard, emptied | idle, staging, accept, why_out,
                                          partial(_emptying, state, remaining, ledger, caps, list(wave)))
            if landing is None:
                _tally(staging, replays)
                _cut(staging, remaining, f"wave {len(staging.waves) + 1} would leave the cluster worse than left "
                     f"alone ({cut})")
                break
            if len(wave) < planned:
                plan, staging.minimal = {}, False
        replays.keep(wave)
        _tally(staging, replays)
        for m in wave:
            m.predicted = landing.landed.get(m.key)
            remaining.remove(m)
        if late:
            _drop_late(staging, remaining, why_out)
        for key, why in ({} if late else why_out).items():
            staging.notes.append(f"{key}: waits for a later wave ({why} in wave {len(staging.waves) + 1})")
        _, used = _pick(state, wave, ledger, caps)
        staging.waves.append(Wave(wave, used))
        current, gone, requeued = landing.after, landing.gone, landing.requeued
        pending = {p: t for p, t in pending.items() if current[p] < 0}
        for m, why in preempted_moves(remaining, current, gone, len(staging.waves)):
            staging.dropped.append((m, why))
            remaining.remove(m)
    if (pending and not staging.waves) or requeued:
        current, runs, reused = last_replays(Replays(base, config, current, gone, pending, live, requeued))
        staging.replays, staging.reused = staging.replays + runs, staging.reused + reused
    staging.final = {p.key: (names[n] if (n := int(current[i])) >= 0 else None) for i, p in enumerate(state.pods)}
    staging.seconds = time.perf_counter() - t0
    return staging


def _guarded(replays: Replays, wave: list[Move], landing: Trial, guard: Guard, held: frozenset[str],
             staging: Staging, accept: Accept | None, why_out: dict[str, str],
             emptying: Callable[[], list[Move]]) -> tuple[list[Move], Trial | None, str | None]:
    """``wave`` and its replay when its end state is no worse than left alone; else the first of these
    that is, replayed: the wave without its moves to a node empty when it starts (they wait: a later wave
    may empty more nodes first, as cluster-autoscaler never opens a node to empty another), then
    ``emptying`` (whole nodes' moves within the budgets, :func:`_emptying`); else no wave and why the
    cluster would be worse."""
    worse = guard.worse(landing.after)
    if worse is None:
        return wave, landing, None
    empty = guard.empty(replays.current)
    index = replays.base.node_index
    openers = [m for m in wave if m.target is not None and empty[index[m.target]]]
    rest = [m for m in wave if m not in openers]
    for first in (True, False):
        option = (rest if openers else []) if first else emptying()
        trial, more = _settle(replays, option, held, staging, frozenset(), accept) if option else (None, {})
        if trial is None or not option or guard.worse(trial.after) is not None:
            continue
        if first:
            why_out.update({m.key: f"it would put {m.target} in use before other nodes are emptied ({worse})"
                            for m in openers})
        why_out.update(more)
        wave[:] = option
        return wave, trial, None
    return [], None, worse


def _emptying(state: ClusterState, remaining: list[Move], ledger: PDBLedger, caps: dict[str, int],
              wave: list[Move]) -> list[Move]:
    """A wave of whole nodes' moves: the moves left off each source node, fewest first, each node's taken
    only when all of them fit the wave's budgets (a consolidation that must open a node empties one in
    the same wave); [] when it would be ``wave`` again."""
    by_source: dict[str, list[Move]] = {}
    for m in remaining:
        by_source.setdefault(m.source, []).append(m)
    out: list[Move] = []
    for group in sorted(by_source.values(), key=len):
        if len(_pick(state, out + group, ledger, caps)[0]) == len(out) + len(group):
            out += group
    return [] if [m.key for m in out] == [m.key for m in wave] else out


def _cut(staging: Staging, remaining: list[Move], why: str) -> None:
    """The plan ends here: every move left is dropped, with ``why``."""
    staging.dropped += [(m, f"not carried out: {why}") for m in remaining]
    remaining.clear()


def _drop_late(staging: Staging, remaining: list[Move], why_out: dict[str, str]) -> None:
    """Past the staging's deadline, the moves a wave took out (``why_out``: key -> why) are dropped
    instead of waiting for a later wave: each re-plan replays the moves left again, and a move taken out
    of a wave that kept nothing would be taken out again from the same cluster."""
    for m in [m for m in remaining if m.key in why_out]:
        staging.dropped.append((m, f"{why_out[m.key]}; not tried again: the time limit was reached"))
        remaining.remove(m)


def _unstick(state: ClusterState, replays: Replays, first: Move, remaining: list[Move], emptied: frozenset[str],
             ledger: PDBLedger, caps: dict[str, int], staging: Staging,
             budgets: Budgets) -> tuple[list[Move], Trial | None, str | None]:
    """When no wave can start, the cycle ``first`` is in, if any (:mod:`.cycles`): the wave that resolves
    it (for a detour, its first leg, put in ``remaining`` in place of the pod's move, which now starts
    from the third node and goes last), or no wave and why the move is dropped."""
    def together(moves: list[Move]) -> Trial | None:
        if len(_pick(state, moves, ledger, caps)[0]) != len(moves):
            return None
        trial = replays(moves)
        ok = all(trial.landed.get(m.key) == m.target and m.key not in trial.preempts for m in moves)
        return trial if ok else None

    planned = sum(len(w.moves) for w in staging.waves) + len(remaining)
    per_node = Counter(m.source for m in remaining + [m for w in staging.waves for m in w.moves])

    def alone(m: Move) -> str | None:
        if budgets.max_moves is not None and planned >= budgets.max_moves:
            return None  # a detour is one move more
        trial = replace(m, target=None)
        if not _pick(state, [trial], ledger, caps)[0]:
            return None
        answer = replays([trial])  # a detour's first leg evicts the same pod: its check is this replay
        via = answer.landed.get(m.key)
        full = budgets.max_moves_per_node is not None and per_node.get(via or "", 0) >= budgets.max_moves_per_node
        return None if m.key in answer.preempts or full else via

    found = resolve_cycle(first, remaining, together, alone, emptied)
    if found is None:
        return [], None, None
    staging.cycles.append(found.report)
    if found.onward is not None:  # the second leg waits for the rest of the cycle
        k = next(i for i, m in enumerate(remaining) if m.key == found.onward.key)
        remaining[k] = found.wave[0]
        remaining.append(found.onward)
    why = None if found.wave else found.report.detail
    return found.wave, found.landing, why


def _plan(state: ClusterState, moves: list[Move], ledger: PDBLedger, caps: dict[str, int], current: np.ndarray,
          pending: dict[int, int], pack: bool) -> dict[str, int]:
    """Per move key, the wave (from 0) it is planned in; under ``""``, 1 when the count is proven fewest."""
    rows = [m.pod for m in moves]
    placed_at = current.copy()
    for p, t in pending.items():
        placed_at[p] = t
    names = state.node_index
    schedule = schedule_moves(rows, [names[m.target] if m.target is not None else -1 for m in moves],
                              [_owner(state, p) for p in rows], ledger.budgets_of, ledger.allowed, caps, current,
                              placed_at, state.pod_requests, state.allocatable, pack)
    return {"": int(schedule.proven), **{m.key: w for m, w in zip(moves, schedule.wave_of)}}


def _tally(staging: Staging, replays: Replays) -> None:
    staging.replays += replays.count
    staging.reused += replays.hits
