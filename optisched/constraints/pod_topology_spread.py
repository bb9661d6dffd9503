"""PodTopologySpread: PreFilter + Filter (hard constraints), and the helpers its scoring shares.

Upstream (kubernetes v1.35.4), ``pkg/scheduler/framework/plugins/podtopologyspread/``:

* ``plugin.go``: the reasons, ``systemDefaultConstraints`` (in :mod:`optisched.profile.defaults`), and
  ``systemDefaulted`` (defaultingType System);
* ``common.go``: ``filterTopologySpreadConstraints`` (defaults: minDomains 1, nodeAffinityPolicy Honor,
  nodeTaintsPolicy Ignore; ``matchLabelKeys`` values merged into the selector by
  ``mergeLabelSetWithSelector``, a nil selector staying "nothing"), ``buildDefaultConstraints`` (the
  profile's defaults take the selector of :func:`default_selector`, replacing any merged keys; none when
  that selector is empty), ``nodeLabelsMatchSpreadConstraints`` (a node counts only when it carries the
  topology keys of *all* constraints), ``matchNodeInclusionPolicies`` and ``countPodsMatchSelector``
  (same namespace, terminating pods skipped, an empty selector counts nothing);
* ``filtering.go``: ``calPreFilterState`` counts matching pods per domain **per constraint** (since
  v1.33 a constraint's counts are its own even when two constraints share a key), over every node with
  all keys that passes that constraint's inclusion policies; the domains are the values of those nodes;
  ``minMatchNum`` is the smallest domain count, or 0 when there are fewer domains than ``minDomains``.
  ``Filter`` walks the constraints in order: a node without the key is UnschedulableAndUnresolvable
  ``(missing required label)``; ``count + selfMatch - min > maxSkew`` is Unschedulable.
  ``AddPod``/``RemovePod`` (nominated pods, preemption dry runs) move a domain's count by ±1 for a pod
  whose labels match, without the terminating and empty-selector exceptions of the PreFilter count;
* ``pkg/scheduler/framework/plugins/helper/spread.go``: ``DefaultSelector``.

Pods added to or removed from the snapshot after the cycle's PreFilter are applied to its counts as
``AddPod``/``RemovePod`` deltas (the rule keeps a log of snapshot changes), so Filter always answers
for the snapshot as it is now, as upstream's cloned, updated state does.

A hard constraint whose label selector cannot be built (``selectors.selector_error``) makes PreFilter
fail with an Error, as ``calPreFilterState`` does: the cycle ends without a FitError or preemption.
(A soft one fails PreScore the same way: :mod:`optisched.objectives.pod_topology_spread`.)
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from ortools.sat.python import cp_model

from ..framework import ClusterEvent, Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.objects import Pod, TaintEffect, TopologySpreadConstraint
from ..model.pod_counts import MatchCounter, Selector, selector_of
from ..model.pod_index import PodIndex, count_at, count_in
from ..model.selectors import selector_error
from ..model.snapshot import Snapshot
from ..model.state import HOSTNAME_LABEL as HOSTNAME
from ..model.state import ClusterState
from ..optimal.order import Interaction
from ..plugins import names
from ..plugins.node_affinity import required_mask
from ..plugins.taint_toleration import untolerated

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = [
    "DO_NOT_SCHEDULE",
    "HOSTNAME",
    "REASON",
    "REASON_MISSING_LABEL",
    "SCHEDULE_ANYWAY",
    "NodeEligibility",
    "PodTopologySpread",
    "SpreadConstraint",
    "SpreadWorld",
    "constraints_error",
    "default_selector",
    "domain_counts",
    "domain_totals",
    "matching_pods_per_node",
    "resolve_constraints",
]

REASON = "node(s) didn't match pod topology spread constraints"  # ErrReasonConstraintsNotMatch
REASON_MISSING_LABEL = REASON + " (missing required label)"  # ErrReasonNodeLabelNotMatch
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"


# ----------------------------------------------------------------------------- constraints
@dataclass(frozen=True)
class SpreadConstraint:
    """``topologySpreadConstraint``: a constraint with its selector parsed and defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_affinity: bool = True  # nodeAffinityPolicy Honor
    honor_taints: bool = False  # nodeTaintsPolicy Honor


def _namespace(pod: Pod) -> str:
    return pod.metadata.namespace or "default"


class _DefaultSelectors:
    """``helper.DefaultSelector`` per pod, cached for the run (Services and workloads do not change).

    One instance per snapshot (``snapshot.shared``), so the filter and score rules share it."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.state = snapshot.state
        self._cache: dict[tuple, Selector] = {}
        self._wanted: dict[tuple, tuple] = {}  # (id(defaults), action) -> (defaults, those with the action)
        self._parsed: dict[tuple, tuple] = {}  # ((id(defaults), action), id(selector)) -> parsed constraints
        # controllers by (kind, namespace, name), the first of each as the lists hold them
        self._owners: dict[tuple[str, str, str], Any] = {}
        cluster = self.state.cluster
        for kind, objs in (("ReplicationController", cluster.replication_controllers),
                           ("ReplicaSet", cluster.replica_sets), ("StatefulSet", cluster.stateful_sets)):
            for o in objs:
                self._owners.setdefault((kind, o.metadata.namespace or "default", o.metadata.name), o)
        # Service selectors by (namespace, one of their pairs): a pod only checks the plausible ones
        self._services: dict[tuple[str, str, str], list[dict[str, str]]] = {}
        for svc in self.state.cluster.services:
            sel = svc.spec.selector
            if sel:  # nil selects nothing; an empty selector selects every pod but merges no label
                k, v = min(sel.items())
                self._services.setdefault((svc.metadata.namespace or "default", k, v), []).append(sel)

    def of(self, pod: Pod) -> Selector:
        # the answer depends on the namespace, the labels and the controller: replicas share it
        owner = next((o for o in pod.metadata.owner_references if o.controller), None)
        key = (_namespace(pod), frozenset(pod.metadata.labels.items()),
               None if owner is None else (owner.api_version, owner.kind, owner.name))
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._compute(pod)
        return hit

    def constraints(self, pod: Pod, defaults: tuple[dict, ...], action: str) -> list[SpreadConstraint]:
        """``buildDefaultConstraints``: ``defaults`` with ``whenUnsatisfiable == action`` and the pod's
        default selector (none when it is empty). They read nothing else of the pod, so they are
        parsed once per (defaults, action, selector); a new list is returned each time."""
        key = (id(defaults), action)
        wanted = self._wanted.get(key)
        if wanted is None or wanted[0] is not defaults:
            wanted = self._wanted[key] = (defaults, [c for c in defaults if c.get("whenUnsatisfiable") == action])
        if not wanted[1]:
            return []
        sel = self.of(pod)
        if sel.empty:
            return []
        hit = self._parsed.get((key, id(sel)))
        if hit is None or hit[0] is not sel or hit[1] is not defaults:
            hit = self._parsed[(key, id(sel))] = (sel, defaults, [_parse(c, pod, sel) for c in wanted[1]])
        return list(hit[2])

    def _compute(self, pod: Pod) -> Selector:
        ns = _namespace(pod)
        labels: dict[str, str] = {}
        pod_labels = pod.metadata.labels
        for k, v in pod_labels.items():  # GetPodServices: every Service whose selector matches the pod
            for sel in self._services.get((ns, k, v), ()):
                if all(pod_labels.get(a) == b for a, b in sel.items()):
                    labels.update(sel)
        selector = Selector(frozenset(labels.items()))
        owner = next((o for o in pod.metadata.owner_references if o.controller), None)  # GetControllerOf
        if owner is None:
            return selector
        if owner.api_version == "v1" and owner.kind == "ReplicationController":
            rc = self._owners.get((owner.kind, ns, owner.name))
            if rc is not None:
                labels.update(rc.spec.selector)  # labels.Merge: the RC's values win
                return Selector(frozenset(labels.items()))
        elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
            o = self._owners.get((owner.kind, ns, owner.name))
            if o is not None:
                other = selector_of(o.spec.selector)
                if other.nothing:  # a nil selector has no requirements to add
                    return selector
                assert selector.labels is not None and other.labels is not None
                return Selector(selector.labels | other.labels, selector.exprs + other.exprs)
        return selector


def default_selector(snapshot: Snapshot, pod: Pod) -> Selector:
    """``helper.DefaultSelector``: Services selecting ``pod`` (merged), then its controller's selector
    (ReplicationController v1, ReplicaSet or StatefulSet apps/v1, looked up by owner reference)."""
    return snapshot.shared(_DefaultSelectors).of(pod)


_VALIDATED: dict[int, tuple[dict, TopologySpreadConstraint]] = {}  # profile default dicts, validated once


def _parse(c: TopologySpreadConstraint | dict, pod: Pod, selector: Selector | None) -> SpreadConstraint:
    if isinstance(c, dict):
        hit = _VALIDATED.get(id(c))
        if hit is None or hit[0] is not c:
            hit = _VALIDATED[id(c)] = (c, TopologySpreadConstraint.model_validate(c))
        c = hit[1]
    if selector is None:
        selector = selector_of(c.label_selector)
        if c.match_label_keys:  # MatchLabelKeysInPodTopologySpread
            extra = {k: pod.metadata.labels[k] for k in c.match_label_keys if k in pod.metadata.labels}
            selector = selector.with_labels(extra)
    return SpreadConstraint(c.max_skew, c.topology_key, selector, c.min_domains or 1,
                            c.node_affinity_policy == "Honor", c.node_taints_policy == "Honor")


def constraints_error(pod: Pod, action: str) -> str | None:
    """Why ``filterTopologySpreadConstraints`` fails on the pod's own constraints with ``action``."""
    for c in pod.spec.topology_spread_constraints:
        if c.when_unsatisfiable == action and (err := selector_error(c.label_selector)) is not None:
            return err
    return None


def resolve_constraints(snapshot: Snapshot, pod: Pod, defaults: tuple[dict, ...], action: str) -> list[SpreadConstraint]:
    """The pod's constraints with ``whenUnsatisfiable == action``; when the pod has none at all, the
    profile's ``defaults`` with that action and the pod's default selector (``buildDefaultConstraints``)."""
    own = pod.spec.topology_spread_constraints
    if own:
        return [_parse(c, pod, None) for c in own if c.when_unsatisfiable == action]
    if not defaults:
        return []
    return snapshot.shared(_DefaultSelectors).constraints(pod, defaults, action)


# ----------------------------------------------------------------------------- nodes and counts
class NodeEligibility:
    """Which nodes count for a pod's constraints, as masks over all nodes.

    ``all_keys``: the node carries every constraint's topology key (``nodeLabelsMatchSpreadConstraints``);
    ``policy_mask(c)``: the node passes ``c``'s inclusion policies (``matchNodeInclusionPolicies``:
    Honor affinity = the pod's nodeSelector and required node affinity match; Honor taints = the pod
    tolerates the node's NoSchedule and NoExecute taints).

    Nodes are fixed, so each mask is a function of what it reads of the pod (the keys; the nodeSelector
    and node affinity; the tolerations): it is built once per such key and kept in ``state.memo``,
    read-only (callers combine masks into new arrays)."""

    def __init__(self, state: ClusterState, pod: Pod, constraints: list[SpreadConstraint]) -> None:
        self.state = state
        self.pod = pod
        keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
        self.all_keys = _memo(state, ("spread.all_keys", keys), lambda: _all_keys(state, keys))
        self._affinity: np.ndarray | None = None
        self._taints: np.ndarray | None = None

    def policy_mask(self, c: SpreadConstraint) -> np.ndarray:
        if c.honor_affinity:
            if self._affinity is None:
                spec = self.pod.spec
                aff = spec.affinity.node_affinity if spec.affinity else None
                key: tuple = ("spread.affinity", frozenset(spec.node_selector.items()),
                       None if aff is None else aff.model_dump_json())
                self._affinity = _memo(self.state, key, lambda: required_mask(self.state, self.pod))
            if not c.honor_taints:
                return self._affinity
        if c.honor_taints:
            if self._taints is None:
                key = ("spread.taints", tuple(self.pod.spec.tolerations))
                self._taints = _memo(self.state, key, self._tolerated)
            return self._taints if not c.honor_affinity else self._affinity & self._taints
        return _memo(self.state, ("spread.all",), lambda: np.ones(self.state.num_nodes, dtype=bool))

    def _tolerated(self) -> np.ndarray:
        taints, matrix = self.state.distinct_taints
        if not taints:
            return np.ones(self.state.num_nodes, dtype=bool)
        bad = untolerated(self.pod.spec.tolerations, taints, {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})
        return np.asarray(~matrix[:, bad].any(axis=1), dtype=bool)

    def counted(self, c: SpreadConstraint) -> np.ndarray:
        """Nodes whose pods count for ``c`` in filtering: all keys and ``c``'s policies."""
        return self.all_keys & self.policy_mask(c)


def _all_keys(state: ClusterState, keys: tuple[str, ...]) -> np.ndarray:
    mask = np.ones(state.num_nodes, dtype=bool)
    for key in keys:
        mask &= state.label(key).has()
    return mask


def _memo(state: ClusterState, key: tuple, build: Any) -> np.ndarray:
    """``state.memo[key]``, built on first use and made read-only."""
    hit = state.memo.get(key)
    if hit is None:
        hit = state.memo[key] = build()
        hit.flags.writeable = False
    return hit


def matching_pods_per_node(counter: MatchCounter, pod: Pod, selector: Selector) -> np.ndarray:
    """``countPodsMatchSelector`` on every node: placed, non-terminating pods of ``pod``'s namespace that
    ``selector`` matches; an empty selector counts nothing (do not modify the result)."""
    if selector.empty:
        return np.zeros(counter.snapshot.state.num_nodes, dtype=np.int64)
    return counter.counts(frozenset({_namespace(pod)}), selector)


def domain_counts(codes: np.ndarray, counted: np.ndarray, per_node: np.ndarray,
                  num_values: int) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``per_node`` by topology value over the ``counted`` nodes: (count per value code int64,
    domain present per value code) — a domain exists when a counted node carries its value."""
    present = np.bincount(codes[counted], minlength=num_values) > 0
    return domain_totals(codes, counted, per_node, num_values), present


def domain_totals(codes: np.ndarray, counted: np.ndarray, per_node: np.ndarray, num_values: int) -> np.ndarray:
    """``domain_counts``' count per value code alone."""
    return np.bincount(codes[counted], weights=per_node[counted], minlength=num_values).astype(np.int64)


# ----------------------------------------------------------------------------- the filter
@dataclass
class _Hard:
    """One hard constraint's PreFilter state: ``TpValueToMatchNum[i]`` as a vector over value codes."""

    c: SpreadConstraint
    codes: np.ndarray  # int32 [N]: the node's value code for the key, -1 absent
    counted: np.ndarray  # bool [N]: nodes updated by AddPod/RemovePod (all keys + policies)
    counts: np.ndarray  # int64 [V]: matching pods per domain, with the deltas applied so far
    present: np.ndarray  # bool [V]: the constraint's domains (fixed: deltas only touch counted nodes)
    self_match: int


@dataclass
class _FilterState:
    pod: int
    namespace: str
    hard: list[_Hard]
    version: int  # snapshot changes applied up to here (see PodTopologySpread._log)
    minimum: list[int] = field(default_factory=list)


class PodTopologySpread(Plugin):
    """PreFilter + Filter of ``PodTopologySpread``."""

    name = names.POD_TOPOLOGY_SPREAD
    events = frozenset({ClusterEvent.ASSIGNED_POD_ADD, ClusterEvent.ASSIGNED_POD_DELETE})
    depends_on_placement = True  # Filter follows pods added/removed after PreFilter (AddPod/RemovePod)

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        self.state = snapshot.state
        spread = getattr(profile, "spread", None)
        self.defaults: tuple[dict, ...] = spread.effective_default_constraints if spread is not None else ()
        self.counter: MatchCounter = snapshot.shared(MatchCounter)
        # snapshot changes since the last fresh PreFilter: (pod, node, +1/-1); version = base + len
        self._log: list[tuple[int, int, int]] = []
        self._log_base = 0
        self._replaying = True
        snapshot.subscribe(self)
        self._replaying = False

    # snapshot listener: remember what changes after a PreFilter
    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> SpreadWorld:
        """Per hard constraint, the count of the node's domain and the minimum over the domains (the other
        domains keep their counts, so the minimum is theirs or the node's domain's), moved as
        ``AddPod``/``RemovePod`` move them (same namespace, selector match, counted node)."""
        return SpreadWorld(self, cycle, nodes, index)

    def on_add(self, pod: int, node: int) -> None:
        if not self._replaying:
            self._log.append((pod, node, 1))

    def on_remove(self, pod: int, node: int) -> None:
        self._log.append((pod, node, -1))

    @property
    def _version(self) -> int:
        return self._log_base + len(self._log)

    def pre_filter(self, cycle: CycleState) -> Status:
        """``calPreFilterState``; Skip without hard constraints. Called again in the same cycle (as the
        engines do after adding or removing pods) it keeps the cycle's state: Filter applies the changes."""
        if self.name in cycle.data:
            return Status.skip() if cycle.data[self.name] is None else Status()
        # a fresh PreFilter: earlier cycles' changes are no longer needed
        self._log_base += len(self._log)
        self._log.clear()
        pod = cycle.pod_obj
        if (err := constraints_error(pod, DO_NOT_SCHEDULE)) is not None:
            return Status(Code.ERROR, (f"obtaining pod's hard topology spread constraints: {err}",))
        cons = resolve_constraints(self.snapshot, pod, self.defaults, DO_NOT_SCHEDULE)
        cycle.data[self.name] = self._compute(cycle.pod, pod, cons) if cons else None
        return Status() if cons else Status.skip()

    def pre_filter_soft(self, cycle: CycleState) -> Status:
        """PreFilter over the pod's ScheduleAnyway constraints as if they were hard, so Filter then says
        whether a node breaks their maxSkew: what the descheduler's RemovePodsViolatingTopologySpreadConstraint
        checks with ``constraints: [ScheduleAnyway]`` (``reschedule --goal repair --soft``). Skip without any."""
        pod = cycle.pod_obj
        cons = [] if constraints_error(pod, SCHEDULE_ANYWAY) is not None else \
            resolve_constraints(self.snapshot, pod, self.defaults, SCHEDULE_ANYWAY)
        cycle.data[self.name] = self._compute(cycle.pod, pod, cons) if cons else None
        return Status() if cons else Status.skip()

    def _compute(self, row: int, pod: Pod, cons: list[SpreadConstraint]) -> _FilterState:
        elig = NodeEligibility(self.state, pod, cons)
        hard = []
        for c in cons:
            col = self.state.label(c.topology_key)
            counted = elig.counted(c)
            per_node = matching_pods_per_node(self.counter, pod, c.selector)
            counts, present = domain_counts(col.codes, counted, per_node, len(col.values))
            hard.append(_Hard(c, col.codes, counted, counts, present, int(c.selector.matches(pod.metadata.labels))))
        st = _FilterState(row, _namespace(pod), hard, self._version)
        st.minimum = [self._min_match(h) for h in hard]
        return st

    @staticmethod
    def _min_match(h: _Hard) -> int:
        """``minMatchNum``: the smallest domain count (``criticalPaths[0]``, exact as long as the changes
        since PreFilter touch one node, as upstream's are); 0 with fewer domains than minDomains."""
        num_domains = int(h.present.sum())
        if num_domains < h.c.min_domains:
            return 0
        return int(h.counts[h.present].min())

    def _catch_up(self, st: _FilterState) -> None:
        """Apply the snapshot changes since ``st.version`` as ``updateWithPod`` does."""
        if st.version == self._version:
            return
        if st.version < self._log_base:  # a state from an earlier cycle: its base is gone
            fresh = self._compute(st.pod, self.state.pods[st.pod], [h.c for h in st.hard])
            st.hard, st.minimum, st.version = fresh.hard, fresh.minimum, fresh.version
            return
        events = self._log[st.version - self._log_base:]
        pods = self.state.pods
        changed = set()
        for p, node, sign in events:
            obj = pods[p]
            if _namespace(obj) != st.namespace:
                continue
            for i, h in enumerate(st.hard):
                if h.counted[node] and h.c.selector.matches(obj.metadata.labels):
                    h.counts[h.codes[node]] += sign
                    changed.add(i)
        for i in changed:
            st.minimum[i] = self._min_match(st.hard[i])
        st.version = self._version

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        st: _FilterState | None = cycle.data.get(self.name)
        n = len(nodes)
        if st is None:
            return FilterResult.passing(n)
        self._catch_up(st)
        return self._judge(st, nodes, [(h.counts[np.where(h.codes[nodes] >= 0, h.codes[nodes], 0)]
                                         if len(h.counts) else np.zeros(n, dtype=np.int64), minimum)
                                        for h, minimum in zip(st.hard, st.minimum)])

    @staticmethod
    def _judge(st: _FilterState, nodes: np.ndarray, seen: Sequence[tuple[np.ndarray, np.ndarray | int]]) -> FilterResult:
        """Filter's verdict per node from each hard constraint's (matching pods in the node's domain,
        minMatchNum): a node lacking the key is unresolvable, else ``match + selfMatch - min > maxSkew``
        is unschedulable; each node stops at its first failing constraint."""
        n = len(nodes)
        code = np.zeros(n, dtype=np.int8)
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for h, (match, minimum) in zip(st.hard, seen):
            undecided = code == 0
            has = h.codes[nodes] >= 0
            lacks = undecided & ~has
            code[lacks] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            missing |= lacks
            bad = undecided & has & (match + h.self_match - minimum > h.c.max_skew)
            code[bad] = Code.UNSCHEDULABLE
            skewed |= bad
        reasons = [(m, r) for m, r in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if m.any()]
        return FilterResult(code, reasons)

    def filter_each_without_self(self, cycle: CycleState, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Filter codes (int8 [K]) of each placed pod ``rows[k]`` on its own node ``nodes[k]`` against the
        snapshot without that pod: what Filter says for each pod arriving last, as the reschedule summary
        asks of every running pod, in one call for a class of identical pods (same namespace, labels and
        spec as the cycle's pod, whose PreFilter was taken with all of them placed). Each pod's own count
        leaves its domain as ``updateWithPod`` with -1 does (:meth:`_catch_up`: counted node, selector
        matching its labels, not terminating; an empty selector counts nothing), and minMatchNum follows that one domain going down."""
        st: _FilterState | None = cycle.data.get(self.name)
        if st is None:
            return np.zeros(len(rows), dtype=np.int8)
        self._catch_up(st)
        alive = np.array([self.state.pod_meta[2][r] for r in rows.tolist()], dtype=bool)
        seen = []
        for h, minimum in zip(st.hard, st.minimum):
            codes = h.codes[nodes]
            has = codes >= 0
            own = has & h.counted[nodes] & alive & bool(h.self_match) & (not h.c.selector.empty)
            match = (h.counts[np.where(has, codes, 0)] if len(h.counts) else np.zeros(len(rows), dtype=np.int64)) - own
            floor = np.where(own, np.minimum(minimum, match), minimum) \
                if int(h.present.sum()) >= h.c.min_domains else np.full(len(rows), minimum)
            seen.append((match, floor))
        return self._judge(st, nodes, seen).code

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def _hard_of(self, model: BatchModel, c: PodClass) -> list[SpreadConstraint]:
        return resolve_constraints(model.snapshot, model.state.pods[c.rep], self.defaults, DO_NOT_SCHEDULE)

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """A node without every constraint's topology key is out (``missing required label``); a pod
        whose hard constraints cannot be parsed goes nowhere (PreFilter's Error)."""
        for c in model.each(classes, model.LIGHT_EVERY):
            if constraints_error(self.state.pods[c.rep], DO_NOT_SCHEDULE) is not None:
                model.forbid(c, np.ones(self.state.num_nodes, dtype=bool))
                continue
            cons = self._hard_of(model, c)
            if cons:
                model.forbid(c, ~NodeEligibility(self.state, self.state.pods[c.rep], cons).all_keys)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per hard constraint of a class and domain D where the batch places one of its pods:
        ``count(D) + selfMatch·[node not counted] − min ≤ maxSkew``, counts over the constraint's counted
        nodes at the end (fixed pods + every class matching the selector in the pod's namespace), min
        over the constraint's domains (0 with fewer than minDomains). This is the Filter's check for
        each placed pod against the final cluster with the pod removed: removing it lowers its own
        domain by selfMatch, and when that domain was the minimum the check holds anyway."""
        for c, pod, i, h, counted in model.each(self._hard_constraints(model, classes)):
            self._encode_one(model, c, pod, h, counted, i)

    def _hard_constraints(self, model: BatchModel, classes: list[PodClass]) -> Iterator[tuple]:
        """(class, its pod, index, constraint, counted nodes) of every hard constraint of ``classes``."""
        for c in classes:
            cons = self._hard_of(model, c)
            if not cons:
                continue
            pod = self.state.pods[c.rep]
            elig = NodeEligibility(self.state, pod, cons)
            for i, h in enumerate(cons):
                yield c, pod, i, h, elig.counted(h)

    def arrival_interactions(self, model: BatchModel, classes: list[PodClass]) -> list[Interaction]:
        """Each hard constraint counts the classes its selector matches: their pods skew it when they
        come before the carrier (:mod:`optisched.optimal.order`)."""
        out = []
        for c, pod, _, h, counted in self._hard_constraints(model, classes):
            matching = self._matching(model, pod, h)
            if any(d.index != c.index for d in matching):
                out.append(Interaction(c, tuple(matching), self.state.label(h.topology_key).codes, counted))
        return out

    @staticmethod
    def _matching(model: BatchModel, pod: Pod, h: SpreadConstraint) -> list[PodClass]:
        """The classes a constraint counts: same namespace, not terminating, matched by the selector."""
        if h.selector.empty or h.selector.nothing:
            return []
        ns = _namespace(pod)
        return model.classes_where(("spread", ns, h.selector), lambda p: _namespace(p) == ns and
                                   p.metadata.deletion_timestamp is None and
                                   h.selector.matches(p.metadata.labels), h.selector.labels or ())

    def _encode_one(self, model: BatchModel, c: PodClass, pod: Pod, h: SpreadConstraint,
                    counted: np.ndarray, i: int) -> None:
        """One constraint against the final cluster; with an arrival order, also (one literal choosing)
        against the cluster as the carrier's block ends (:meth:`ArrivalOrder.prefix_terms`)."""
        col = self.state.label(h.topology_key)
        fixed, present = domain_counts(col.codes, counted, matching_pods_per_node(self.counter, pod, h.selector),
                                       len(col.values))
        matching = self._matching(model, pod, h)
        order = model.order
        if not order.active(c):
            self._encode_counts(model, c, pod, h, i, counted, model.domain_terms(matching, col.codes, counted),
                                fixed, present, [], "")
            return
        self._encode_counts(model, c, pod, h, i, counted, model.domain_terms(matching, col.codes, counted),
                            fixed, present, order.when(False), "")
        early = order.prefix_terms(c, matching, col.codes, counted, f"spread{i}")
        self._encode_counts(model, c, pod, h, i, counted, early, fixed, present, order.when(True), "o")

    def _encode_counts(self, model: BatchModel, c: PodClass, pod: Pod, h: SpreadConstraint, i: int,
                       counted: np.ndarray, terms: dict, fixed: np.ndarray, present: np.ndarray,
                       enforce: list, tag: str) -> None:
        """``count(D) + selfMatch·[node not counted] − min ≤ maxSkew`` wherever the class places a pod,
        with the counts ``terms`` (value code -> variables) plus the fixed pods, under ``enforce``."""
        col = self.state.label(h.topology_key)
        domains = np.flatnonzero(present).tolist()
        count = {d: model.total(terms.get(d, [])) for d in set(terms) | set(domains)}
        minimum: cp_model.IntVar | int = 0
        if len(domains) >= h.min_domains:
            hi = max(int(fixed[d]) + count[d][1] for d in domains)
            const_min = min((int(fixed[d]) for d in domains if d not in terms), default=hi)
            minimum = model.cp.new_int_var(0, min(hi, const_min), f"min{tag}{c.index}_{i}")
            for d in domains:
                if d in terms:
                    model.cp.add(minimum <= count[d][0] + int(fixed[d]))
        self_match = int(h.selector.matches(pod.metadata.labels))
        for mask, extra, side in ((counted, 0, f"spread{i}+"), (~counted, self_match, f"spread{i}-")):
            for d, y in model.presence(c, h.topology_key, col.codes, mask, side).items():
                expr, ub = count.get(d, (0, 0))
                if int(fixed[d]) + ub + extra <= h.max_skew:
                    continue  # holds even against a minimum of 0
                model.cp.add(expr + int(fixed[d]) + extra - minimum <= h.max_skew).only_enforce_if([y, *enforce])


class SpreadWorld:
    """PodTopologySpread's Filter with each node's domain count and minimum of its own."""

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> None:  # type: ignore[no-untyped-def]
        rule.filter(cycle, nodes[:0])  # brings the cycle's counts up to the snapshot
        st = cycle.data[rule.name]
        self.index = index
        self.hard = []
        for h, minimum in zip(st.hard, st.minimum):
            codes = h.codes[nodes]
            counted = h.counted[nodes]
            cnt = count_at(h.counts, codes)
            few = int(h.present.sum()) < h.c.min_domains  # minMatchNum stays 0
            if few:
                others = np.full(len(nodes), minimum, dtype=np.int64)
            else:
                present = np.flatnonzero(h.present)
                vals = h.counts[present]
                first = int(np.argmin(vals))
                second = int(np.delete(vals, first).min()) if len(vals) > 1 else np.iinfo(np.int64).max
                others = np.where(codes == present[first], second, int(vals[first]))
                # a node that is not counted never moves a count: its world keeps the cycle's minimum
                others = np.where(counted, others, minimum)
            members = index.matching(frozenset({st.namespace}), h.c.selector, alive_only=False)
            self.hard.append((h, codes, counted, cnt, others, few, members))

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for h, _, counted, cnt, _, _, members in self.hard:
            hit = count_in(self.index, members, pods, sign) * counted[pos]
            np.add.at(cnt, pos, hit)

    def check(self, qs: np.ndarray) -> FilterResult:
        n = len(qs)
        code = np.zeros(n, dtype=np.int8)
        missing = np.zeros(n, dtype=bool)
        skewed = np.zeros(n, dtype=bool)
        for h, codes, counted, cnt, others, few, _ in self.hard:
            undecided = code == 0
            has = codes[qs] >= 0
            lacks = undecided & ~has
            code[lacks] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            missing |= lacks
            match = cnt[qs]
            minimum = others[qs] if few else np.where(counted[qs], np.minimum(others[qs], match), others[qs])
            bad = undecided & has & (match + h.self_match - minimum > h.c.max_skew)
            code[bad] = Code.UNSCHEDULABLE
            skewed |= bad
        return FilterResult(code, [(m, r) for m, r in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if m.any()])
