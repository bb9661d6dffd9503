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

A node *drains* when every pod kubectl has to evict from it leaves and its replacement runs again. What keeps
it from draining is reported per pod: a refusal (DaemonSet, local storage, bare pod without the flags), a
PodDisruptionBudget that never allows the eviction, or no room anywhere (kube-scheduler leaves the
replacement pending). The optimal side and the largest drainable set are :mod:`.drainable`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..descheduler.run import replayed_cluster
from ..errors import InputError
from ..model.objects import cordoned
from ..model.state import ClusterState, compile_cluster
from ..plans.landing import predict_landing
from ..policy.eviction import MIRROR
from ..preemption.pdb import PDBLedger
from ..profile import SchedulerConfig

__all__ = ["DrainFlags", "DrainOutcome", "run_drain"]


@dataclass(frozen=True)
class DrainFlags:
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False
    force: bool = False


NO_ROOM = "no room anywhere: kube-scheduler leaves its replacement pending"
PDB_STUCK = "a PodDisruptionBudget allows no disruption and the evicted replacements do not run again"


@dataclass
class DrainOutcome:
    nodes: list[str]
    waves: list[list[dict]] = field(default_factory=list)  # [{"pod", "from", "predicted"}] per wave
    blocked: list[dict] = field(default_factory=list)  # [{"pod", "node", "reason"}]
    skipped: list[dict] = field(default_factory=list)
    budgets: list[dict[str, int]] = field(default_factory=list)  # per wave: PodDisruptionBudget -> evictions
    evicted: list[str] = field(default_factory=list)  # every pod kubectl evicts (its replacement to be placed)
    final: dict[str, str | None] = field(default_factory=dict)  # every pod's node once the waves are done
    optimal: Any = None  # :class:`.drainable.OptimalSide`: optisched's best placement of the evicted pods
    largest: Any = None  # :class:`.drainable.Drainable`: the largest set of the nodes that drains together

    @property
    def drained(self) -> dict[str, bool]:
        """Per node: every pod that has to leave did, and its replacement runs again."""
        stuck = {b["node"] for b in self.blocked}
        return {n: n not in stuck for n in self.nodes}

    def per_node(self) -> dict[str, dict]:
        """Per node: whether it drains, in how many waves, and the pods that keep it from draining."""
        return {n: {"drains": ok, "waves": sum(1 for w in self.waves if any(e["from"] == n for e in w)),
                    "blockers": [{"pod": b["pod"], "reason": b["reason"]} for b in self.blocked if b["node"] == n]}
                for n, ok in self.drained.items()}

    def to_dict(self) -> dict:
        """``plan.json``: the rescheduling plan's shape (waves of evictions with ``from``, ``to`` (optisched's
        best target, when computed), ``predicted`` (kube-scheduler's replay)), plus ``blocked``."""
        target = self.optimal.placements if self.optimal is not None else {}
        waves = [{"evictions": [{"pod": e["pod"], "from": e["from"], "to": target.get(e["pod"], e["predicted"]),
                                 "predicted": e["predicted"], "reason": f"drain {e['from']}"} for e in w],
                  "budgets": b} for w, b in zip(self.waves, self.budgets)]
        out = {"goal": ["drain"], "nodes": self.drained, "cordon": list(self.nodes), "waves": waves,
               "placements": self.final, "blocked": [{"pod": b["pod"], "reason": b["reason"]} for b in self.blocked],
               "skipped": self.skipped, "perNode": self.per_node()}
        if self.optimal is not None:
            out["optimal"] = self.optimal.to_dict()
        if self.largest is not None:
            out["largestDrainable"] = self.largest.to_dict()
        return out


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
    nodes = cordoned(state.cluster.nodes, names)
    return compile_cluster(replace(state.cluster, nodes=nodes))


def _wave(state: ClusterState, config: SchedulerConfig, todo: list[str],
          allowed: list[int]) -> tuple[list[str], ClusterState, dict[str, str | None], dict[str, int]]:
    """Evict what the budgets allow now; replay; return (evicted keys, the cluster after, landings, budgets used)."""
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    go: list[str] = []
    used: dict[str, int] = {}
    for key in todo:
        budgets = ledger.budgets_of(state.pod_index[key])
        if all(allowed[b] > 0 for b in budgets):
            for b in budgets:
                allowed[b] -= 1
                used[ledger.names[b]] = used.get(ledger.names[b], 0) + 1
            go.append(key)
    if not go:
        return [], state, {}, {}
    node_of = state.pod_node.copy()
    node_of[[state.pod_index[k] for k in go]] = -1
    landing = predict_landing(state, config, node_of)
    for key in go:  # a replacement that runs again is healthy: its budgets get the disruption back
        if landing.landed.get(key) is not None:
            for b in ledger.budgets_of(state.pod_index[key]):
                allowed[b] += 1
    return go, replayed_cluster(landing.replay), {k: landing.landed.get(k) for k in go}, used


def pool_nodes(state: ClusterState, text: str) -> list[str]:
    """``--pool LABEL=VALUE``: the nodes of a node pool, by one of their labels."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InputError(f"--pool: {text!r} is not LABEL=VALUE")
    hit = state.label(key.strip()).isin([value.strip()])
    if not hit.any():
        raise InputError(f"--pool: no node has the label {key.strip()}={value.strip()}")
    return [state.node_names[n] for n in np.flatnonzero(hit).tolist()]


def check_nodes(state: ClusterState, nodes: list[str]) -> None:
    for n in nodes:
        if n not in state.node_index:
            raise InputError(f"no node {n!r} in the cluster", obj=f"Node/{n}", path="--node")


def evictable(state: ClusterState, nodes: list[str], flags: DrainFlags) -> tuple[list[str], list[dict], list[dict]]:
    """(pods kubectl evicts, refused pods {pod, node, reason}, skipped pods {pod, reason}); a node with a
    refused pod evicts nothing."""
    todo: list[str] = []
    refused_all: list[dict] = []
    skipped: list[dict] = []
    for n in nodes:
        pods = np.nonzero(state.pod_node == state.node_index[n])[0].tolist()
        verdicts = {p: _refusal(state, p, flags) for p in pods}
        refused = [(p, v[1]) for p, v in verdicts.items() if v is not None and v[0] == "refuse"]
        refused_all += [{"pod": state.pods[p].key, "node": n, "reason": r} for p, r in refused]
        skipped += [{"pod": state.pods[p].key, "reason": v[1]} for p, v in verdicts.items()
                    if v is not None and v[0] == "skip"]
        if not refused:
            todo += [state.pods[p].key for p, v in verdicts.items() if v is None]
    return todo, refused_all, skipped


def run_drain(state: ClusterState, config: SchedulerConfig, nodes: list[str], flags: DrainFlags = DrainFlags(),
              max_waves: int = 20) -> DrainOutcome:
    """Drain ``nodes`` together (see the module docstring)."""
    check_nodes(state, nodes)
    out = DrainOutcome(list(nodes))
    todo, out.blocked, out.skipped = evictable(state, nodes, flags)
    out.evicted = list(todo)
    current = _cordoned(state, set(nodes))
    allowed = list(PDBLedger(current, (current.pod_node >= 0).tolist()).allowed)
    for _ in range(max_waves):
        if not todo:
            break
        go, current, landed, used = _wave(current, config, todo, allowed)
        if not go:
            break
        out.waves.append([{"pod": k, "from": state.node_names[int(state.pod_node[state.pod_index[k]])],
                           "predicted": landed[k]} for k in go])
        out.budgets.append(used)
        todo = [k for k in todo if k not in set(go)]
    node_of = {k: state.node_names[int(state.pod_node[state.pod_index[k]])] for k in out.evicted}
    out.blocked += [{"pod": k, "node": node_of[k], "reason": PDB_STUCK} for k in todo]
    out.final = {p.key: (current.node_names[n] if (n := int(current.pod_node[current.pod_index[p.key]])) >= 0
                         else None) if p.key in current.pod_index else None for p in state.pods}
    left = set(todo)
    out.blocked += [{"pod": k, "node": node_of[k], "reason": NO_ROOM} for k in out.evicted
                    if k not in left and out.final.get(k) is None and state.pods[state.pod_index[k]].metadata.owner_references]
    return out
