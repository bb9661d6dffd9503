"""PodTopologySpread's shared part (``common.go``, ``plugin.go``): constraints resolved from the pod and
the profile's defaults, which nodes count, and the per-domain counts the filter, the score, the CP-SAT
encoding and the descheduler read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...model.objects import Pod, TaintEffect, TopologySpreadConstraint
from ...model.pod_counts import MatchCounter, Selector, selector_of
from ...model.selectors import selector_error
from ...model.snapshot import Snapshot
from ...model.state import HOSTNAME_LABEL as HOSTNAME
from ...model.state import ClusterState
from ..node_affinity import required_mask
from ..taint_toleration import untolerated

__all__ = ["DO_NOT_SCHEDULE", "HOSTNAME", "REASON", "REASON_MISSING_LABEL", "SCHEDULE_ANYWAY", "NodeEligibility",
           "SpreadConstraint", "constraints_error", "default_selector", "domain_counts", "domain_totals",
           "matching_pods_per_node", "resolve_constraints"]

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


def _parse(c: TopologySpreadConstraint | dict, pod: Pod, selector: Selector | None,
           match_label_keys: bool = True) -> SpreadConstraint:
    if isinstance(c, dict):
        hit = _VALIDATED.get(id(c))
        if hit is None or hit[0] is not c:
            hit = _VALIDATED[id(c)] = (c, TopologySpreadConstraint.model_validate(c))
        c = hit[1]
    if selector is None:
        selector = selector_of(c.label_selector)
        if match_label_keys and c.match_label_keys:  # the MatchLabelKeysInPodTopologySpread gate
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


def resolve_constraints(snapshot: Snapshot, pod: Pod, defaults: tuple[dict, ...], action: str,
                        match_label_keys: bool = True) -> list[SpreadConstraint]:
    """The pod's constraints with ``whenUnsatisfiable == action``; when the pod has none at all, the
    profile's ``defaults`` with that action and the pod's default selector (``buildDefaultConstraints``).
    ``match_label_keys``: the MatchLabelKeysInPodTopologySpread gate (off: ``matchLabelKeys`` is not
    merged into the selector, ``filterTopologySpreadConstraints`` of v1.35.4 and v1.36.2)."""
    own = pod.spec.topology_spread_constraints
    if own:
        return [_parse(c, pod, None, match_label_keys) for c in own if c.when_unsatisfiable == action]
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
