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

from dataclasses import replace

import numpy as np

from ..descheduler.duplicates import over_average
from ..descheduler.violations import anti_affinity_violated_each, anti_terms, matched_by, preferred_weights
from ..framework import Code, CycleState
from ..greedy.framework_runner import Framework
from ..model.snapshot import Snapshot
from ..model.state import ClusterState
from ..optimal.classes import signature
from ..optimal.user_objectives import REPAIRED_RULES
from ..plugins.podtopologyspread.common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, resolve_constraints
from ..policy.eviction import KINDS, Keep, pod_kinds
from ..profile import SchedulerConfig

__all__ = ["HARD", "SOFT", "daemon_only", "filter_violations_per_pod", "landing_violations", "placed_snapshot",
           "violating", "violations"]

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


def placed_snapshot(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                     rules_only: bool) -> tuple[Snapshot, dict[str, Framework]]:
    """A snapshot with every pod where ``node_of`` puts it, and per profile its framework (with
    ``rules_only``, only the repaired filter rules are built: the others' indexes are not needed)."""
    snapshot = Snapshot(state, with_bound=False)
    for p in np.flatnonzero(node_of >= 0).tolist():
        snapshot.add(p, int(node_of[p]))

    def repaired(prof):  # type: ignore[no-untyped-def]
        if not rules_only:
            return prof
        keep = {pt: tuple(n for n in prof.plugins.get(pt, ()) if n in REPAIRED_RULES) for pt in ("preFilter", "filter")}
        return replace(prof, plugins={**prof.plugins, **keep, "preScore": (), "score": ()})
    return snapshot, {p.scheduler_name: Framework(snapshot, repaired(p)) for p in config.profiles}


def filter_violations_per_pod(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                              soft: bool) -> dict[int, str]:
    """The plain path :func:`_filter_violations` is tested against: each pod taken out of the
    snapshot, its own node checked by the filters, the pod put back."""
    snapshot, frameworks = placed_snapshot(state, config, node_of, False)
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


def _class_rejects(fw: Framework, snapshot: Snapshot, rows: np.ndarray, nodes: np.ndarray,
                   soft: bool) -> np.ndarray:
    """:func:`_rejects` for identical pods ``rows`` on their nodes, each against the snapshot without
    it, in one call per rule: the node-only rules' Filter over the class's nodes, PodTopologySpread's
    :meth:`~optisched.plugins.podtopologyspread.filtering.PodTopologySpread.filter_each_without_self`.
    object [K]: the first rule rejecting each pod's node, or None."""
    cyc = CycleState(int(rows[0]), snapshot, fw.profile)
    out = np.full(len(rows), None, dtype=object)

    def mark(name: str, codes: np.ndarray) -> None:
        out[(out == None) & codes] = name
    for name in REPAIRED_RULES:
        rule = fw.filter_rules.get(name)
        if rule is None or name not in fw.filter_names or rule.pre_filter(cyc).code == Code.SKIP:
            continue
        codes = rule.filter_each_without_self(cyc, rows, nodes) if getattr(rule, "depends_on_placement", False) \
            else rule.filter(cyc, nodes).code
        mark(name, codes != 0)
    spread = fw.filter_rules.get(SPREAD)
    if soft and spread is not None and SPREAD in fw.filter_names:
        soft_cyc = CycleState(int(rows[0]), snapshot, fw.profile)
        if spread.pre_filter_soft(soft_cyc).code != Code.SKIP:
            mark("ScheduleAnywaySpread", spread.filter_each_without_self(soft_cyc, rows, nodes) == Code.UNSCHEDULABLE)
    return out


def _counting(state: ClusterState, snapshot: Snapshot, frameworks: dict[str, Framework], p: int, rows: np.ndarray,
              soft: bool) -> np.ndarray:
    """The pods of ``rows`` that ``p`` counts for (:func:`_touched`), asked once per class of identical
    pods and class of ``p`` per compiled cluster (it reads their specs, namespaces and labels only, which
    a class shares): a landing's zone holds about 2,000 classes at 1,000 nodes, and a plan checks
    thousands of landings."""
    class_of = _class_ids(state)
    first = state.memo.get(("reschedule.class_rep",))
    if first is None:
        first = state.memo[("reschedule.class_rep",)] = np.unique(class_of, return_index=True)[1]
    known: dict[int, np.ndarray] = state.memo.setdefault(("reschedule.touched", soft), {})
    row = known.get(int(class_of[p]))
    if row is None:
        row = known[int(class_of[p])] = np.full(len(first), -1, dtype=np.int8)
    cls = class_of[rows]
    for c in np.unique(cls[row[cls] < 0]).tolist():
        row[c] = _touched(state, snapshot, frameworks, int(first[c]), p, soft)
    return rows[row[cls] == 1]


def _class_ids(state: ClusterState) -> np.ndarray:
    """int [P]: each pod's class of identical pods (:func:`optisched.optimal.classes.signature`), kept
    per compiled cluster."""
    class_of = state.memo.get(("reschedule.class_of",))
    if class_of is None:
        index: dict[tuple, int] = {}
        class_of = np.array([index.setdefault(signature(p), len(index)) for p in state.pods], dtype=np.int64)
        state.memo[("reschedule.class_of",)] = class_of
    return class_of


def _classes(state: ClusterState, rows: np.ndarray) -> list[np.ndarray]:
    """``rows`` grouped into classes of identical pods (:func:`optisched.optimal.classes.signature`,
    which holds the scheduler name too), each in row order; the class of every pod is kept per state."""
    ids = _class_ids(state)[rows]
    order = np.argsort(ids, kind="stable")
    cuts = np.flatnonzero(np.diff(ids[order])) + 1
    return np.split(rows[order], cuts) if len(rows) else []


def _filter_violations(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray,
                       soft: bool) -> dict[int, str]:
    """Per running pod (DaemonSet and mirror pods aside), the first repaired filter rule that rejects its
    node with the pod itself taken out, as :func:`filter_violations_per_pod` finds it, but once per class
    of identical pods (:func:`_classes`), vectorized over the class's pods."""
    snapshot, frameworks = placed_snapshot(state, config, node_of, True)
    return _filter_among(state, snapshot, frameworks, np.flatnonzero((node_of >= 0) & ~daemon_only(state)), soft)


def _filter_among(state: ClusterState, snapshot: Snapshot, frameworks: dict[str, Framework], rows: np.ndarray,
                  soft: bool) -> dict[int, str]:
    """:func:`_filter_violations` for the pods ``rows`` of ``snapshot`` only (the counts of every domain
    are the whole snapshot's)."""
    out: dict[int, str] = {}
    for members in _classes(state, rows):
        fw = frameworks.get(state.pods[int(members[0])].spec.scheduler_name)
        if fw is not None:
            found = _class_rejects(fw, snapshot, members, snapshot.node_of[members], soft)
            out.update((p, name) for p, name in zip(members.tolist(), found.tolist()) if name is not None)
    return dict(sorted(out.items()))


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
    rows = np.flatnonzero((node_of >= 0) & ~daemon_only(state))
    counted = ~daemon_only(state) if counted is None else counted
    duplicates = over_average(state, node_of, counted & (node_of >= 0))
    return _among(state, _filter_violations(state, config, node_of, soft), rows, node_of, soft, duplicates)


def _among(state: ClusterState, found: dict[int, str], rows: np.ndarray, node_of: np.ndarray, soft: bool,
           duplicates: list[int] = ()) -> dict[int, str]:  # type: ignore[assignment]
    """``found`` (the filters' verdicts for ``rows``) with the descheduler's predicates added, each pod
    under the first rule it breaks: required anti-affinity, then ``duplicates``, then with ``soft`` the
    preferences."""
    out = dict(found)
    anti, preferred, preferred_anti = _descheduler_predicates(state, rows, node_of, soft)
    for p in rows.tolist():
        if p not in out and p in anti:
            out[p] = "InterPodAntiAffinity"
    for p in duplicates:
        out.setdefault(p, "Duplicates")
    for p in rows.tolist() if soft else ():
        if p in out:
            continue
        if p in preferred:
            out[p] = "PreferredNodeAffinity"
        elif p in preferred_anti:
            out[p] = "PreferredAntiAffinity"
    return out


def _descheduler_predicates(state: ClusterState, rows: np.ndarray, node_of: np.ndarray,
                            soft: bool) -> tuple[set[int], set[int], set[int]]:
    """The pods of ``rows`` whose required anti-affinity is violated where ``node_of`` puts them, and with
    ``soft`` those whose preferred node affinity or preferred anti-affinity is: the descheduler's
    predicates, taken once per class of identical pods."""
    placed = node_of >= 0
    anti: set[int] = set()
    preferred: set[int] = set()
    preferred_anti: set[int] = set()
    for members in _classes(state, rows):
        rep = state.pods[int(members[0])]
        if anti_terms(rep):
            anti.update(members[anti_affinity_violated_each(state, members, node_of, placed)].tolist())
        if not soft:
            continue
        if (found := preferred_weights(state, int(members[0]))) is not None:
            preferred.update(members[found[0][node_of[members]] < found[1]].tolist())
        if anti_terms(rep, True):
            preferred_anti.update(members[anti_affinity_violated_each(state, members, node_of, placed, True)].tolist())
    return anti, preferred, preferred_anti


def violations(state: ClusterState, config: SchedulerConfig, node_of: np.ndarray, counted: np.ndarray | None = None,
               soft: bool = False) -> dict[str, int]:
    """Per repaired rule, how many pods ``node_of`` leaves breaking it."""
    found = list(violating(state, config, node_of, counted, soft).values())
    return {name: found.count(name) for name in HARD + (SOFT if soft else ())}


def _topology_keys(state: ClusterState, config: SchedulerConfig) -> tuple[str, ...]:
    """The node label keys a repaired rule counts pods by: every topology spread constraint's (the
    profiles' default constraints too) and every anti-affinity term's (required and preferred), and the
    node itself (``kubernetes.io/hostname``)."""
    memo = ("reschedule.topology_keys", id(config))
    keys = state.memo.get(memo)
    if keys is None:
        found = {"kubernetes.io/hostname"}
        for prof in config.profiles:
            spread = getattr(prof, "spread", None)
            found.update(c["topologyKey"] for c in (spread.effective_default_constraints if spread else ()))
        for pod in state.pods:
            found.update(c.topology_key for c in pod.spec.topology_spread_constraints)
            found.update(t.topology_key for preferred in (False, True) for t in anti_terms(pod, preferred))
        keys = state.memo[memo] = tuple(sorted(found))  # type: ignore[assignment]
    return keys  # type: ignore[return-value]


def _near(state: ClusterState, config: SchedulerConfig, node: int) -> np.ndarray:
    """bool [N]: the nodes that share a topology domain with ``node`` for some :func:`_topology_keys` key
    (``node`` itself included): where a pod arriving at ``node`` changes a domain's count."""
    out = np.zeros(state.num_nodes, dtype=bool)
    out[node] = True
    for key in _topology_keys(state, config):
        codes = state.label(key).codes
        if codes[node] >= 0:
            out |= codes == codes[node]
    return out


def _touched(state: ClusterState, snapshot: Snapshot, frameworks: dict[str, Framework], q: int, p: int,
             soft: bool) -> bool:
    """Whether pod ``p`` counts for a rule of pod ``q`` that reads other pods: a topology spread
    constraint of ``q`` (its own, or the profile's defaults; with ``soft`` ScheduleAnyway ones too) whose
    selector matches ``p`` in ``q``'s namespace, or an anti-affinity term of ``q`` that matches ``p``.
    Only such a ``q``'s verdict can change when ``p`` arrives (node affinity and taints read the node)."""
    pod, other = state.pods[q], state.pods[p]
    rule = (fw := frameworks.get(pod.spec.scheduler_name)) is not None and fw.filter_rules.get(SPREAD)
    if rule and (pod.metadata.namespace or "default") == (other.metadata.namespace or "default"):
        for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY) if soft else (DO_NOT_SCHEDULE,):
            if any(c.selector.matches(other.metadata.labels) for c in
                   resolve_constraints(snapshot, pod, rule.defaults, action, rule.match_label_keys)):
                return True
    return any(matched_by(state, term, pod)[p] for preferred in ((False, True) if soft else (False,))
               for term in anti_terms(pod, preferred))


def landing_violations(state: ClusterState, config: SchedulerConfig, snapshot: Snapshot,
                       frameworks: dict[str, Framework], p: int, soft: bool = False) -> dict[int, str]:
    """The violations pod ``p`` creates where ``snapshot`` has it: pod row -> the first repaired rule,
    for the pods that break one with ``p`` there and not without it (``p`` itself when it breaks one
    there). Counted as :func:`violating` counts them (the filters per class of identical pods, the
    descheduler's anti-affinity predicate; Duplicates aside: :func:`.start.duplicate_check`), but only
    for ``p`` and the pods a topology domain of ``p``'s node holds with a rule ``p`` counts for
    (:func:`_touched`), the only ones its arrival can change: another pod's DoNotSchedule spread pushed
    over maxSkew in that domain, another pod's anti-affinity term newly matched there (an arrival only
    raises a domain's count, so no other domain's skew grows).
    ``frameworks``: per profile, over ``snapshot`` (:func:`placed_snapshot`'s, or greedy mode's own)."""
    node = int(snapshot.node_of[p])
    on = snapshot.node_of >= 0
    near = np.flatnonzero(on & _near(state, config, node)[np.maximum(snapshot.node_of, 0)] & ~daemon_only(state))
    rows = np.concatenate([[p], _counting(state, snapshot, frameworks, p, near[near != p], soft)])
    rows = np.sort(rows.astype(np.int64))
    with_p = _among(state, _filter_among(state, snapshot, frameworks, rows, soft), rows, snapshot.node_of, soft)
    snapshot.remove(p)
    try:
        rest = rows[rows != p]
        without = _among(state, _filter_among(state, snapshot, frameworks, rest, soft), rest, snapshot.node_of, soft)
    finally:
        snapshot.add(p, node)
    return {q: rule for q, rule in with_p.items() if q not in without}
