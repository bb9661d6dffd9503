"""NodePorts: a pod's host ports must be free on the node.

Upstream (v1.35): ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``, ``util.GetHostPorts``
(containers and sidecar init containers) and ``HostPortInfo``
(``pkg/scheduler/framework/types.go``): hostIP defaults to 0.0.0.0, which conflicts with every IP
on the same protocol and port; protocol defaults to TCP. Used ports are kept per node as
upstream's set: adding a pod marks its ports used, removing a pod frees them, even when another pod on
the node declared the same port. The batch encoding and the checker (:meth:`NodePorts.recount_node`)
follow that set: a pod that leaves a node frees its ports there. This differs from counting the pods
that stay (as the kubelet's admission does, ``pkg/kubelet/lifecycle/predicate.go``) only on an input
where two pods on one node already hold the same port, which kube-scheduler itself never creates.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ..framework import ClusterEvent, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.objects import Pod
from ..model.pod_index import PodIndex, count_in
from ..model.snapshot import Snapshot
from . import names

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["REASON", "NodePorts", "PodHostPorts", "PortsWorld", "host_ports"]

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def conflicting(ip: str, proto: str, port: int, ips: Iterable[str]) -> list[tuple[str, str, int]]:
    """The keys ``(ip, proto, port)`` conflicts with, among the host IPs ``ips`` seen on that protocol and
    port (``HostPortInfo.CheckConflict``: 0.0.0.0 conflicts with every IP, another IP with 0.0.0.0 and
    itself)."""
    return [(o, proto, port) for o in ips] if ip == ANY_IP else [(ANY_IP, proto, port), (ip, proto, port)]


def host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every port with a host port, sidecars first
    (``util.GetHostPorts``): restartable init containers (``restartPolicy: Always``) run for the pod's
    whole life and hold their ports like regular containers; other init containers do not count."""
    out = []
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    for c in (*sidecars, *pod.spec.containers):
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip or ANY_IP, p.protocol or "TCP", p.host_port))
    return out


class PodHostPorts:
    """``host_ports`` of every pod row, listed once per state (``snapshot.shared``): NodePorts and the
    preemption dry runs' port index read the same lists, in every snapshot of a run."""

    per_state = True

    def __init__(self, snapshot: Snapshot) -> None:
        self.of = [host_ports(p) for p in snapshot.state.pods]


class NodePorts(Plugin):
    name = names.NODE_PORTS
    points = frozenset({"preFilter", "filter"})
    events = frozenset({ClusterEvent.ASSIGNED_POD_DELETE})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        n = snapshot.state.num_nodes
        self.state = snapshot.state
        self.snapshot = snapshot
        self._ports = snapshot.shared(PodHostPorts).of
        self.used: dict[tuple[str, str, int], np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=bool))
        self.ips: dict[tuple[str, int], set[str]] = defaultdict(set)  # (protocol, port) -> host IPs seen
        self._holders: dict[int, list[int]] | None = None
        snapshot.subscribe(self)

    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> PortsWorld:
        """Whether each host port the pod could conflict with is marked used on the node (a pod taken off
        clears its ports and a pod put back sets them, as ``HostPortInfo`` does)."""
        return PortsWorld(self, cycle, nodes, index)

    def _update(self, pod: int, node: int, used: bool) -> None:
        for ip, proto, port in self._ports[pod]:
            self.used[(ip, proto, port)][node] = used
            self.ips[(proto, port)].add(ip)

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, True)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, False)

    def recount_node(self, node: int) -> None:
        """Rebuild the node's used ports as kube-scheduler's NodeInfo holds them after a batch (the
        checker's cluster): the input's pods on the node that stay, minus every port a pod that left it
        held (a removal frees a port as a set, even where a pod that stays holds it too), plus the ports
        of the pods that arrived. With no port held twice in the input this is the pods on it now."""
        for v in self.used.values():
            v[node] = False
        snap, came = self.snapshot, self.state.pod_node
        for p in snap.pods_on[node]:
            if came[p] == node:
                self._update(p, node, True)
        for p in self._input_holders().get(node, ()):
            if snap.node_of[p] != node:
                self._update(p, node, False)
        for p in snap.pods_on[node]:
            if came[p] != node:
                self._update(p, node, True)

    def _input_holders(self) -> dict[int, list[int]]:
        """Per node row: the input's pods bound there that hold a host port."""
        if self._holders is None:
            self._holders = defaultdict(list)
            for p in np.flatnonzero(self.state.pod_node >= 0).tolist():
                if self._ports[p]:
                    self._holders[int(self.state.pod_node[p])].append(p)
        return self._holders

    def save_node(self, node: int) -> dict:
        return {k: bool(v[node]) for k, v in self.used.items()}

    def restore_node(self, node: int, saved: dict) -> None:
        for k, v in self.used.items():
            v[node] = saved.get(k, False)

    def pre_filter(self, cycle: CycleState) -> Status:
        """Skip when the pod has no host port (v1.35 ``PreFilter``)."""
        return Status() if self._ports[cycle.pod] else Status.skip()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        conflict = np.zeros(len(nodes), dtype=bool)
        for ip, proto, port in self._ports[cycle.pod]:
            for key in conflicting(ip, proto, port, self.ips.get((proto, port), ())):
                used = self.used.get(key)
                if used is not None:
                    conflict |= used[nodes]
        return FilterResult.from_mask(conflict, REASON)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """A node where a fixed pod holds a conflicting port is ruled out (the greedy verdict), unless a
        running batch pod there holds the same port too: its leaving frees the port (kube's set). A pod
        with a host port conflicts with a copy of itself, so at most one per node."""
        held: dict[tuple[str, str, int], np.ndarray] = {}
        for key, nodes in _batch_holders(model).items():
            held[key] = np.zeros(self.state.num_nodes, dtype=bool)
            held[key][list(nodes)] = True
        for c in model.each(classes, model.LIGHT_EVERY):
            if not self._ports[c.rep]:
                continue
            blocked = np.zeros(self.state.num_nodes, dtype=bool)
            for ip, proto, port in self._ports[c.rep]:
                for key in conflicting(ip, proto, port, self.ips.get((proto, port), set())):
                    used = self.used.get(key)
                    if used is not None:
                        blocked |= used & ~held[key] if key in held else used
            model.forbid(c, blocked)
            model.limit(c, 1)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node and (protocol, port): pods arriving with conflicting host IPs (equal, or either
        0.0.0.0) form a clique, at most one of which arrives; and a pod arrives only where, for every
        conflicting port the node's running batch pods hold, one of its holders leaves — as kube's
        NodeInfo keeps used ports as a set (``HostPortInfo.Remove``), one holder leaving frees the port
        although another stays (only an input where two pods already share a port differs from counting
        the pods that stay)."""
        holders = _batch_holders(model)
        by_port: dict[tuple[str, int], dict[str, list[PodClass]]] = defaultdict(lambda: defaultdict(list))
        for c in model.each(classes, model.LIGHT_EVERY):
            for ip, proto, port in dict.fromkeys(self._ports[c.rep]):
                by_port[(proto, port)][ip].append(c)
        held_ips: dict[tuple[str, int], set[str]] = defaultdict(set)
        for ip, proto, port in holders:
            held_ips[(proto, port)].add(ip)
        for (proto, port), ips in by_port.items():
            wildcard = ips.get(ANY_IP, [])
            for clique in [wildcard + users for ip, users in ips.items() if ip != ANY_IP] or [wildcard]:
                if len(clique) > 1:
                    self._one_arrival(model, clique)
            for ip, users in ips.items():
                keys = [k for k in conflicting(ip, proto, port, held_ips[(proto, port)]) if k in holders]
                for c in users:
                    for key in keys:
                        self._freed_first(model, c, holders[key])

    @staticmethod
    def _one_arrival(model: BatchModel, clique: list[PodClass]) -> None:
        """At most one of the clique's pods arrives on a node."""
        arriving: dict[int, list[cp_model.IntVar]] = defaultdict(list)
        for c in clique:
            cv = model.vars[c.index]
            for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars):
                arriving[n].append(v)
        for vs in arriving.values():
            if len(vs) > 1:
                model.cp.add(cp_model.LinearExpr.sum(vs) <= 1)

    @staticmethod
    def _freed_first(model: BatchModel, c: PodClass, holders: dict[int, list[PodClass]]) -> None:
        """``c`` arrives on a node only when a pod holding the port there leaves."""
        cv = model.vars[c.index]
        for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars):
            held = holders.get(n)
            if held:
                left = [len(d.running[n]) - model.keep_var(d, n) for d in held]
                model.cp.add(v <= cp_model.LinearExpr.sum(left))


def _batch_holders(model: BatchModel) -> dict[tuple[str, str, int], dict[int, list[PodClass]]]:
    """Per host port key: the batch classes whose running pods hold it, per node."""
    out: dict[tuple[str, str, int], dict[int, list[PodClass]]] = defaultdict(lambda: defaultdict(list))
    for d in model.classes:
        if d.running:
            for key in dict.fromkeys(host_ports(model.state.pods[d.rep])):
                for n in d.running:
                    out[key][n].append(d)
    return out


class _PortUsers:
    """Pod rows declaring each (hostIP, protocol, hostPort), per snapshot."""

    def __init__(self, snapshot) -> None:  # type: ignore[no-untyped-def]
        rows: dict[tuple[str, str, int], list[int]] = {}
        for i, ports in enumerate(snapshot.shared(PodHostPorts).of):
            for key in ports:
                rows.setdefault(key, []).append(i)
        self.rows = {k: np.array(v, dtype=np.int64) for k, v in rows.items()}


class PortsWorld:
    """NodePorts' Filter over each node's own used-port marks."""

    local = True  # it reads only its own node

    def __init__(self, rule, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> None:  # type: ignore[no-untyped-def]
        users: _PortUsers = cycle.snapshot.shared(_PortUsers)
        self.index = index
        self.marks = []  # (pods declaring the port, used mark per node)
        for ip, proto, port in host_ports(cycle.pod_obj):
            others = rule.ips.get((proto, port), ()) if ip == ANY_IP else (ANY_IP, ip)
            for other in others:
                used = rule.used.get((other, proto, port))
                if used is not None:
                    members = users.rows.get((other, proto, port), np.zeros(0, dtype=np.int64))
                    self.marks.append((members, used[nodes].copy()))

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for members, used in self.marks:
            hit = count_in(self.index, members, pods) > 0
            used[pos[hit]] = sign > 0

    def check(self, qs: np.ndarray) -> FilterResult:
        conflict = np.zeros(len(qs), dtype=bool)
        for _, used in self.marks:
            conflict |= used[qs]
        return FilterResult.from_mask(conflict, REASON)
