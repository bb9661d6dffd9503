"""The in-tree plugin registry (``pkg/scheduler/framework/plugins/registry.go``'s ``NewInTreeRegistry``).

Each plugin name (:mod:`optisched.plugins.names`) maps to the rule classes that implement it, in
``plugins/``: one class for both sides, or a filter class and a score class. What the engines need to
know of a plugin beyond its extension points (the events it requeues on, whether its filter is
static, its preemption dry run) is declared on its class (:class:`optisched.framework.Plugin`), not in
tables here. Plugins of the default profile without a rule class here (scheduling gates, which the
greedy queue applies itself, sorting, preemption and binding) declare their points in
:data:`optisched.profile.defaults.UNMODELLED_POINTS`.
"""
from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from .plugins import names

__all__ = ["REGISTRY", "instantiate", "plugin_points", "rule_class"]

REGISTRY: dict[str, dict[str, str]] = {
    names.NODE_UNSCHEDULABLE: {"filter": "plugins.node_unschedulable:NodeUnschedulable"},
    names.NODE_NAME: {"filter": "plugins.node_name:NodeName"},
    names.TAINT_TOLERATION: {"filter": "plugins.taint_toleration:TaintToleration",
                             "score": "plugins.taint_toleration:TaintToleration"},
    names.NODE_AFFINITY: {"filter": "plugins.node_affinity:NodeAffinity",
                          "score": "plugins.node_affinity:NodeAffinity"},
    names.NODE_PORTS: {"filter": "plugins.node_ports:NodePorts"},
    names.VOLUME_RESTRICTIONS: {"filter": "plugins.volumes.volume_restrictions:VolumeRestrictions"},
    names.NODE_VOLUME_LIMITS: {"filter": "plugins.volumes.node_volume_limits:NodeVolumeLimits"},
    names.VOLUME_BINDING: {"filter": "plugins.volumes.volume_binding:VolumeBinding",
                           "score": "plugins.volumes.volume_binding:VolumeBinding"},
    names.VOLUME_ZONE: {"filter": "plugins.volumes.volume_zone:VolumeZone"},
    names.NODE_RESOURCES_FIT: {"filter": "plugins.noderesources.fit:NodeResourcesFit",
                               "score": "plugins.noderesources.scoring:NodeResourcesFitScore"},
    names.POD_TOPOLOGY_SPREAD: {"filter": "plugins.podtopologyspread.filtering:PodTopologySpread",
                                "score": "plugins.podtopologyspread.scoring:PodTopologySpreadScore"},
    names.INTER_POD_AFFINITY: {"filter": "plugins.interpodaffinity.filtering:InterPodAffinity",
                               "score": "plugins.interpodaffinity.scoring:InterPodAffinityScore"},
    names.NODE_DECLARED_FEATURES: {"filter": "plugins.node_declared_features:NodeDeclaredFeatures"},
    names.BALANCED_ALLOCATION: {"score": "plugins.noderesources.balanced_allocation:BalancedAllocation"},
    names.IMAGE_LOCALITY: {"score": "plugins.image_locality:ImageLocality"},
    names.DYNAMIC_RESOURCES: {"filter": "plugins.dynamicresources.plugin:DynamicResources",
                              "score": "plugins.dynamicresources.plugin:DynamicResources"},
    # GPU sharing and the FGD paper's policies (hkust-adsl/kubernetes-scheduler-simulator)
    names.GPU_SHARE: {"filter": "plugins.gpu.share_plugin:GpuShare"},
    names.FGD: {"score": "plugins.gpu.policy_plugin:FGD"},
    names.BEST_FIT: {"score": "plugins.gpu.policy_plugin:BestFit"},
    names.DOT_PROD: {"score": "plugins.gpu.policy_plugin:DotProd"},
    names.GPU_PACKING: {"score": "plugins.gpu.policy_plugin:GpuPacking"},
    names.GPU_CLUSTERING: {"score": "plugins.gpu.policy_plugin:GpuClustering"},
    names.RANDOM: {"score": "plugins.gpu.policy_plugin:Random"},
}


def rule_class(path: str) -> Any:
    module, _, cls = path.partition(":")
    return getattr(import_module(f"optisched.{module}"), cls)


@cache
def plugin_points(name: str) -> frozenset[str]:
    """The extension points a registered plugin implements (its classes' ``points``; none when it is
    not registered)."""
    return frozenset().union(*(rule_class(path).points for path in REGISTRY.get(name, {}).values()))


def instantiate(snapshot: Any, profile: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build the profile's filter and score rules once each (a class serving both sides is shared) for a
    ``model.snapshot.Snapshot`` and a ``profile.Profile`` (not imported: the profile reads this registry)."""
    built: dict[str, Any] = {}
    filters: dict[str, Any] = {}
    scores: dict[str, Any] = {}
    wanted_filters = set(profile.plugins.get("filter", ())) | set(profile.plugins.get("preFilter", ()))
    wanted_scores = set(profile.plugins.get("score", ())) | set(profile.plugins.get("preScore", ()))
    for name, sides in REGISTRY.items():
        for side, target, wanted in (("filter", filters, wanted_filters), ("score", scores, wanted_scores)):
            if side in sides and name in wanted:
                path = sides[side]
                if path not in built:
                    built[path] = rule_class(path)(snapshot, profile)
                target[name] = built[path]
    return filters, scores
