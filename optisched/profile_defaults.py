"""kube-scheduler v1.35's default profile: plugins, extension points, weights, argument defaults.

Sources: ``pkg/scheduler/apis/config/v1/default_plugins.go`` (the multiPoint list and weights),
``pkg/scheduler/apis/config/v1/defaults.go`` (argument defaults), the interfaces each in-tree plugin
implements (``pkg/scheduler/framework/plugins/*``), ``podtopologyspread/plugin.go`` (system defaults).
"""
from __future__ import annotations

__all__ = [
           "DEFAULT_MULTIPOINT",
           "DEFAULT_SCHEDULER_NAME",
           "EXTENSION_POINTS",
           "NOT_MODELLED",
           "PLUGIN_POINTS",
           "SYSTEM_DEFAULT_CONSTRAINTS",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"

EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
                    "reserve", "permit", "preBind", "bind", "postBind")

# (name, weight) in the order of getDefaultPlugins' MultiPoint; weight 0 = not a score plugin.
DEFAULT_MULTIPOINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 1),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
)

# The extension points each in-tree plugin implements.
PLUGIN_POINTS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": frozenset({"preFilter", "filter"}),
    "NodeResourcesFit": frozenset({"preFilter", "filter", "preScore", "score"}),
    "VolumeRestrictions": frozenset({"preFilter", "filter"}),
    "NodeVolumeLimits": frozenset({"preFilter", "filter"}),
    "VolumeBinding": frozenset({"preFilter", "filter", "reserve", "preBind", "preScore", "score"}),
    "VolumeZone": frozenset({"preFilter", "filter"}),
    "PodTopologySpread": frozenset({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "DynamicResources": frozenset({"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve",
                                   "preBind"}),
    "DefaultPreemption": frozenset({"preEnqueue", "postFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({"preScore", "score"}),
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
}

# Plugins of the default profile that optisched accepts but does not model.
NOT_MODELLED = frozenset({"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                          "DynamicResources"})

# podtopologyspread.systemDefaultConstraints
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict, ...] = (
    {"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
)
