"""The in-tree plugin registry (``pkg/scheduler/framework/plugins/registry.go``'s ``NewInTreeRegistry``).

Each plugin name maps to the rule classes that implement it: a filter side in
``constraints/`` and a score side in ``objectives/``. What the engines need to know
of a plugin beyond its extension points (the events it requeues on, whether its
filter is static) is declared on its class (:class:`optisched.framework.Plugin`),
not in tables here. Plugins of the default profile that optisched does not model
(DRA, scheduling gates) are listed in :data:`optisched.profile.NOT_MODELLED` instead.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["REGISTRY", "instantiate", "rule_class"]

REGISTRY: dict[str, dict[str, str]] = {
    "NodeUnschedulable": {"filter": "constraints.node_unschedulable:NodeUnschedulable"},
    "NodeName": {"filter": "constraints.node_name:NodeName"},
    "TaintToleration": {"filter": "constraints.taint_toleration:TaintToleration",
                        "score": "constraints.taint_toleration:TaintToleration"},
    "NodeAffinity": {"filter": "constraints.node_affinity:NodeAffinity",
                     "score": "constraints.node_affinity:NodeAffinity"},
    "NodePorts": {"filter": "constraints.node_ports:NodePorts"},
    "VolumeRestrictions": {"filter": "constraints.volume_restrictions:VolumeRestrictions"},
    "NodeVolumeLimits": {"filter": "constraints.node_volume_limits:NodeVolumeLimits"},
    "VolumeBinding": {"filter": "constraints.volume_binding:VolumeBinding"},
    "VolumeZone": {"filter": "constraints.volume_zone:VolumeZone"},
    "NodeResourcesFit": {"filter": "constraints.node_resources_fit:NodeResourcesFit",
                         "score": "objectives.node_resources_fit:NodeResourcesFitScore"},
    "PodTopologySpread": {"filter": "constraints.pod_topology_spread:PodTopologySpread",
                          "score": "objectives.pod_topology_spread:PodTopologySpreadScore"},
    "InterPodAffinity": {"filter": "constraints.inter_pod_affinity:InterPodAffinity",
                         "score": "objectives.inter_pod_affinity:InterPodAffinityScore"},
    "NodeResourcesBalancedAllocation": {"score": "objectives.balanced_allocation:BalancedAllocation"},
    "ImageLocality": {"score": "objectives.image_locality:ImageLocality"},
    # GPU sharing and the FGD paper's policies (hkust-adsl/kubernetes-scheduler-simulator)
    "Open-Gpu-Share": {"filter": "constraints.gpu_share_plugin:GpuShare"},
    "FGD": {"score": "objectives.gpu_policy_plugin:FGD"},
    "BestFit": {"score": "objectives.gpu_policy_plugin:BestFit"},
    "DotProd": {"score": "objectives.gpu_policy_plugin:DotProd"},
    "GpuPacking": {"score": "objectives.gpu_policy_plugin:GpuPacking"},
    "GpuClustering": {"score": "objectives.gpu_policy_plugin:GpuClustering"},
    "Random": {"score": "objectives.gpu_policy_plugin:Random"},
}


def rule_class(path: str) -> Any:
    module, _, cls = path.partition(":")
    return getattr(import_module(f"optisched.{module}"), cls)


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
