"""kube-scheduler v1.35's default profile: the default plugins and their weights, the extension points each
in-tree plugin implements, and the names a configuration may not use.

Sources (kubernetes v1.35.4):

* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` (the multiPoint list and
  its weights, DynamicResources inserted before DefaultPreemption by ``applyFeatureGates``);
* the interfaces each in-tree plugin implements (``pkg/scheduler/framework/plugins/*``), as the
  conformance traces list them;
* ``pkg/scheduler/apis/config/v1/defaults.go``: ``SetDefaults_KubeSchedulerConfiguration`` and
  ``defaultResourceSpec``;
* ``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``: ``systemDefaultConstraints``;
* ``pkg/scheduler/apis/config/validation/validation.go``: ``invalidPluginsByVersion``.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "API_VERSION",
    "DEFAULT_MULTIPOINT",
    "DEFAULT_PARALLELISM",
    "DEFAULT_RESOURCES",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "IN_TREE",
    "KIND",
    "MULTI_POINT",
    "NOT_MODELLED",
    "PLACEMENT_POINTS",
    "REMOVED_PLUGINS",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "UNMODELLED_POINTS",
    "Release",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"  # v1.DefaultSchedulerName
DEFAULT_PARALLELISM = 16  # SetDefaults_KubeSchedulerConfiguration
DEFAULT_RESOURCES: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))  # defaults.go defaultResourceSpec

# The extension points of v1.Plugins, in the struct's order; multiPoint is the shorthand for all of them.
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                    "reserve", "permit", "preBind", "bind", "postBind")
MULTI_POINT = "multiPoint"
# v1.36's v1.Plugins adds the pod-group points after multiPoint (kube-scheduler/config/v1/types.go)
PLACEMENT_POINTS = ("placementGenerate", "placementScore")

# getDefaultPlugins().MultiPoint.Enabled: (name, weight), None where the default sets no weight.
DEFAULT_MULTIPOINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

# The in-tree plugins of kube-scheduler v1.35.4 (NewInTreeRegistry). A plugin optisched models declares
# the extension points it implements on its class (optisched.framework.Plugin.points); these are the
# points of the ones it does not model (the Go interfaces their types satisfy).
UNMODELLED_POINTS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "DefaultPreemption": frozenset({"preEnqueue", "postFilter"}),
    "DefaultBinder": frozenset({"bind"}),
}
# NodeDeclaredFeatures is registered in v1.35.4 too, behind its gate (alpha, off): a profile may name it,
# and it then rejects no node (optisched.plugins.node_declared_features).
IN_TREE: frozenset[str] = frozenset(UNMODELLED_POINTS) | frozenset({
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
    "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality", "DynamicResources",
    "NodeDeclaredFeatures"})

# In-tree plugins optisched accepts but does not model. A name that is not in-tree is refused, as the stock
# kube-scheduler binary refuses it (pkg/scheduler/framework/runtime/framework.go, NewFramework).
# SchedulingGates is modelled by the greedy engine itself: gated pods stay pending and are reported.
NOT_MODELLED: frozenset[str] = frozenset()

# validation.go invalidPluginsByVersion: removed plugins that a v1 configuration may not name.
REMOVED_PLUGINS: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

# podtopologyspread.systemDefaultConstraints
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict, ...] = (
    {"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
)


@dataclass(frozen=True)
class Release:
    """What a kube-scheduler minor release defaults to, as far as the configuration is concerned: its
    default multiPoint plugins and weights, its in-tree plugin names, the extension points of those
    optisched does not model, and which of the enabled ones it does not model (every other plugin
    declares its points on its class)."""

    minor: str
    patch: str  # the release whose source its rules follow, e.g. v1.35.4
    multipoint: tuple[tuple[str, int | None], ...]
    in_tree: frozenset[str]
    unmodelled_points: dict[str, frozenset[str]]
    not_modelled: frozenset[str]
    # the extension points of its v1.Plugins (a field beyond them fails its strict decoding)
    extension_points: tuple[str, ...] = EXTENSION_POINTS
    # DynamicResourcesArgs.bindingTimeout's default in seconds (SetDefaults_DynamicResourcesArgs, on when
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are); None: those gates are off by
    # default and ValidateDynamicResourcesArgs forbids the field
    binding_timeout: float | None = None
    # ValidateNodeResourcesFitArgs requires scoringStrategy.requestedToCapacityRatio exactly when the type
    # is RequestedToCapacityRatio (v1.36); before, a ratio given with another type is ignored
    strict_ratio_params: bool = False
