"""Preemption plans: who evicts whom, as a table and as policy/v1 Eviction objects."""
from __future__ import annotations

from dataclasses import dataclass

from ..preemption.made import Preemption
from ..preemption.pdb import PDBLedger

__all__ = ["BatchPreemption", "batch_eviction_objects", "batch_preemptions", "eviction_document", "eviction_objects",
           "minimal_eviction_objects", "plan_document"]


def _eviction(pod: str, annotations: dict[str, str]) -> dict:
    """A ``policy/v1`` Eviction of ``pod`` (namespace/name): what ``kubectl`` or a descheduler would POST."""
    ns, name = pod.split("/", 1)
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations}}


eviction_document = _eviction  # public name, for every plan that writes Evictions


def eviction_objects(plan: list[Preemption]) -> list[dict]:
    """One ``policy/v1`` Eviction per victim of greedy mode's preemptions."""
    return [_eviction(victim, {"optisched.io/preemptor": p.preemptor, "optisched.io/node": p.node})
            for p in plan for victim, _, _ in p.victims]


@dataclass(frozen=True)
class BatchPreemption:
    """Optimal mode's batch answer on one node: the pods it places there that may preempt, and the
    running pods that leave the node for them (``moved_to`` None: evicted; else re-placed there)."""

    node: str
    preemptors: tuple[tuple[str, int], ...]  # (pod, priority)
    victims: tuple[tuple[str, int, tuple[str, ...], str | None], ...]  # (pod, priority, PDBs, moved_to)

    @property
    def evictions(self) -> int:
        return sum(1 for v in self.victims if v[3] is None)

    @property
    def moves(self) -> int:
        return sum(1 for v in self.victims if v[3] is not None)


def batch_preemptions(result) -> list[BatchPreemption]:  # type: ignore[no-untyped-def]
    """Per node, who leaves for whom in an :class:`optisched.optimal.result.OptimalResult`."""
    state = result.state
    batch = result.batch
    node_of = result.node_of
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    names = state.node_names
    arrivals: dict[int, list[int]] = {}
    for c in batch.classes:
        for p in c.pending:
            if node_of[p] >= 0 and c.preempts:
                arrivals.setdefault(int(node_of[p]), []).append(p)
    leaving: dict[int, list[int]] = {}
    for c in batch.classes:
        for n, pods in c.running.items():
            for p in pods:
                if node_of[p] != n:
                    leaving.setdefault(n, []).append(p)
    out = []
    for n in sorted(leaving, key=lambda n: names[n]):
        gone = sorted(leaving[n], key=lambda p: (-int(state.pod_priority[p]), state.pods[p].key))
        low = min(int(state.pod_priority[p]) for p in gone)
        by = sorted((p for p in arrivals.get(n, []) if state.pod_priority[p] > low),
                    key=lambda p: (-int(state.pod_priority[p]), state.pods[p].key))
        out.append(BatchPreemption(
            names[n], tuple((state.pods[p].key, int(state.pod_priority[p])) for p in by),
            tuple((state.pods[p].key, int(state.pod_priority[p]), tuple(ledger.names[i] for i in ledger.budgets_of(p)),
                   names[int(node_of[p])] if node_of[p] >= 0 else None) for p in gone)))
    return out


def batch_eviction_objects(plan: list[BatchPreemption]) -> list[dict]:
    """One ``policy/v1`` Eviction per pod that leaves its node; a move names its target node."""
    out = []
    for b in plan:
        for victim, _, _, moved_to in b.victims:
            notes = {"optisched.io/node": b.node, "optisched.io/preemptors": ",".join(p for p, _ in b.preemptors)}
            if moved_to is not None:
                notes["optisched.io/target-node"] = moved_to
            out.append(_eviction(victim, notes))
    return out


def minimal_eviction_objects(answers) -> list[dict]:  # type: ignore[no-untyped-def]
    """One ``policy/v1`` Eviction per victim of single-pod optimal preemption answers."""
    return [_eviction(v.pod, {"optisched.io/preemptor": a.preemptor, "optisched.io/node": v.node,
                              "optisched.io/preemptor-node": a.node}) for a in answers for v in a.victims]


def plan_document(landing, budgets: list) -> dict:  # type: ignore[no-untyped-def]
    """The plan's first YAML document: the whole target the evictions rely on (every pending or re-created
    pod's node), where kube-scheduler's replay after the evictions puts each of them
    (:func:`optisched.plans.landing.predict_landing`), the pods where the two differ, and the
    PodDisruptionBudgets the plan uses. Not an API object: kubectl applies the Evictions that follow."""
    return {"apiVersion": "optisched.io/v1alpha1", "kind": "PreemptionPlan", **landing.to_dict(),
            "budgets": [u.to_dict() for u in budgets]}
