"""What a run cannot model or will not touch in the input, said the same way by every command.

Every command prints these lines (``inspect`` also lists them in its summary, every ``--json`` carries them)
so the same input draws the same warnings whichever question is asked of it.
"""
from __future__ import annotations

import numpy as np

from ..greedy.queue import split_handled
from ..model.quantity import human_quantity
from ..model.state import ClusterState
from ..model.storage import catalog, pod_claims
from ..plugins.node_ports import host_ports
from ..profile import SchedulerConfig
from ..term_warnings import term_warnings

__all__ = ["input_warnings"]

_SHOWN = 5  # names listed in one warning before "and N more"


def _names(keys: list[str]) -> str:
    more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    return ", ".join(keys[:_SHOWN]) + more


def _claims(state: ClusterState) -> list[str]:
    """Pending pods with claims when the input holds no storage objects (the volume rules then skip, see
    docs/volumes.md)."""
    out = []
    storage = catalog(state.cluster).present
    for p in state.pending:
        pod = state.pods[p]
        claims = [c.name for c in pod_claims(pod)]
        if claims and not storage:
            out.append(f"Pod/{pod.key} uses PersistentVolumeClaims {claims}, but the input holds no claims, volumes "
                       "or storage classes (kubectl get pv,pvc,storageclass,csinode,csidriver): its volumes are "
                       "assumed to bind anywhere")
    return out


def _overcommitted(state: ClusterState) -> list[str]:
    """Nodes whose bound pods already request more than allocatable (kubelet admitted them under other
    numbers, or the dump mixes moments): such a node takes no new pod that requests that resource."""
    bound = state.pod_node >= 0
    used = np.zeros_like(state.allocatable)
    np.add.at(used, state.pod_node[bound], state.pod_requests[bound])
    over = used > state.allocatable
    out = []
    for n in np.flatnonzero(over.any(axis=1)):
        parts = [f"{r} {human_quantity(r, int(used[n, j]))} of {human_quantity(r, int(state.allocatable[n, j]))}"
                 for j, r in enumerate(state.resources) if over[n, j]]
        out.append(f"Node/{state.node_names[n]} is overcommitted in the input: bound pods request "
                   + ", ".join(parts))
    return out


def _shared_host_ports(state: ClusterState) -> list[str]:
    """Nodes where two bound pods hold the same host port (the kubelet's admission refuses the second;
    generated inputs have them): kube-scheduler frees the port when either leaves (docs/optimal_trust.md)."""
    seen: dict[tuple[int, tuple[str, str, int]], int] = {}
    nodes: dict[int, str] = {}
    for p in np.flatnonzero(state.pod_node >= 0).tolist():
        n = int(state.pod_node[p])
        for ip, proto, port in dict.fromkeys(host_ports(state.pods[p])):
            seen[(n, (ip, proto, port))] = seen.get((n, (ip, proto, port)), 0) + 1
            if seen[(n, (ip, proto, port))] == 2:
                nodes.setdefault(n, f"Node/{state.node_names[n]} ({proto}/{ip}:{port})")
    if not nodes:
        return []
    return [f"{len(nodes)} node(s) where two bound pods hold one host port (the kubelet admits one; a pod that "
            f"leaves frees the port as kube-scheduler's set does): " + _names(list(nodes.values()))]


def _finished(state: ClusterState) -> list[str]:
    done = [p for p in state.cluster.pods if p.status.phase in ("Succeeded", "Failed")]
    if not done:
        return []
    return [f"{len(done)} finished pod(s) (Succeeded/Failed) hold nothing and are left out: "
            + _names([p.key for p in done])]


def _not_handled(state: ClusterState, config: SchedulerConfig) -> list[str]:
    _, skipped = split_handled(state, list(state.pending), {p.scheduler_name for p in config.profiles})
    by_why: dict[str, list[str]] = {}
    for p, why in skipped.items():
        by_why.setdefault("gated (schedulingGates)" if why == "SchedulingGated" else "of another schedulerName",
                          []).append(state.pods[p].key)
    return [f"{len(keys)} pending pod(s) {why} not handled: {_names(keys)}" for why, keys in by_why.items()]


def input_warnings(state: ClusterState, config: SchedulerConfig) -> list[str]:
    """The loader's warnings (pods bound to nodes not in the input, ...), then pods with terms kube-scheduler
    cannot build, pending pods with volume or resource claims, nodes overcommitted in the input or with a
    host port held twice, finished pods, and pending pods no profile handles."""
    return [*state.cluster.warnings, *term_warnings(state), *_claims(state), *_overcommitted(state),
            *_shared_host_ports(state), *_finished(state), *_not_handled(state, config)]
