"""Which pods break a rule the ``repair`` goal repairs, on any placement: the before → after counts of
the summary and the reason each repaired pod moves.

Two sources, each the rule's own check:

* kube-scheduler's filters (``NodeAffinity``, ``TaintToleration``, ``PodTopologySpread``), run for each
  pod as kube would for it arriving last, against the end state without it (with ``--soft``, the
  PodTopologySpread filter over the pod's ScheduleAnyway constraints too: ``ScheduleAnywaySpread``);
* the descheduler's predicates (:mod:`optisched.descheduler.violations`, :mod:`.duplicates`):
  ``InterPodAntiAffinity`` (``RemovePodsViolatingInterPodAntiAffinity``), ``Duplicates``
  (``RemoveDuplicates``), and with ``--soft`` ``PreferredNodeAffinity`` and ``PreferredAntiAffinity``.

The CP-SAT side of the same rules: :mod:`optisched.optimal.user_objectives` (``repair``, ``repair-soft``).
"""
from __future__ import annotations

import numpy as np

from ..descheduler.duplicates import over_average
from ..descheduler.violations import anti_affinity_violated, anti_terms, preferred_affinity_violated
from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.user_objectives import REPAIRED_RULES
from ..policy.eviction import KINDS, Keep, pod_kinds
from ..profile import SchedulerConfig

__all__ = ["HARD", "SOFT", "daemon_only", "violating", "violations"]

HARD = (*REPAIRED_RULES, "InterPodAntiAffinity", "Duplicates")
SOFT = ("ScheduleAnywaySpread", "PreferredNodeAffinity", "PreferredAntiAffinity")
SPREAD = "PodTopologySpread"


def daemon_only(state: ClusterState) -> np.ndarray:
    """bool [P]: DaemonSet and mirror/static pods (a node holding only these counts as empty; they are
    never repaired)."""
    kinds = pod_kinds(state)
    return kinds[:, KINDS.index(Keep.STATIC)] | kinds[:, KINDS.index(Keep.DAEMONSET)]


def _rejects(fw: Framework, cyc: CycleState, node: np.ndarray, soft: bool) -> str | None:
    """The first repaired filter rule that rejects ``node`` for the cycle's pod."""
    for name in REPAIRED_RULES:
        rule = fw.filter_rules.get(name)
        if rule is None or name not in fw.filter_names or rule.pre_filter(cyc).code == Code.SKIP:
            continue
        if rule.filter(cyc, node).code[0] != 0:
            return name
    spread = fw.filter_rules.get(SPREAD)
    if soft and spread is not None and SPREAD in fw.filter_names:
        soft_cyc = CycleState(cyc.pod, cyc.snapshot, fw.profile)
        if spread.pre_filter_soft(soft_cyc).code != Code.SKIP and \
                spread.filter(soft_cyc, node).code[0] == Code.UNSCHEDULABLE:
            return "ScheduleAnywaySpread"
    return None


def _filter_violations(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                       soft: bool) -> dict[int, str]:
    snapshot = Snapshot(state, with_bound=False)
    for p in np.flatnonzero(node_of >= 0).tolist():
        snapshot.add(p, int(node_of[p]))
    frameworks = {p.scheduler_name: Framework(snapshot, p) for p in config.profiles}
    out: dict[int, str] = {}
    for p in np.flatnonzero((node_of >= 0) & ~daemon_only(state)).tolist():
        fw = frameworks.get(state.pods[p].spec.scheduler_name)
        if fw is None:
            continue
        snapshot.remove(p)
        if (name := _rejects(fw, CycleState(p, snapshot, fw.profile), node_of[p:p + 1], soft)) is not None:
            out[p] = name
        snapshot.add(p, int(node_of[p]))
    return out


def violating(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, counted: np.ndarray | None = None,
              soft: bool = False) -> dict[int, str]:
    """Pod row -> the first repaired rule it breaks where ``node_of`` leaves it. ``counted``: the pods the
    descheduler's evictor would count for duplicates (default: every pod but DaemonSet and mirror pods);
    ``soft``: the preferences too."""
    node_of = np.asarray(node_of, dtype=np.int64)
    # a plan asks more than once for one placement (its scope, its moves' reasons, its summary)
    memo = ("reschedule.violating", node_of.tobytes(), soft, None if counted is None else counted.tobytes())
    hit = state.memo.get(memo)
    if hit is not None and hit[0] is config:  # type: ignore[index]
        return dict(hit[1])  # type: ignore[index]
    out = _violating(state, config, node_of, counted, soft)
    state.memo[memo] = (config, out)  # type: ignore[assignment]
    return dict(out)


def _violating(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, counted: np.ndarray | None,
               soft: bool) -> dict[int, str]:
    out = _filter_violations(state, config, node_of, soft)
    placed = node_of >= 0
    rows = np.flatnonzero(placed & ~daemon_only(state)).tolist()
    for p in rows:
        if p not in out and anti_terms(state.pods[p]) and anti_affinity_violated(state, p, node_of, placed):
            out[p] = "InterPodAntiAffinity"
    counted = ~daemon_only(state) if counted is None else counted
    for p in over_average(state, node_of, counted & placed):
        out.setdefault(p, "Duplicates")
    for p in rows if soft else ():
        if p in out:
            continue
        if preferred_affinity_violated(state, p, int(node_of[p])):
            out[p] = "PreferredNodeAffinity"
        elif anti_terms(state.pods[p], True) and anti_affinity_violated(state, p, node_of, placed, preferred=True):
            out[p] = "PreferredAntiAffinity"
    return out


def violations(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, counted: np.ndarray | None = None,
               soft: bool = False) -> dict[str, int]:
    """Per repaired rule, how many pods ``node_of`` leaves breaking it."""
    found = list(violating(state, config, node_of, counted, soft).values())
    return {name: found.count(name) for name in HARD + (SOFT if soft else ())}
