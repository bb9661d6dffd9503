"""The plugin names, as configurations and traces spell them (kubernetes v1.35.4
``pkg/scheduler/framework/plugins/names/names.go``, with v1.36.2's NodeDeclaredFeatures, and the
GPU-sharing simulator's plugins)."""
from __future__ import annotations

__all__ = [
    "BALANCED_ALLOCATION",
    "BEST_FIT",
    "DEFAULT_BINDER",
    "DEFAULT_PREEMPTION",
    "DOT_PROD",
    "DYNAMIC_RESOURCES",
    "FGD",
    "GPU_CLUSTERING",
    "GPU_PACKING",
    "GPU_SHARE",
    "IMAGE_LOCALITY",
    "INTER_POD_AFFINITY",
    "NODE_AFFINITY",
    "NODE_DECLARED_FEATURES",
    "NODE_NAME",
    "NODE_PORTS",
    "NODE_RESOURCES_FIT",
    "NODE_UNSCHEDULABLE",
    "NODE_VOLUME_LIMITS",
    "POD_TOPOLOGY_SPREAD",
    "PRIORITY_SORT",
    "RANDOM",
    "SCHEDULING_GATES",
    "TAINT_TOLERATION",
    "VOLUME_BINDING",
    "VOLUME_RESTRICTIONS",
    "VOLUME_ZONE",
]

PRIORITY_SORT = "PrioritySort"
DEFAULT_BINDER = "DefaultBinder"
DEFAULT_PREEMPTION = "DefaultPreemption"
DYNAMIC_RESOURCES = "DynamicResources"
IMAGE_LOCALITY = "ImageLocality"
INTER_POD_AFFINITY = "InterPodAffinity"
NODE_AFFINITY = "NodeAffinity"
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"  # v1.36.2
NODE_NAME = "NodeName"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
SCHEDULING_GATES = "SchedulingGates"
TAINT_TOLERATION = "TaintToleration"
VOLUME_BINDING = "VolumeBinding"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
VOLUME_ZONE = "VolumeZone"

# GPU sharing and the FGD paper's policies (hkust-adsl/kubernetes-scheduler-simulator)
GPU_SHARE = "Open-Gpu-Share"
FGD = "FGD"
BEST_FIT = "BestFit"
DOT_PROD = "DotProd"
GPU_PACKING = "GpuPacking"
GPU_CLUSTERING = "GpuClustering"
RANDOM = "Random"
