"""The independent checker: every pod a placement puts on a node passes the greedy filters there.

Batch semantics: a placed pod must pass every filter of its profile against the *final* cluster with
itself removed. The check rebuilds the final cluster in a fresh :class:`Snapshot`, takes each placed
pod out, runs the greedy PreFilter and Filter (the same code greedy mode runs) on its node, and puts it
back. NodePorts recounts the node as kube-scheduler's NodeInfo holds it after the batch (a pod that
left frees its ports as a set, even where a pod that stays holds one too: ``NodePorts.recount_node``). Pods of one
class on one node are interchangeable, so one pod per (class, node) is checked.
Pods that stay where the input had them are bound and not re-checked (kube never re-filters a bound
pod); a pod that moved is checked without NodeName (its ``nodeName`` is where it ran).

An answer the model admits by an arrival order (:mod:`.order`) is checked that way for the classes in the
order (:func:`check_in_order`): block by block, each pod against the cluster as it is when its block ends,
preemption victims the order keeps until their preemptor's block still on their node before it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..profile import SchedulerConfig

__all__ = ["Violation", "check_answer", "check_budgets", "check_in_order", "check_placement", "checked_rows",
           "settled_devices"]


@dataclass(frozen=True)
class Violation:
    pod: str
    node: str
    plugin: str
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.pod} on {self.node}: {self.plugin}: {'; '.join(self.reasons) or 'rejected'}"


# pods between two calls of a check's ``tick`` (a caller's clock: a call costs microseconds, a pod's
# check about a millisecond)
TICK_EVERY = 64
Tick = Callable[[], None]


def _final_snapshot(state: ClusterState, node_of: np.ndarray, tick: Tick | None = None) -> Snapshot:
    snap = Snapshot(state, with_bound=False)
    for k, p in enumerate(np.flatnonzero(node_of >= 0).tolist()):
        if tick is not None and k % (16 * TICK_EVERY) == 0:
            tick()
        snap.add(p, int(node_of[p]))
    return snap


def check_placement(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                    signature_of: np.ndarray | None = None, only: np.ndarray | None = None,
                    tick: Tick | None = None) -> list[Violation]:
    """Violations of batch semantics in ``node_of`` (node row per pod row, -1 = not placed).

    Checked: every pod whose node differs from the input's (and, with ``only``, a bool mask over pod
    rows, among those only the marked ones). ``signature_of`` (a class id per pod row, -1 when
    unknown) lets one pod stand for its class on a node. ``tick``, when given, is called between pods
    (a caller's time check: it may raise to end the check part-way)."""
    snap = _final_snapshot(state, node_of, tick)
    frameworks = {}
    for profile in config.profiles:
        if tick is not None:
            tick()
        frameworks[profile.scheduler_name] = Framework(snap, profile)
    moved = (node_of >= 0) & (node_of != state.pod_node)
    out = _settle(frameworks, snap, np.flatnonzero(moved).tolist(), node_of)
    if only is not None:
        moved &= only
    refused = {v.pod for v in out}
    rows = [p for p in np.flatnonzero(moved).tolist() if state.pods[p].key not in refused]
    return out + _check_rows(frameworks, snap, rows, node_of, signature_of, tick)


def _settle(frameworks: dict[str, Framework], snap: Snapshot, rows: list[int], node_of: np.ndarray) -> list[Violation]:
    """What the placed pods take besides room on their node, taken in row order before any pod is checked
    (the devices of their ResourceClaims, ``settle`` of a rule such as DynamicResources): the pods whose
    share cannot be had are violations; the others' shares are then part of the cluster each check sees."""
    state = snap.state
    out: list[Violation] = []
    seen: set[int] = set()
    for fw in frameworks.values():
        mine = [p for p in rows if state.pods[p].spec.scheduler_name == fw.profile.scheduler_name]
        for rule in fw.filter_rules.values():
            if hasattr(rule, "settle") and id(rule) not in seen:
                seen.add(id(rule))
                out += [Violation(state.pods[p].key, state.node_names[int(node_of[p])], rule.name, reasons)
                        for p, reasons in rule.settle(mine, node_of)]
    return out


def settled_devices(state: ClusterState, config: SchedulerConfig,
                    node_of: np.ndarray) -> tuple[frozenset[str], list[Violation]]:
    """The devices (``driver/pool/device``) the claims hold once ``node_of`` is in place: the final cluster
    as :func:`check_placement` builds it, the input's pods that ``node_of`` evicts deleted (their claims
    reserved for nobody freed), and the moved and placed pods' claims allocated by :func:`_settle`; with
    the pods whose claims cannot be allocated so."""
    from ..plugins.dynamicresources.claims import claim_book

    snap = _final_snapshot(state, node_of)
    book = claim_book(snap)
    for p in np.flatnonzero((state.pod_node >= 0) & (node_of < 0)).tolist():
        book.delete(p)
    frameworks = {p.scheduler_name: Framework(snap, p) for p in config.profiles}
    moved = (node_of >= 0) & (node_of != state.pod_node)
    refused = _settle(frameworks, snap, np.flatnonzero(moved).tolist(), node_of)
    return frozenset(book.allocated_devices), refused


def checked_rows(state: ClusterState, node_of: np.ndarray, signature_of: np.ndarray,
                 only: np.ndarray | None = None) -> int:
    """How many pods :func:`check_placement` puts through the greedy filters (one per class and node)."""
    moved = (node_of >= 0) & (node_of != state.pod_node)
    if only is not None:
        moved &= only
    rows = np.flatnonzero(moved)
    sig = signature_of[rows]
    keyed = sig >= 0
    pairs = sig[keyed].astype(np.int64) * max(1, state.num_nodes) + node_of[rows][keyed]
    return int(np.count_nonzero(~keyed)) + len(np.unique(pairs))


def _check_rows(frameworks: dict[str, Framework], snap: Snapshot, rows: list[int], node_of: np.ndarray,
                signature_of: np.ndarray | None, tick: Tick | None = None) -> list[Violation]:
    """Each pod of ``rows`` (one per class and node with ``signature_of``) against ``snap`` without it."""
    state = snap.state
    seen: set[tuple[int, int]] = set()
    out: list[Violation] = []
    for k, p in enumerate(rows):
        if tick is not None and k % TICK_EVERY == 0:
            tick()
        node = int(node_of[p])
        if signature_of is not None and signature_of[p] >= 0:
            key = (int(signature_of[p]), node)
            if key in seen:
                continue
            seen.add(key)
        pod = state.pods[p]
        fw = frameworks.get(pod.spec.scheduler_name)
        if fw is None:
            out.append(Violation(pod.key, state.node_names[node], "", ("no profile schedules this pod",)))
            continue
        v = _check_one(fw, snap, p, node, ran_before=state.pod_node[p] >= 0)
        if v is not None:
            out.append(v)
    return out


def check_in_order(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, blocks: list[np.ndarray],
                   signature_of: np.ndarray | None = None,
                   evicted: list[np.ndarray] | None = None) -> list[Violation]:
    """Violations of arrival semantics for the pods of ``blocks`` (pod rows; the blocks in arrival order,
    :mod:`.order`): every other pod of ``node_of`` is in place from the start, each block's pods land
    together and are each checked against the cluster as it is then, without themselves. Pods that stay
    where the input had them are there from the start and are not checked. ``evicted`` (parallel to
    ``blocks``): running pods that are still on their node until that block lands (preemption victims
    leaving with their preemptor, :mod:`.victim_times`); the rows among them that stay are ignored."""
    arriving = [b[(node_of[b] >= 0) & (node_of[b] != state.pod_node[b])] for b in blocks]
    start = node_of.copy()
    for rows in arriving:
        start[rows] = -1
    leaving = [rows[node_of[rows] != state.pod_node[rows]] for rows in evicted or []]
    for rows in leaving:
        start[rows] = state.pod_node[rows]
    snap = _final_snapshot(state, start)
    frameworks = {p.scheduler_name: Framework(snap, p) for p in config.profiles}
    out: list[Violation] = []
    for k, rows in enumerate(arriving):
        for p in leaving[k].tolist() if k < len(leaving) else ():
            snap.remove(p)
        for p in rows.tolist():
            snap.add(p, int(node_of[p]))
        refused = _settle(frameworks, snap, rows.tolist(), node_of)
        keys = {v.pod for v in refused}
        out += refused + _check_rows(frameworks, snap, [p for p in rows.tolist() if state.pods[p].key not in keys],
                                     node_of, signature_of)
    return out


def check_answer(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, reached: np.ndarray,
                 signature_of: np.ndarray | None = None, witnessed: np.ndarray | None = None,
                 blocks: list[np.ndarray] | None = None, evicted: list[np.ndarray] | None = None) -> list[Violation]:
    """Violations of an optimal-mode answer. ``reached`` is greedy mode's final placement: kube-scheduler
    reaches it cycle by cycle, every pod passing the same filters when it arrived (and preemption
    removing its victims first), so an answer equal to it is valid by that run even where a rule checked
    against the final cluster would refuse it (a spread skewed by pods placed after, NodePorts' set
    semantics, an affinity target preempted later: docs/optimal_trust.md). Any other answer is checked
    by batch semantics (:func:`check_placement`), but for the pods of ``witnessed`` (a bool mask over pod
    rows): independent parts of the batch (no rule links their pods to others) left at ``reached``; and
    the pods of ``blocks`` (pod rows per class, in the arrival order the model chose), checked on arrival
    (:func:`check_in_order`, with the victims of ``evicted`` leaving as they say)."""
    if np.array_equal(node_of, reached):
        return []
    if witnessed is not None:
        assert np.array_equal(node_of[witnessed], reached[witnessed])
    others = np.ones(len(node_of), dtype=bool) if witnessed is None else ~witnessed
    for b in blocks or []:
        others[b] = False
    out = check_placement(state, config, node_of, signature_of, others)
    return out + (check_in_order(state, config, node_of, blocks, signature_of, evicted) if blocks else [])


def _check_one(fw: Framework, snap: Snapshot, pod: int, node: int, ran_before: bool) -> Violation | None:
    state = snap.state
    snap.remove(pod)
    for rule in fw.filter_rules.values():
        if hasattr(rule, "recount_node"):
            rule.recount_node(node)
    try:
        cycle = CycleState(pod, snap, fw.profile)
        status, plugin, skipped = fw.pre_filter(cycle)
        if status.code != Code.SUCCESS:
            return Violation(state.pods[pod].key, state.node_names[node], plugin, tuple(status.reasons))
        if status.nodes is not None and not status.nodes[node]:
            return Violation(state.pods[pod].key, state.node_names[node], "NodeAffinity",
                             ("node not in the PreFilter result",))
        if ran_before:
            skipped = skipped | {"NodeName"}
        fp = fw.filter(cycle, np.array([node], dtype=np.int64), skipped)
        if fp.passed[0]:
            return None
        return Violation(state.pods[pod].key, state.node_names[node], fw.filter_names[fp.fail_plugin[0]],
                         tuple(fp.reasons_at(0)))
    finally:
        snap.add(pod, node)
        for rule in fw.filter_rules.values():
            if hasattr(rule, "recount_node"):
                rule.recount_node(node)


def check_budgets(batch, node_of: np.ndarray) -> list[Violation]:  # type: ignore[no-untyped-def]
    """Moves beyond a PodDisruptionBudget's ``disruptionsAllowed``: the Eviction API would refuse them
    (:mod:`optisched.optimal.eviction.pdb_model`). Preemption victims may break a budget; moves may not."""
    from .eviction.pdb_model import budget_use

    return [Violation(u.name, "", "PodDisruptionBudget", (f"{u.moves} moves where disruptionsAllowed is {u.allowed}",))
            for u in budget_use(batch, node_of) if u.moves > u.allowed]
