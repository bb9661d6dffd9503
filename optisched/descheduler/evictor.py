"""DefaultEvictor as the descheduler runs it: who may be evicted, in which order, and how many.

Follows kubernetes-sigs/descheduler v0.34.0: ``pkg/framework/plugins/defaultevictor/defaultevictor.go``
(``Filter`` and ``PreEvictionFilter`` with ``nodeFit``), ``pkg/descheduler/evictions/evictions.go`` (the
``maxNoOfPodsToEvictPerNode`` / ``...PerNamespace`` / ``...Total`` limits) and ``pkg/descheduler/pod/pods.go``
``SortPodsBasedOnPriorityLowToHigh`` (lowest priority first, then BestEffort, Burstable, Guaranteed). The
protections themselves are :mod:`optisched.policy.eviction`'s, the other constraints :mod:`.constraints`'s,
nodeFit :mod:`.node_fit`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ..model.objects import Pod
from ..model.state import ClusterState
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig
from .constraints import EvictorConstraints
from .node_fit import NodeFit

__all__ = ["Evictor", "EvictorArgs", "Limits", "qos_rank", "sort_low_to_high"]


@dataclass(frozen=True)
class EvictorArgs:
    """``DefaultEvictorArgs`` fields optisched models."""

    node_fit: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    constraints: EvictorConstraints = field(default_factory=EvictorConstraints)


@dataclass(frozen=True)
class Limits:
    """The policy's eviction limits for one descheduling cycle (None: no limit)."""

    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


def qos_rank(pod: Pod) -> int:
    """0 BestEffort, 1 Burstable, 2 Guaranteed (``v1qos.GetPodQOS`` over the app containers)."""
    cs = pod.spec.containers
    if all(not c.resources.requests and not c.resources.limits for c in cs):
        return 0
    guaranteed = all(c.resources.limits.get(r) and c.resources.requests.get(r, c.resources.limits[r]) ==
                     c.resources.limits[r] for c in cs for r in ("cpu", "memory"))
    return 2 if guaranteed else 1


def sort_low_to_high(state: ClusterState, rows: list[int]) -> list[int]:
    """``SortPodsBasedOnPriorityLowToHigh``: priority ascending, then QoS; input order otherwise."""
    return sorted(rows, key=lambda p: (int(state.pod_priority[p]), qos_rank(state.pods[p])))


@dataclass
class Evictor:
    """One descheduling cycle's evictor: filters, nodeFit, limits and the evictions made so far."""

    state: ClusterState
    config: SchedulerConfig
    args: EvictorArgs = EvictorArgs()
    limits: Limits = Limits()
    evicted: list[tuple[int, str]] = field(default_factory=list)  # (pod row, strategy)
    _per_node: dict[int, int] = field(default_factory=dict)
    _per_ns: dict[str, int] = field(default_factory=dict)
    _rows: set[int] = field(default_factory=set)  # the evicted pod rows, for constant-time lookups
    now: datetime | None = None  # minPodAge's clock (None: the wall clock)
    _fit: NodeFit | None = None

    def __post_init__(self) -> None:
        policy = EvictionPolicy(evict_local_storage=self.args.evict_local_storage_pods,
                                evict_system_critical=self.args.evict_system_critical_pods)
        ok = policy.verdicts(self.state).may_leave
        if self.args.constraints.evict_failed_bare_pods:  # a Failed bare pod may go (FailedBarePods lifted)
            failed = np.array([p.status.phase == "Failed" for p in self.state.pods], dtype=bool)
            ok |= failed & replace(policy, evict_bare_pods=True).verdicts(self.state).may_leave
        ok &= self.args.constraints.mask(self.state, not self.args.evict_system_critical_pods, self.now)
        self._filter = ok & (self.state.pod_node >= 0)

    def filter(self, p: int) -> bool:
        """``DefaultEvictor.Filter``: the pod's kind and priority allow its eviction."""
        return bool(self._filter[p]) and not self.is_evicted(p)

    def is_evicted(self, p: int) -> bool:
        return p in self._rows

    def fits_elsewhere(self, p: int) -> bool:
        """``PodFitsAnyOtherNode``: some node other than its own passes the nodeFit filters."""
        others = np.ones(self.state.num_nodes, dtype=bool)
        others[self.state.pod_node[p]] = False
        return self.fits_on(p, others)

    def fits_on(self, p: int, allowed: np.ndarray) -> bool:
        """Some node of ``allowed`` (bool per node) passes ``NodeFit`` for pod ``p`` (:mod:`.node_fit`)."""
        if self._fit is None:
            self._fit = NodeFit(self.state, self.config)
        return bool(self._fit.mask(p, allowed).any())

    def pre_eviction_filter(self, p: int) -> bool:
        """``DefaultEvictor.PreEvictionFilter``: with ``nodeFit``, the pod must fit on another node."""
        return not self.args.node_fit or self.fits_elsewhere(p)

    def limit_reached(self, node: int | None = None, namespace: str | None = None) -> bool:
        lim = self.limits
        if lim.total is not None and len(self.evicted) >= lim.total:
            return True
        if node is not None and lim.per_node is not None and self._per_node.get(node, 0) >= lim.per_node:
            return True
        return namespace is not None and lim.per_namespace is not None and \
            self._per_ns.get(namespace, 0) >= lim.per_namespace

    def evict(self, p: int, strategy: str) -> bool:
        """``PodEvictor.EvictPod``: record the eviction unless a limit refuses it."""
        node, ns = int(self.state.pod_node[p]), self.state.pods[p].metadata.namespace or "default"
        if self.is_evicted(p) or self.limit_reached(node, ns):
            return False
        self.evicted.append((p, strategy))
        self._rows.add(p)
        self._per_node[node] = self._per_node.get(node, 0) + 1
        self._per_ns[ns] = self._per_ns.get(ns, 0) + 1
        return True
