"""NodePorts: a pod's host ports must be free on the node.

Upstream (v1.35): ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``, ``util.GetHostPorts``
(containers and sidecar init containers) and ``HostPortInfo``
(``pkg/scheduler/framework/types.go``): hostIP defaults to 0.0.0.0, which conflicts with every IP
on the same protocol and port; protocol defaults to TCP. Used ports are kept per node as
upstream's set: adding a pod marks its ports used, removing a pod frees them, even when another pod on
the node declared the same port.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ..framework import CycleState, Fidelity, FilterResult, Status
from ..model.objects import Pod
from ..model.snapshot import Snapshot

if TYPE_CHECKING:
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["REASON", "NodePorts", "PodHostPorts", "host_ports"]

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


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
    """``host_ports`` of every pod row, listed once per snapshot (``snapshot.shared``): NodePorts and
    the preemption dry runs' port index read the same lists."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.of = [host_ports(p) for p in snapshot.state.pods]


class NodePorts:
    name = "NodePorts"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        n = snapshot.state.num_nodes
        self.state = snapshot.state
        self.snapshot = snapshot
        self._ports = snapshot.shared(PodHostPorts).of
        self.used: dict[tuple[str, str, int], np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=bool))
        self.ips: dict[tuple[str, int], set[str]] = defaultdict(set)  # (protocol, port) -> host IPs seen
        snapshot.subscribe(self)

    def _update(self, pod: int, node: int, used: bool) -> None:
        for ip, proto, port in self._ports[pod]:
            self.used[(ip, proto, port)][node] = used
            self.ips[(proto, port)].add(ip)

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, True)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, False)

    def recount_node(self, node: int) -> None:
        """Rebuild the node's used ports from the pods on it now (what a fresh snapshot would hold,
        unlike the set semantics of removal): the batch checker's "final cluster without the pod"."""
        for v in self.used.values():
            v[node] = False
        for p in self.snapshot.pods_on[node]:
            self._update(p, node, True)

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
            others = self.ips.get((proto, port), ()) if ip == ANY_IP else (ANY_IP, ip)
            for other in others:
                used = self.used.get((other, proto, port))
                if used is not None:
                    conflict |= used[nodes]
        return FilterResult.from_mask(conflict, REASON)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Ports the fixed pods hold rule the node out (the greedy verdict); a pod with a host port
        conflicts with a copy of itself, so at most one per node."""
        users = [c for c in classes if self._ports[c.rep]]
        model.restrict_by_filter(self, users)
        for c in users:
            model.limit(c, 1)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node and (protocol, port): every pair of pods whose host IPs conflict (equal, or either
        0.0.0.0) is a clique — the 0.0.0.0 users with the users of each specific IP — holding at most
        one pod (or as many as the input already had there)."""
        by_port: dict[tuple[str, int], dict[str, list[PodClass]]] = defaultdict(lambda: defaultdict(list))
        for c in classes:
            for ip, proto, port in dict.fromkeys(self._ports[c.rep]):
                by_port[(proto, port)][ip].append(c)
        for ips in by_port.values():
            wildcard = ips.get(ANY_IP, [])
            cliques = [wildcard + users for ip, users in ips.items() if ip != ANY_IP] or [wildcard]
            for clique in cliques:
                if len(clique) == 1 and not clique[0].running:
                    continue  # the per-node limit of one already holds
                self._at_most_one(model, clique)

    @staticmethod
    def _at_most_one(model: BatchModel, clique: list[PodClass]) -> None:
        """At most one pod of the clique per node once the batch places one there (an input that
        already had more keeps them: bound pods are not re-checked)."""
        per_node: dict[int, list[cp_model.IntVar]] = defaultdict(list)
        arriving: dict[int, list[tuple[cp_model.IntVar, int]]] = defaultdict(list)
        already: dict[int, int] = defaultdict(int)
        for c in clique:
            cv = model.vars[c.index]
            for n, v, u in cv.terms():
                per_node[n].append(v)
            for n, v, u in zip(cv.arr_nodes.tolist(), cv.arr_vars, cv.arr_ub.tolist()):
                arriving[n].append((v, u))
            for n, pods in c.running.items():
                already[n] += len(pods)
        for n, vs in per_node.items():
            if len(vs) < 2 or n not in arriving:
                continue
            ct = model.cp.add(cp_model.LinearExpr.sum(vs) <= 1)
            if already[n] > 1:
                flag = model.cp.new_bool_var(f"port{n}")
                expr, ub = model.total(arriving[n])
                model.cp.add(expr <= ub * flag)
                ct.only_enforce_if(flag)
