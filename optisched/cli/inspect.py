"""``optisched inspect``: a summary of a loaded cluster, as plain data (the CLI renders it)."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from ..model.gangs import groups
from ..model.pdb import budget_views
from ..model.state import ZONE_LABEL, ClusterState
from ..profile import SchedulerConfig
from ..profile.releases import release
from .input_warnings import input_warnings

__all__ = ["kubelet_minors", "summarize", "version_warning"]

_MINOR = re.compile(r"v?(\d+)\.(\d+)")


def kubelet_minors(state: ClusterState) -> dict[str, int]:
    """Nodes per kubelet minor version (``status.nodeInfo.kubeletVersion``; ``unknown`` when not given)."""
    out: Counter = Counter()
    for node in state.cluster.nodes:
        m = _MINOR.match(node.status.node_info.kubelet_version)
        out[f"{m.group(1)}.{m.group(2)}" if m else "unknown"] += 1
    return dict(sorted(out.items()))


def version_warning(minors: dict[str, int], assumed: str) -> str | None:
    """A line when the nodes' kubelets run another minor release than the kube-scheduler the run follows."""
    known = {v: n for v, n in minors.items() if v != "unknown"}
    if not known or set(known) == {assumed}:
        return None
    runs = ", ".join(f"{v} on {n}" for v, n in known.items())
    return (f"the nodes' kubelets run {runs} node(s); this run follows kube-scheduler {assumed} "
            f"(--kubernetes-version sets the release; the control plane's is the one that counts)")


def summarize(state: ClusterState, config: SchedulerConfig) -> dict[str, Any]:
    """Nodes by zone and shape, pods by priority, requested vs allocatable, PDBs, the active profile, the
    release the run follows and the kubelet versions the nodes report."""
    cluster = state.cluster
    zones = state.label(ZONE_LABEL)
    cpu, mem = state.resource_col("cpu"), state.resource_col("memory")
    shapes: Counter = Counter()
    by_zone: Counter = Counter()
    for i in range(state.num_nodes):
        z = zones.values[zones.codes[i]] if zones.codes[i] >= 0 else "<none>"
        by_zone[z] += 1
        shapes[(int(state.allocatable[i, cpu]), int(state.allocatable[i, mem]))] += 1
    prio: dict[int, Counter] = defaultdict(Counter)
    for i in range(len(state.pods)):
        prio[int(state.pod_priority[i])]["bound" if state.pod_node[i] >= 0 else "pending"] += 1
    bound = state.pod_node >= 0
    requested = state.pod_requests[bound].sum(axis=0) if bound.any() else np.zeros(len(state.resources), np.int64)
    pending_req = state.pod_requests[~bound].sum(axis=0) if (~bound).any() else np.zeros_like(requested)
    total = state.allocatable.sum(axis=0)
    resources = [{"resource": r, "allocatable": int(total[j]), "requestedBound": int(requested[j]),
                  "requestedPending": int(pending_req[j])} for j, r in enumerate(state.resources)]
    pdbs = budget_views(cluster.pdbs, state.pods, bound.tolist())
    profile = config.profiles[0]
    pending = [{
        "pod": state.pods[p].key, "priority": int(state.pod_priority[p]),
        "schedulerName": state.pods[p].spec.scheduler_name,
        "requests": {r: int(state.pod_requests[p, j]) for j, r in enumerate(state.resources)
                     if state.pod_requests[p, j] and r != "pods"},
        "nonZeroRequests": {"cpu": int(state.pod_nonzero[p, 0]), "memory": int(state.pod_nonzero[p, 1])},
    } for p in state.pending]
    minors = kubelet_minors(state)
    mismatch = version_warning(minors, config.kubernetes_version)
    return {
        "sources": cluster.sources,
        "kubernetesVersion": release(config.kubernetes_version).patch,
        "kubeletVersions": minors,
        "nodes": {"total": state.num_nodes, "unschedulable": int(state.unschedulable.sum()),
                  "byZone": dict(sorted(by_zone.items())),
                  "byShape": [{"cpu": c, "memory": m, "count": n} for (c, m), n in sorted(shapes.items())]},
        "pods": {"total": len(state.pods), "bound": int(bound.sum()), "pending": int((~bound).sum()),
                 "finished": sum(p.status.phase in ("Succeeded", "Failed") for p in cluster.pods),
                 "byPriority": [{"priority": k, **prio[k]} for k in sorted(prio, reverse=True)]},
        "resources": resources,
        "pdbs": [{"pdb": f"{v.pdb.metadata.namespace}/{v.pdb.metadata.name}", "pods": len(v.pods),
                  "currentHealthy": v.current_healthy, "desiredHealthy": v.desired_healthy,
                  "disruptionsAllowed": v.disruptions_allowed} for v in pdbs],
        "profile": {"schedulerName": profile.scheduler_name, "source": config.source,
                    "percentageOfNodesToScore": profile.effective_percentage(config.percentage_of_nodes_to_score),
                    "scoreWeights": dict(profile.score_weights), "notModelled": list(profile.not_modelled),
                    "scoringStrategy": {"type": str(profile.fit.strategy),
                                        "resources": {r.name: r.weight for r in profile.fit.resources}},
                    "profiles": [p.scheduler_name for p in config.profiles]},
        "groups": [g.to_dict(state) for g in groups(state)],
        "pendingPods": pending,
        "skippedKinds": dict(cluster.skipped),
        "warnings": input_warnings(state, config) + ([mismatch] if mismatch else []),
    }
