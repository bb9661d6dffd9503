"""``ClusterState``: the cluster compiled into numpy arrays for the engines.

Integer units throughout (millicores, bytes, counts). Nodes keep input order;
the engines derive kube-scheduler's nodeTree order from it. The state is
read-only; engines place pods on a :class:`~optisched.model.snapshot.Snapshot`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .cluster import Cluster
from .objects import Node, Pod, Taint
from .quantity import to_scheduler_units
from .requests import PodRequests, requests_of

__all__ = [
    "CORE_RESOURCES",
    "HOSTNAME_LABEL",
    "REGION_LABEL",
    "ZONE_LABEL",
    "ClusterState",
    "LabelColumn",
    "compile_cluster",
    "for_release",
    "resized",
    "without_resize",
]

CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
DEFAULT_RELEASE = "1.35"  # profile.releases.DEFAULT_VERSION, which this layer does not import


@dataclass(frozen=True)
class LabelColumn:
    """One label key over all nodes: a value code per node (-1 = label absent) and the vocabulary."""

    codes: np.ndarray  # int32 [N]
    values: tuple[str, ...]  # code -> value
    index: dict[str, int]  # value -> code

    def has(self) -> np.ndarray:
        return self.codes >= 0

    def isin(self, wanted: list[str] | tuple[str, ...]) -> np.ndarray:
        codes = [self.index[v] for v in wanted if v in self.index]
        if not codes:
            return np.zeros(len(self.codes), dtype=bool)
        return np.isin(self.codes, codes)

    @cached_property
    def as_int(self) -> np.ndarray:
        """Values parsed as int64 (``strconv.ParseInt``); float NaN where absent or not an integer."""
        parsed = np.full(len(self.values), np.nan)
        for i, v in enumerate(self.values):
            try:
                parsed[i] = int(v, 10)
            except ValueError:
                pass
        out = np.full(len(self.codes), np.nan)
        present = self.codes >= 0
        out[present] = parsed[self.codes[present]]
        return out


@dataclass
class ClusterState:
    """Compiled cluster. Pod rows: every pod of the cluster, in input order (bound and pending)."""

    cluster: Cluster
    node_names: list[str]
    node_index: dict[str, int]
    resources: list[str]  # column names of allocatable / pod_requests
    allocatable: np.ndarray  # int64 [N, R]
    unschedulable: np.ndarray  # bool [N]
    pods: list[Pod]
    pod_index: dict[str, int]  # "ns/name" -> row
    pod_requests: np.ndarray  # int64 [P, R] (the "pods" column is 1)
    pod_nonzero: np.ndarray  # int64 [P, 2]: (milli-cpu, memory) with scoring defaults
    pod_node: np.ndarray  # int64 [P]: node row of bound pods, -1 for pending
    pod_priority: np.ndarray  # int64 [P]
    _labels: dict[str, LabelColumn] = field(default_factory=dict, repr=False)
    # node masks that rules derive from the fixed nodes and a key of what they read of a pod
    memo: dict[tuple, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def nodes(self) -> list[Node]:
        return self.cluster.nodes

    @property
    def release(self) -> str:
        """The requests the state holds (``compile_cluster``): a minor release, or one with the gates that
        change its requests (:func:`.requests.requests_key`)."""
        return self.cluster.release or DEFAULT_RELEASE

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    def resource_col(self, name: str) -> int:
        return self.resources.index(name)

    def label(self, key: str) -> LabelColumn:
        """The column of one node label key (built once, cached)."""
        col = self._labels.get(key)
        if col is None:
            index: dict[str, int] = {}
            codes = np.full(self.num_nodes, -1, dtype=np.int32)
            for i, node in enumerate(self.nodes):
                v = node.metadata.labels.get(key)
                if v is not None:
                    codes[i] = index.setdefault(v, len(index))
            col = LabelColumn(codes, tuple(index), index)
            self._labels[key] = col
        return col

    @cached_property
    def taints(self) -> list[tuple[Taint, ...]]:
        return [tuple(n.spec.taints) for n in self.nodes]

    @cached_property
    def distinct_taints(self) -> tuple[list[Taint], np.ndarray]:
        """Every distinct taint and a bool matrix [N, T] of which node carries it."""
        index: dict[tuple, int] = {}
        pairs = []
        for i, ts in enumerate(self.taints):
            for t in ts:
                pairs.append((i, index.setdefault((t.key, t.value, t.effect), len(index))))
        mat = np.zeros((self.num_nodes, len(index)), dtype=bool)
        for i, j in pairs:
            mat[i, j] = True
        taints = [Taint(key=k, value=v, effect=e) for (k, v, e) in index]
        return taints, mat

    @cached_property
    def pod_meta(self) -> tuple[list[dict[str, str]], list[str], list[bool]]:
        """Per pod row: its labels, its namespace ("default" when unset), and whether it is not
        terminating (no ``deletionTimestamp``): what the label indexes read, fixed for a run."""
        return ([p.metadata.labels for p in self.pods], [p.metadata.namespace or "default" for p in self.pods],
                [p.metadata.deletion_timestamp is None for p in self.pods])

    @cached_property
    def pending(self) -> list[int]:
        return [i for i in range(len(self.pods)) if self.pod_node[i] < 0]


def _resource_names(cluster: Cluster, pod_reqs: list[dict[str, int]]) -> list[str]:
    extra: dict[str, None] = {}
    for n in cluster.nodes:
        for k in n.allocatable:
            extra.setdefault(k, None)
    for r in pod_reqs:
        for k in r:
            extra.setdefault(k, None)
    return list(CORE_RESOURCES) + sorted(k for k in extra if k not in CORE_RESOURCES)


def _resources_key(pod: Pod) -> tuple:
    """Everything effective requests depend on, hashable: pods of one template share it (a pod whose
    status reports resources, one being resized, gets a key of its own)."""
    def c_key(c):  # type: ignore[no-untyped-def]
        return (c.name, tuple(c.resources.requests.items()), tuple(c.resources.limits.items()),
                c.restart_policy)

    res = pod.spec.resources
    return (tuple(c_key(c) for c in pod.spec.containers), tuple(c_key(c) for c in pod.spec.init_containers),
            tuple(pod.spec.overhead.items()),
            (tuple(res.requests.items()), tuple(res.limits.items())) if res is not None else None,
            pod.key if resized(pod) else None)


def _requests(pods: list[Pod], requests: PodRequests) -> tuple[list[dict[str, int]], list[tuple[int, int]]]:
    cache: dict[tuple, tuple[dict[str, int], tuple[int, int]]] = {}
    reqs, nonzero = [], []
    for p in pods:
        key = _resources_key(p)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = (requests.requests(p), requests.non_zero(p))
        reqs.append(hit[0])
        nonzero.append(hit[1])
    return reqs, nonzero


def compile_cluster(cluster: Cluster, release: str | None = None) -> ClusterState:
    """Compile a loaded :class:`Cluster` into arrays (pods in phase Succeeded/Failed hold nothing), the
    pods' requests as kube-scheduler ``release`` computes them (:data:`.requests.RELEASE_REQUESTS`).
    ``release`` None: the one ``cluster.release`` names (a state compiled before, copied with other
    objects), else 1.35; the state's cluster keeps it, so a state compiled again from it follows it too."""
    release = release or cluster.release or DEFAULT_RELEASE
    if cluster.release != release:
        cluster = replace(cluster, release=release)
    node_names = [n.metadata.name for n in cluster.nodes]
    node_index = {n: i for i, n in enumerate(node_names)}
    pods = [p for p in cluster.pods if p.status.phase not in ("Succeeded", "Failed")]
    reqs, nonzero_list = _requests(pods, requests_of(release))
    resources = _resource_names(cluster, reqs)
    col = {r: i for i, r in enumerate(resources)}
    alloc = np.zeros((len(node_names), len(resources)), dtype=np.int64)
    for i, n in enumerate(cluster.nodes):
        for k, q in n.allocatable.items():
            alloc[i, col[k]] = to_scheduler_units(k, q)
    preq = np.zeros((len(pods), len(resources)), dtype=np.int64)
    for i, r in enumerate(reqs):
        for k, v in r.items():
            if k != "pods":
                preq[i, col[k]] = v
    preq[:, col["pods"]] = 1
    nonzero = np.array(nonzero_list, dtype=np.int64).reshape(len(pods), 2)
    pod_node = np.array([node_index[p.spec.node_name] if p.spec.node_name else -1 for p in pods], dtype=np.int64)
    prio = np.array([p.spec.priority or 0 for p in pods], dtype=np.int64)
    return ClusterState(
        cluster=cluster, node_names=node_names, node_index=node_index, resources=resources, allocatable=alloc,
        unschedulable=np.array([n.spec.unschedulable for n in cluster.nodes], dtype=bool),
        pods=pods, pod_index={p.key: i for i, p in enumerate(pods)}, pod_requests=preq, pod_nonzero=nonzero,
        pod_node=pod_node, pod_priority=prio,
    )


def for_release(state: ClusterState, release: str) -> ClusterState:
    """``state`` with the requests kube-scheduler ``release`` computes: itself when it holds them, else
    compiled again (same rows); what an engine asks of a state its profile's release meets."""
    return state if state.release == release else compile_cluster(state.cluster, release)


def resized(pod: Pod) -> bool:
    """Whether the pod's status reports resources (an in-place resize the requests follow)."""
    st = pod.status
    return st.resources is not None or any(s.resources is not None
                                           for s in (*st.container_statuses, *st.init_container_statuses))


def without_resize(state: ClusterState, pods: list[Pod]) -> tuple[np.ndarray, np.ndarray]:
    """The request and non-zero rows of ``pods`` (new pods: no resize in progress) in ``state``'s columns, as
    its release computes them."""
    calc = requests_of(state.release)
    req = np.zeros((len(pods), len(state.resources)), dtype=np.int64)
    nonzero = np.zeros((len(pods), 2), dtype=np.int64)
    for i, pod in enumerate(pods):
        for k, v in calc.requests(pod).items():
            if k != "pods" and k in state.resources:  # a replacement requests no resource its spec did not
                req[i, state.resource_col(k)] = v
        nonzero[i] = calc.non_zero(pod)
    req[:, state.resource_col("pods")] = 1
    return req, nonzero
