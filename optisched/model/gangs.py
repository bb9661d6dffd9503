"""Pod groups: the pods that must be placed together, as the cluster's own objects declare them.

Read from four sources, each as its owner defines it:

- **Workload API of kube-scheduler 1.35** (``scheduling.k8s.io/v1alpha1`` ``Workload``,
  ``k8s.io/api/scheduling/v1alpha1/types.go`` of v1.35.4): ``spec.podGroups[]`` with
  ``policy.gang.minCount`` or ``policy.basic``; a pod joins through ``spec.workloadRef`` (``name``,
  ``podGroup``, ``podGroupReplicaKey``). A group is namespace + workload + pod group + replica key: the
  policy applies to each replica apart.
- **PodGroup of 1.36** (``scheduling.k8s.io/v1alpha2`` ``PodGroup``, v1.36.2): ``spec.schedulingPolicy``
  (``gang.minCount`` or ``basic``) and ``spec.schedulingConstraints.topology[].key``; a pod joins through
  ``spec.schedulingGroup.podGroupName``. (1.36's ``Workload`` holds only templates for such groups.)
- **Coscheduling** of kubernetes-sigs/scheduler-plugins (``scheduling.x-k8s.io/v1alpha1`` ``PodGroup``,
  ``spec.minMember``): a pod joins through the label ``scheduling.x-k8s.io/pod-group``.
- **Kueue** pod groups: the label ``kueue.x-k8s.io/pod-group-name`` with the annotation
  ``kueue.x-k8s.io/pod-group-total-count`` (all of them, or none); a topology request through the
  annotations ``kueue.x-k8s.io/podset-required-topology`` or ``kueue.x-k8s.io/podset-preferred-topology``
  (a node label of one level of a Kueue ``Topology``).

A group's ``minimum`` is the number of its pods that must be placed for any of them to stay (gang), or 1
(basic: no all-or-nothing). A pod naming a group whose object is missing is listed with ``missing`` set,
as upstream keeps such a pod out of scheduling until the object exists.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .gang_objects import SchedulingPolicy
from .state import ClusterState

__all__ = ["COSCHEDULING_LABEL", "KUEUE_GROUP_LABEL", "Group", "groups"]

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


@dataclass
class Group:
    """Pods placed all together or not at all (``minimum`` of them at least), in one domain when asked."""

    key: str  # how reports name it: "<source>:<namespace>/<name>[/<replica>]"
    source: str  # "workload", "podgroup", "coscheduling" or "kueue"
    namespace: str
    name: str
    minimum: int  # pods that must be placed together; 1: no all-or-nothing (basic policy)
    members: list[int] = field(default_factory=list)  # pod rows
    declared_size: int | None = None  # Kueue's total count (None: as many as there are members)
    required_topology: str | None = None  # a node label: all members in one of its domains
    preferred_topology: str | None = None
    missing: str | None = None  # why the group's object is missing, when it is

    @property
    def gang(self) -> bool:
        return self.minimum > 1

    def to_dict(self, state: ClusterState) -> dict[str, Any]:
        bound = sum(1 for p in self.members if state.pod_node[p] >= 0)
        out: dict[str, Any] = {"group": self.key, "source": self.source, "members": len(self.members),
                               "bound": bound, "minimum": self.minimum}
        if self.declared_size is not None:
            out["declaredSize"] = self.declared_size
        if self.required_topology:
            out["requiredTopology"] = self.required_topology
        if self.preferred_topology:
            out["preferredTopology"] = self.preferred_topology
        if self.missing:
            out["missing"] = self.missing
        return out


def _minimum(policy: SchedulingPolicy | None) -> int:
    return policy.gang.min_count if policy is not None and policy.gang is not None else 1


def groups(state: ClusterState) -> list[Group]:
    """Every pod group of the cluster with its member rows, in order of first member."""
    cluster = state.cluster
    workloads = {(w.metadata.namespace or "default", w.metadata.name): w for w in cluster.workloads}
    pod_groups = {(g.metadata.namespace or "default", g.metadata.name, g.coscheduling): g
                  for g in cluster.pod_groups}
    found: dict[str, Group] = {}
    for row, pod in enumerate(state.pods):
        g = _group_of(pod, workloads, pod_groups)
        if g is not None:
            found.setdefault(g.key, g).members.append(row)
    return list(found.values())


def _group_of(pod: Any, workloads: dict, pod_groups: dict) -> Group | None:
    """The group a pod names (without members), or None."""
    ns = pod.metadata.namespace or "default"
    labels, ann = pod.metadata.labels, pod.metadata.annotations
    ref = pod.spec.workload_ref
    if ref is not None:
        key = f"workload:{ns}/{ref.name}/{ref.pod_group}" + (f"/{ref.pod_group_replica_key}"
                                                              if ref.pod_group_replica_key else "")
        w = workloads.get((ns, ref.name))
        pg = next((g for g in w.spec.pod_groups if g.name == ref.pod_group), None) if w else None
        missing = (f"Workload {ns}/{ref.name} does not exist" if w is None else
                   None if pg is not None else f"Workload {ns}/{ref.name} has no pod group {ref.pod_group!r}")
        return Group(key, "workload", ns, f"{ref.name}/{ref.pod_group}", _minimum(pg.policy if pg else None),
                     missing=missing)
    if pod.spec.scheduling_group is not None and pod.spec.scheduling_group.pod_group_name:
        name = pod.spec.scheduling_group.pod_group_name
        obj = pod_groups.get((ns, name, False))
        topo = obj.spec.scheduling_constraints.topology if obj and obj.spec.scheduling_constraints else []
        return Group(f"podgroup:{ns}/{name}", "podgroup", ns, name,
                     _minimum(obj.spec.scheduling_policy if obj else None),
                     required_topology=topo[0].key if topo else None,
                     missing=None if obj else f"PodGroup {ns}/{name} does not exist")
    if labels.get(COSCHEDULING_LABEL):
        name = labels[COSCHEDULING_LABEL]
        obj = pod_groups.get((ns, name, True))
        return Group(f"coscheduling:{ns}/{name}", "coscheduling", ns, name,
                     max(1, obj.spec.min_member or 0) if obj else 1,
                     missing=None if obj else f"PodGroup {ns}/{name} does not exist")
    if labels.get(KUEUE_GROUP_LABEL):
        name = labels[KUEUE_GROUP_LABEL]
        total = _count(ann.get(KUEUE_TOTAL))
        return Group(f"kueue:{ns}/{name}", "kueue", ns, name, total or 1, declared_size=total,
                     required_topology=ann.get(KUEUE_REQUIRED), preferred_topology=ann.get(KUEUE_PREFERRED))
    return None


def _count(text: str | None) -> int | None:
    if text is None or not text.strip().isdigit():
        return None
    return int(text)
