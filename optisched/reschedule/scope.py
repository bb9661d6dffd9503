"""The nodes a goal takes pods from: the target model is built over the pods there only.

Every running pod the eviction policy lets leave may move, but for most goals only the pods on a few
nodes can change the goal's value: ``consolidate`` can empty only a node where every pod other than
DaemonSet and mirror/static pods may leave (a node holding one that must stay is in use whatever the
plan does; the ``pack`` objective counts only the others), and ``repair`` fixes only pods on a node one
of the repaired rules rejects (the descheduler's RemovePodsViolating* strategies evict exactly those,
kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/removepodsviolatingnodeaffinity``). Pods
elsewhere stay, so the model has a variable per class and candidate node for the pods that matter
instead of for all of them: at 1,000 nodes and 20,000 running pods that is what lets the goal tier run.
Their nodes are still targets. What this gives up: a move off another node that only makes room for
a goal's move (the certificate's bound is the narrowed model's). ``balance`` and ``fit-pending`` take
pods from anywhere and are not narrowed.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.state import ClusterState
from ..policy.eviction import KINDS, EvictionPolicy, Keep, pod_kinds
from ..preemption.pdb import PDBLedger
from .goals import Goal

__all__ = ["narrowed", "unbudgeted"]


def unbudgeted(state: ClusterState, policy: EvictionPolicy) -> tuple[EvictionPolicy, list[str]]:
    """``policy`` with the running pods stay that a PodDisruptionBudget of ``disruptionsAllowed`` 0 covers
    (``maxUnavailable: 0``, ``minAvailable`` of every pod, or pods already disrupted): the Eviction API
    refuses them in every wave (each wave gets the budget's ``disruptionsAllowed``, :mod:`.wave_limits`),
    so the target leaves them where they are instead of planning a move no wave can take; with a
    line for the summary per budget."""
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    closed = [b for b, allowed in enumerate(ledger.allowed) if allowed <= 0]
    if not closed:
        return policy, []
    running = np.flatnonzero((state.pod_node >= 0) & policy.verdicts(state).may_leave)
    at, budget = ledger.budget_pairs(running)
    hit = np.isin(budget, closed)
    keys = {state.pods[int(p)].key for p in running[at[hit]].tolist()}
    lines = [f"{int(np.count_nonzero(budget[hit] == b))} running pod(s) stay on their node: PodDisruptionBudget "
             f"{ledger.names[b]} allows no disruption (disruptionsAllowed {ledger.allowed[b]})"
             for b in closed if np.any(budget[hit] == b)]
    return (replace(policy, stay=policy.stay | keys), lines) if keys else (policy, [])


def narrowed(state: ClusterState, policy: EvictionPolicy, goals: list[Goal], bad: dict[int, str]) -> EvictionPolicy:
    """``policy`` with only the pods on the nodes the goals take pods from free to leave (see the module
    docstring; with several goals, the nodes any of them takes pods from: a later goal decides between
    plans equal on the earlier ones, so its pods must be free to move too); unchanged when ``balance`` or
    ``fit-pending`` is among the goals. ``bad``: pod row -> the repaired rule its node breaks."""
    if not goals or any(g not in (Goal.CONSOLIDATE, Goal.REPAIR) for g in goals):
        return policy
    node = state.pod_node
    nodes = np.zeros(0, dtype=np.int64)
    if Goal.CONSOLIDATE in goals:
        kinds = pod_kinds(state)
        daemon = kinds[:, KINDS.index(Keep.STATIC)] | kinds[:, KINDS.index(Keep.DAEMONSET)]
        stays = (node >= 0) & ~policy.verdicts(state).may_leave & ~daemon
        pinned = np.zeros(state.num_nodes, dtype=bool)
        pinned[node[stays]] = True
        nodes = np.flatnonzero(~pinned)
    if Goal.REPAIR in goals and bad:
        nodes = np.union1d(nodes, np.unique(node[list(bad)]))
    names = frozenset(state.node_names[n] for n in nodes.tolist())
    return replace(policy, only_nodes=names if policy.only_nodes is None else names & policy.only_nodes)
