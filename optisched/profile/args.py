"""The plugins' argument types with kube-scheduler's defaults (``pkg/scheduler/apis/config/v1/defaults.go``,
``SetDefaults_*Args``, the same code in v1.35.4 and v1.36.2; where a default hangs on a feature gate, the
release's :class:`.defaults.Release` says which): what a profile holds once its ``pluginConfig`` is
decoded."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .defaults import DEFAULT_RESOURCES, SYSTEM_DEFAULT_CONSTRAINTS

__all__ = [
    "DEFAULT_SPECS",
    "BalancedAllocationArgs",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesFitArgs",
    "PodTopologySpreadArgs",
    "ResourceSpec",
    "ScoringStrategyType",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
]


class ScoringStrategyType(StrEnum):
    """NodeResourcesFit ``scoringStrategy.type`` (the UPPER_CASE names are aliases)."""

    LeastAllocated = "LeastAllocated"
    MostAllocated = "MostAllocated"
    RequestedToCapacityRatio = "RequestedToCapacityRatio"
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int


@dataclass(frozen=True)
class UtilizationShapePoint:
    utilization: int
    score: int


DEFAULT_SPECS = tuple(ResourceSpec(n, w) for n, w in DEFAULT_RESOURCES)


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """Defaults: ``SetDefaults_NodeResourcesFitArgs`` (LeastAllocated, cpu:1, memory:1)."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    strategy: ScoringStrategyType = ScoringStrategyType.LeastAllocated
    resources: tuple[ResourceSpec, ...] = DEFAULT_SPECS
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class BalancedAllocationArgs:
    """Defaults: ``SetDefaults_NodeResourcesBalancedAllocationArgs`` (cpu:1, memory:1)."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_SPECS


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """Defaults: ``SetDefaults_PodTopologySpreadArgs`` (System); constraints are raw API dicts."""

    default_constraints: tuple[dict, ...] = ()
    defaulting_type: str = "System"

    @property
    def effective_default_constraints(self) -> tuple[dict, ...]:
        """``systemDefaultConstraints`` for System, else the listed ones (``buildDefaultConstraints``)."""
        return SYSTEM_DEFAULT_CONSTRAINTS if self.defaulting_type == "System" else self.default_constraints


@dataclass(frozen=True)
class InterPodAffinityArgs:
    """Defaults: ``SetDefaults_InterPodAffinityArgs`` (hardPodAffinityWeight 1)."""

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True)
class NodeAffinityArgs:
    added_affinity: dict | None = None


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """Defaults: ``SetDefaults_DefaultPreemptionArgs`` (10 %, 100 nodes)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100



@dataclass(frozen=True)
class VolumeBindingArgs:
    """Defaults: ``SetDefaults_VolumeBindingArgs`` (600 s; ``shape`` only when StorageCapacityScoring is on,
    :func:`.plugin_config.volume_binding_defaults`). The timeout is not read by the engines (binding is
    instant here); ``shape`` is VolumeBinding's score (its points' scores are 0–10, as configured)."""

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """Defaults: ``SetDefaults_DynamicResourcesArgs``: ``filterTimeout`` 10 s (DRASchedulerFilterTimeout is
    beta and on in both releases), ``bindingTimeout`` 10 m where the release's gates set it (seconds;
    None: unset). Not read by the engines (DynamicResources' timeouts do not apply to a snapshot)."""

    filter_timeout: float = 10.0
    binding_timeout: float | None = None
