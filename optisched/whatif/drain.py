"""``kubectl drain`` on a snapshot: cordon, the pods it refuses or skips, evictions in waves under
PodDisruptionBudgets, and where kube-scheduler puts the replacements.

Follows kubectl v1.35 ``staging/src/k8s.io/kubectl/pkg/drain/filters.go``: finished pods (Succeeded, Failed)
are deleted freely; DaemonSet pods are skipped with ``--ignore-daemonsets`` and otherwise refuse the drain;
mirror pods are skipped; pods with ``emptyDir`` storage refuse the drain unless ``--delete-emptydir-data``;
pods without a controller refuse it unless ``--force``. A refused node is cordoned and nothing is evicted
from it. Evictions go through the Eviction API, which refuses a pod while one of its budgets allows no
disruption; kubectl retries, so the drain proceeds in waves: each wave evicts what the budgets allow, the
replacements are placed by greedy mode on the cluster with the drained nodes cordoned, and a replacement that
lands gives its budget back for the next wave.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..descheduler.run import replayed_cluster
from ..errors import InputError
from ..model.state import ClusterState, compile_cluster
from ..policy.eviction import MIRROR
from ..preemption.landing import predict_landing
from ..preemption.pdb import PDBLedger
from ..profile import SchedulerConfig

__all__ = ["DrainFlags", "DrainOutcome", "run_drain"]


@dataclass(frozen=True)
class DrainFlags:
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    force: bool = False


@dataclass
class DrainOutcome:
    nodes: list[str]
    waves: list[list[dict]] = field(default_factory=list)  # [{"pod", "from", "to"}] per wave
    blocked: list[dict] = field(default_factory=list)  # [{"pod", "reason"}]
    skipped: list[dict] = field(default_factory=list)

    @property
    def drained(self) -> dict[str, bool]:
        """Per node: whether every pod that has to leave did."""
        stuck = {b["node"] for b in self.blocked}
        return {n: n not in stuck for n in self.nodes}

    def to_dict(self) -> dict:
        return {"nodes": self.drained, "waves": [{"evictions": w} for w in self.waves],
                "blocked": [{"pod": b["pod"], "reason": b["reason"]} for b in self.blocked],
                "skipped": self.skipped}


def _refusal(state: ClusterState, p: int, flags: DrainFlags) -> tuple[str, str] | None:
    """("skip" | "refuse" | "delete", reason) for pods kubectl does not simply evict; None to evict."""
    pod = state.pods[p]
    kinds = {o.kind for o in pod.metadata.owner_references}
    if pod.status.phase in ("Succeeded", "Failed"):
        return ("delete", "finished")
    if "DaemonSet" in kinds:
        return ("skip", "DaemonSet pod") if flags.ignore_daemonsets else \
            ("refuse", "DaemonSet-managed pod (use --ignore-daemonsets to ignore)")
    if MIRROR in pod.metadata.annotations:
        return ("skip", "mirror pod")
    if any(v.empty_dir is not None for v in pod.spec.volumes) and not flags.delete_emptydir_data:
        return ("refuse", "pod with local storage (use --delete-emptydir-data to override)")
    if not pod.metadata.owner_references and not flags.force:
        return ("refuse", "pod that declares no controller (use --force to override)")
    return None


def _cordoned(state: ClusterState, names: set[str]) -> ClusterState:
    nodes = [n.model_copy(update={"spec": n.spec.model_copy(update={"unschedulable": True})})
             if n.metadata.name in names else n for n in state.cluster.nodes]
    return compile_cluster(replace(state.cluster, nodes=nodes))


def _wave(state: ClusterState, config: SchedulerConfig, todo: list[str],
          allowed: list[int]) -> tuple[list[str], ClusterState, dict[str, str | None]]:
    """Evict what the budgets allow now; replay; return (evicted keys, the cluster after, landings)."""
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    go = []
    for key in todo:
        budgets = ledger.budgets_of(state.pod_index[key])
        if all(allowed[b] > 0 for b in budgets):
            for b in budgets:
                allowed[b] -= 1
            go.append(key)
    if not go:
        return [], state, {}
    node_of = state.pod_node.copy()
    node_of[[state.pod_index[k] for k in go]] = -1
    landing = predict_landing(state, config, node_of)
    for key in go:  # a replacement that runs again is healthy: its budgets get the disruption back
        if landing.landed.get(key) is not None:
            for b in ledger.budgets_of(state.pod_index[key]):
                allowed[b] += 1
    return go, replayed_cluster(landing.replay), {k: landing.landed.get(k) for k in go}


def run_drain(state: ClusterState, config: SchedulerConfig, nodes: list[str], flags: DrainFlags = DrainFlags(),
              max_waves: int = 20) -> DrainOutcome:
    """Drain ``nodes`` together (see the module docstring)."""
    for n in nodes:
        if n not in state.node_index:
            raise InputError(f"no node {n!r} in the cluster", obj=f"Node/{n}", path="--node")
    out = DrainOutcome(list(nodes))
    rows = {n: np.nonzero(state.pod_node == state.node_index[n])[0].tolist() for n in nodes}
    todo: list[str] = []
    for n, pods in rows.items():
        verdicts = {p: _refusal(state, p, flags) for p in pods}
        refused = [(p, v[1]) for p, v in verdicts.items() if v is not None and v[0] == "refuse"]
        out.blocked += [{"pod": state.pods[p].key, "node": n, "reason": r} for p, r in refused]
        out.skipped += [{"pod": state.pods[p].key, "reason": v[1]} for p, v in verdicts.items()
                        if v is not None and v[0] == "skip"]
        if not refused:
            todo += [state.pods[p].key for p, v in verdicts.items() if v is None]
    current = _cordoned(state, set(nodes))
    allowed = list(PDBLedger(current, (current.pod_node >= 0).tolist()).allowed)
    for _ in range(max_waves):
        if not todo:
            break
        go, current, landed = _wave(current, config, todo, allowed)
        if not go:
            break
        out.waves.append([{"pod": k, "from": state.node_names[int(state.pod_node[state.pod_index[k]])],
                           "to": landed[k]} for k in go])
        todo = [k for k in todo if k not in set(go)]
    for k in todo:
        node = state.node_names[int(state.pod_node[state.pod_index[k]])]
        out.blocked.append({"pod": k, "node": node, "reason": "a PodDisruptionBudget allows no disruption and "
                                                               "the evicted replacements do not run again"})
    return out
