"""kube-scheduler v1.35's default profile, and the merge and multiPoint expansion of plugin sets.

Sources (kubernetes v1.35.4):

* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` (the multiPoint list and
  its weights, DynamicResources inserted before DefaultPreemption by ``applyFeatureGates``) and
  ``mergePluginSet``;
* ``pkg/scheduler/framework/runtime/framework.go``: ``updatePluginList``, ``expandMultiPointPlugins``
  and ``getScoreWeights``;
* the interfaces each in-tree plugin implements (``pkg/scheduler/framework/plugins/*``), as the
  conformance traces list them;
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
    "KIND",
    "MULTI_POINT",
    "NOT_MODELLED",
    "PLUGIN_POINTS",
    "REMOVED_PLUGINS",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "PluginSet",
    "expand_point",
    "merge_plugin_set",
    "score_weights",
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

# The extension points each in-tree plugin implements (the Go interfaces its type satisfies).
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
    "VolumeBinding": frozenset({"preFilter", "filter", "preScore", "score", "reserve", "preBind"}),
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

# In-tree plugins optisched accepts but does not model (any unknown, out-of-tree name is added per profile).
NOT_MODELLED: frozenset[str] = frozenset({"VolumeBinding", "VolumeRestrictions", "VolumeZone", "NodeVolumeLimits",
                                          "DynamicResources", "SchedulingGates"})

# validation.go invalidPluginsByVersion: removed plugins that a v1 configuration may not name.
REMOVED_PLUGINS: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

# podtopologyspread.systemDefaultConstraints
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict, ...] = (
    {"topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
)

Entry = tuple[str, int | None]


@dataclass(frozen=True)
class PluginSet:
    """v1.PluginSet: enabled (name, weight) entries in order, and the disabled names ("*" = all defaults)."""

    enabled: tuple[Entry, ...] = ()
    disabled: tuple[str, ...] = ()


DEFAULT_PLUGINS = PluginSet(DEFAULT_MULTIPOINT)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """``mergePluginSet``: defaults not disabled, in their order (a re-configured default takes the custom
    entry in place), then the remaining custom entries."""
    disabled = custom.disabled + default.disabled
    last = {name: i for i, (name, _) in enumerate(custom.enabled)}
    replaced: set[int] = set()
    merged: list[Entry] = []
    if "*" not in disabled:
        for name, weight in default.enabled:
            if name in disabled:
                continue
            if name in last:
                replaced.add(last[name])
                merged.append(custom.enabled[last[name]])
            else:
                merged.append((name, weight))
    merged += [e for i, e in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(tuple(merged), disabled)


def implements(plugin: str, point: str) -> bool:
    """Whether an in-tree plugin implements ``point`` (unknown plugins: unknown, so never expanded)."""
    return point in PLUGIN_POINTS.get(plugin, frozenset())


def expand_point(point: str, explicit: PluginSet, multipoint: tuple[Entry, ...]) -> tuple[str, ...]:
    """``expandMultiPointPlugins`` for one extension point.

    Order: plugins enabled at this point that multiPoint also enables (in this point's order), then the
    multiPoint plugins implementing the point and not disabled here, then the rest of this point's
    plugins. ``disabled: [{name: "*"}]`` at the point keeps only its explicit plugins.
    """
    names = list(dict.fromkeys(n for n, _ in explicit.enabled))
    if "*" in explicit.disabled:
        return tuple(names)
    overrides: set[str] = set()
    expanded: list[str] = []
    for name, _ in multipoint:
        if not implements(name, point) or name in explicit.disabled:
            continue
        if name in names:
            overrides.add(name)
        elif name not in expanded:
            expanded.append(name)
    first = [n for n in names if n in overrides]
    return tuple(first + expanded + [n for n in names if n not in overrides])


def score_weights(score: PluginSet, multipoint: tuple[Entry, ...], enabled: tuple[str, ...]) -> dict[str, int]:
    """``getScoreWeights``: the first weight given in score.enabled then multiPoint.enabled; 0/unset is 1."""
    weights: dict[str, int] = {}
    for name, weight in score.enabled + multipoint:
        if name in enabled and name not in weights:
            weights[name] = weight or 1
    return {name: weights.get(name, 1) for name in enabled}
