"""The objects that declare pod groups: ``Workload`` and ``PodGroup`` of ``scheduling.k8s.io``, the
coscheduling plugin's ``PodGroup`` and Kueue's ``Topology`` (:mod:`optisched.model.gangs` reads the groups)."""
from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from .objects import _M, Int32, KubeObject, _none_as_empty

__all__ = ["PodGroup", "SchedulingPolicy", "Topology", "Workload"]



class GangPolicy(_M):
    min_count: Annotated[int, Field(ge=1, le=2**31 - 1)]


class SchedulingPolicy(_M):
    """``PodGroupPolicy`` (1.35) / ``PodGroupSchedulingPolicy`` (1.36): exactly one of basic and gang."""

    basic: dict | None = None
    gang: GangPolicy | None = None


class WorkloadPodGroup(_M):
    name: str = Field(min_length=1)
    policy: SchedulingPolicy = SchedulingPolicy()


class WorkloadSpec(_M):
    pod_groups: Annotated[list[WorkloadPodGroup], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    pod_group_templates: Annotated[list[dict], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class Workload(KubeObject):
    """``scheduling.k8s.io`` ``Workload``: v1alpha1 (1.35) lists its pod groups; v1alpha2 (1.36) lists
    templates, its groups being ``PodGroup`` objects."""

    kind: str = "Workload"
    spec: WorkloadSpec = WorkloadSpec()


class TopologyConstraint(_M):
    key: str = Field(min_length=1)


class SchedulingConstraints(_M):
    topology: Annotated[list[TopologyConstraint], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class PodGroupSpec(_M):
    # scheduling.k8s.io/v1alpha2
    scheduling_policy: SchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    # scheduling.x-k8s.io/v1alpha1 (coscheduling)
    min_member: Int32 | None = Field(default=None, ge=0)
    schedule_timeout_seconds: Int32 | None = None


class PodGroup(KubeObject):
    """A ``PodGroup`` of either API group: kube-scheduler's (``scheduling.k8s.io/v1alpha2``) or
    coscheduling's (``scheduling.x-k8s.io/v1alpha1``); ``api_version`` tells which."""

    kind: str = "PodGroup"
    spec: PodGroupSpec = PodGroupSpec()

    @property
    def coscheduling(self) -> bool:
        return self.api_version.startswith("scheduling.x-k8s.io/")


class TopologyLevel(_M):
    node_label: str = Field(min_length=1)


class TopologySpec(_M):
    levels: Annotated[list[TopologyLevel], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class Topology(KubeObject):
    """Kueue's ``Topology``: the node labels of its levels, outermost first."""

    kind: str = "Topology"
    spec: TopologySpec = TopologySpec()
