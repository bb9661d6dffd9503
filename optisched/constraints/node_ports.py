"""NodePorts: a pod's host ports must be free on the node.

Upstream: ``pkg/scheduler/framework/plugins/nodeports/node_ports.go`` and ``HostPortInfo``
(``pkg/scheduler/framework/types.go``): hostIP defaults to 0.0.0.0, which conflicts with every IP
on the same protocol and port; protocol defaults to TCP. Used ports are kept per node as
upstream's set: adding a pod marks its ports used, removing a pod frees them, even when another pod on
the node declared the same port.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..framework import CycleState, FilterResult, Status
from ..model.objects import Pod
from ..model.snapshot import Snapshot

__all__ = ["REASON", "NodePorts", "host_ports"]

REASON = "node(s) didn't have free ports for the requested pod ports"
ANY_IP = "0.0.0.0"


def host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every container port with a host port (``getContainerPorts``)."""
    out = []
    for c in pod.spec.containers:
        for p in c.ports:
            if p.host_port > 0:
                out.append((p.host_ip or ANY_IP, p.protocol or "TCP", p.host_port))
    return out


def _wants_ports(pod: Pod) -> bool:
    return any(c.ports for c in pod.spec.containers)


class NodePorts:
    name = "NodePorts"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        n = snapshot.state.num_nodes
        self.state = snapshot.state
        self._ports = [host_ports(p) for p in snapshot.state.pods]
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

    def save_node(self, node: int) -> dict:
        return {k: bool(v[node]) for k, v in self.used.items()}

    def restore_node(self, node: int, saved: dict) -> None:
        for k, v in self.used.items():
            v[node] = saved.get(k, False)

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status() if _wants_ports(cycle.pod_obj) else Status.skip()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        conflict = np.zeros(len(nodes), dtype=bool)
        for ip, proto, port in self._ports[cycle.pod]:
            others = self.ips.get((proto, port), ()) if ip == ANY_IP else (ANY_IP, ip)
            for other in others:
                used = self.used.get((other, proto, port))
                if used is not None:
                    conflict |= used[nodes]
        return FilterResult.from_mask(conflict, REASON)
