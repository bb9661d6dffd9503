"""``.profiles[*].pluginConfig``: each plugin's args decoded, defaulted and validated as the release's
kube-scheduler does (``pkg/scheduler/apis/config/v1/defaults.go``;
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``; where v1.35.4 and v1.36.2 differ, the
:class:`.defaults.Release` says how)."""
from __future__ import annotations

from typing import Any

from .args import (
    DEFAULT_SPECS,
    BalancedAllocationArgs,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategyType,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from .defaults import API_VERSION, REMOVED_PLUGINS, Release
from .gates import FeatureGates
from .reader import FieldReader

__all__ = ["ARGS_PLUGINS", "DEFAULT_VOLUME_SHAPE", "decode_plugin_configs", "dynamic_resources_defaults",
           "volume_binding_defaults"]

_TYPE_META = ("apiVersion", "kind")


def _resources(r: FieldReader, raw: Any, path: str, *, only_one: bool) -> tuple[ResourceSpec, ...]:
    """ResourceSpecs; weight 0/unset is 1; weights in [1, 100] (Fit) or exactly 1 (BalancedAllocation)."""
    out: list[ResourceSpec] = []
    for i, item in enumerate(r.seq(raw, path)):
        p = f"{path}[{i}]"
        item = r.obj(item, p, ("name", "weight"), required=True)
        name = r.string(item.get("name"), f"{p}.name")
        weight = item.get("weight")
        weight = (0 if weight is None else r.integer(weight, f"{p}.weight", -(2**63), 2**63 - 1)) or 1
        if only_one and name in (s.name for s in out):
            raise r.fail(f"{p}.name", f"duplicate resource {name!r}")
        if only_one and weight != 1:
            raise r.fail(f"{p}.weight", f"{weight} must be 1")
        if not 1 <= weight <= 100:
            raise r.fail(f"{p}.weight", f"resource weight of {name} is {weight}, not in the valid range [1, 100]")
        out.append(ResourceSpec(name, weight))
    return tuple(out) or DEFAULT_SPECS


def _shape(r: FieldReader, raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    """``validateFunctionShape``: at least one point, utilization increasing in [0, 100], score in [0, 10]."""
    raw = r.obj(raw, path, ("shape",))
    points = []
    for i, pt in enumerate(r.seq(raw.get("shape"), f"{path}.shape")):
        pt = r.obj(pt, f"{path}.shape[{i}]", ("utilization", "score"), required=True)
        u = r.integer(pt.get("utilization", 0), f"{path}.shape[{i}].utilization")
        points.append(UtilizationShapePoint(u, r.integer(pt.get("score", 0), f"{path}.shape[{i}].score")))
    if not points:
        raise r.fail(f"{path}.shape", "at least one point must be specified")
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            raise r.fail(f"{path}.shape[{i}].utilization", "values must be sorted in increasing order")
    for i, pt in enumerate(points):
        r.integer(pt.utilization, f"{path}.shape[{i}].utilization", 0, 100)
        r.integer(pt.score, f"{path}.shape[{i}].score", 0, 10)
    return tuple(points)


def _fit_args(r: FieldReader, a: Any, path: str, release: Release) -> NodeResourcesFitArgs:
    a = r.obj(a, path, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy", *_TYPE_META))
    ignored = tuple(r.qualified_name(x, f"{path}.ignoredResources[{i}]")
                    for i, x in enumerate(r.seq(a.get("ignoredResources"), f"{path}.ignoredResources")))
    groups = tuple(r.qualified_name(x, f"{path}.ignoredResourceGroups[{i}]")
                   for i, x in enumerate(r.seq(a.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups")))
    for i, g in enumerate(groups):
        if "/" in g:
            raise r.fail(f"{path}.ignoredResourceGroups[{i}]", f"{g!r}: a resource group name can't contain '/'")
    if a.get("scoringStrategy") is None:
        return NodeResourcesFitArgs(ignored, groups)
    sp = f"{path}.scoringStrategy"
    ss = r.obj(a["scoringStrategy"], sp, ("type", "resources", "requestedToCapacityRatio"))
    strategy = ScoringStrategyType(r.choice(ss.get("type"), f"{sp}.type", tuple(ScoringStrategyType)))
    resources = _resources(r, ss.get("resources"), f"{sp}.resources", only_one=False)
    rtcr, rp = ss.get("requestedToCapacityRatio"), f"{sp}.requestedToCapacityRatio"
    shape: tuple[UtilizationShapePoint, ...] = ()
    if strategy is ScoringStrategyType.RequestedToCapacityRatio:
        if rtcr is None:  # v1.36's validation; v1.35.4's NewFit dereferences the missing ratio and crashes
            raise r.fail(rp, "required when type is RequestedToCapacityRatio")
        shape = _shape(r, rtcr, rp)
    elif rtcr is not None and release.strict_ratio_params:
        raise r.fail(rp, "must not be set when type is not RequestedToCapacityRatio")
    return NodeResourcesFitArgs(ignored, groups, strategy, resources, shape)


def _balanced_args(r: FieldReader, a: Any, path: str, release: Release) -> BalancedAllocationArgs:
    a = r.obj(a, path, ("resources", *_TYPE_META))
    return BalancedAllocationArgs(_resources(r, a.get("resources"), f"{path}.resources", only_one=True))


_CONSTRAINT_FIELDS = ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector", "minDomains",
                      "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys")


def _spread_args(r: FieldReader, a: Any, path: str, release: Release) -> PodTopologySpreadArgs:
    """``ValidatePodTopologySpreadArgs``."""
    a = r.obj(a, path, ("defaultConstraints", "defaultingType", *_TYPE_META))
    dtype = r.choice(a.get("defaultingType") or "System", f"{path}.defaultingType", ("System", "List"))
    raw = r.seq(a.get("defaultConstraints"), f"{path}.defaultConstraints")
    if dtype == "System" and raw:
        raise r.fail(f"{path}.defaultingType", "'System' is invalid when .defaultConstraints are not empty")
    seen: list[tuple[str, str]] = []
    for i, c in enumerate(raw):
        p = f"{path}.defaultConstraints[{i}]"
        c = r.obj(c, p, _CONSTRAINT_FIELDS, required=True)
        r.integer(c.get("maxSkew", 0), f"{p}.maxSkew", 1)
        key = r.qualified_name(c.get("topologyKey"), f"{p}.topologyKey")
        when = r.choice(c.get("whenUnsatisfiable"), f"{p}.whenUnsatisfiable", ("DoNotSchedule", "ScheduleAnyway"))
        if c.get("labelSelector") is not None:
            raise r.fail(f"{p}.labelSelector", "a default constraint must not have a selector: "
                                               "it is deduced for each pod")
        if (key, when) in seen:
            raise r.fail(p, f"duplicate constraint {{{key}, {when}}}")
        seen.append((key, when))
    return PodTopologySpreadArgs(tuple(dict(c) for c in raw), dtype)


def _inter_pod_affinity_args(r: FieldReader, a: Any, path: str, release: Release) -> InterPodAffinityArgs:
    a = r.obj(a, path, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods", *_TYPE_META))
    w = a.get("hardPodAffinityWeight")
    ignore = a.get("ignorePreferredTermsOfExistingPods")
    return InterPodAffinityArgs(
        r.integer(1 if w is None else w, f"{path}.hardPodAffinityWeight", 0, 100),
        False if ignore is None else r.boolean(ignore, f"{path}.ignorePreferredTermsOfExistingPods"))


_NODE_AFFINITY_FIELDS = ("requiredDuringSchedulingIgnoredDuringExecution",
                         "preferredDuringSchedulingIgnoredDuringExecution")


def _node_affinity_args(r: FieldReader, a: Any, path: str, release: Release) -> NodeAffinityArgs:
    """``ValidateNodeAffinityArgs``, shallowly: the addedAffinity must be a valid NodeAffinity."""
    from pydantic import ValidationError

    from ..model.documents import validation_message
    from ..model.objects import NodeAffinity

    a = r.obj(a, path, ("addedAffinity", *_TYPE_META))
    added = a.get("addedAffinity")
    if added is not None:
        try:
            spec = NodeAffinity.model_validate(r.obj(added, f"{path}.addedAffinity", _NODE_AFFINITY_FIELDS))
        except ValidationError as e:
            sub, msg = validation_message(e)
            raise r.fail(f"{path}.addedAffinity{sub}", msg) from None
        _check_added_terms(r, spec, f"{path}.addedAffinity")
    return NodeAffinityArgs(added)


def _check_added_terms(r: FieldReader, spec: Any, path: str) -> None:
    """``nodeaffinity.NewNodeSelector`` / ``NewPreferredSchedulingTerms`` must parse every term, or
    kube-scheduler refuses the configuration (``ValidateNodeAffinityArgs``)."""
    from ..model.label_syntax import term_error

    req = spec.required_during_scheduling_ignored_during_execution
    for i, term in enumerate(req.node_selector_terms if req is not None else ()):
        if (err := term_error(term)) is not None:
            raise r.fail(f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", err)
    for i, pref in enumerate(spec.preferred_during_scheduling_ignored_during_execution):
        if (err := term_error(pref.preference)) is not None:
            raise r.fail(f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference", err)


def _preemption_args(r: FieldReader, a: Any, path: str, release: Release) -> DefaultPreemptionArgs:
    a = r.obj(a, path, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute", *_TYPE_META))
    pct, absolute = a.get("minCandidateNodesPercentage"), a.get("minCandidateNodesAbsolute")
    pct = r.integer(10 if pct is None else pct, f"{path}.minCandidateNodesPercentage", 0, 100)
    absolute = r.integer(100 if absolute is None else absolute, f"{path}.minCandidateNodesAbsolute", 0)
    if pct == 0 and absolute == 0:
        raise r.fail(f"{path}.minCandidateNodesPercentage",
                     "cannot be zero at the same time as minCandidateNodesAbsolute")
    return DefaultPreemptionArgs(pct, absolute)


STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
# SetDefaults_VolumeBindingArgs with StorageCapacityScoring on: nodes with more room for the claim score more
DEFAULT_VOLUME_SHAPE = (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))


def volume_binding_defaults(gates: FeatureGates | None) -> VolumeBindingArgs:
    """``SetDefaults_VolumeBindingArgs`` of an empty args object: 600 s, and the default ``shape`` when
    StorageCapacityScoring is on (beta and on in 1.37; alpha and off in 1.35 and 1.36)."""
    on = gates is not None and gates.enabled(STORAGE_CAPACITY_SCORING)
    return VolumeBindingArgs(shape=DEFAULT_VOLUME_SHAPE if on else ())


def _volume_binding_args(r: FieldReader, a: Any, path: str, gates: FeatureGates | None) -> VolumeBindingArgs:
    """``ValidateVolumeBindingArgsWithOptions``: ``shape`` is validated as a function shape when
    StorageCapacityScoring is on, refused when it is off. Binding is instant here, so
    ``bindTimeoutSeconds`` changes nothing."""
    a = r.obj(a, path, ("bindTimeoutSeconds", "shape", *_TYPE_META))
    default = volume_binding_defaults(gates)
    shape = default.shape
    if a.get("shape") is not None:
        if not default.shape:
            raise r.fail(f"{path}.shape", "unexpected field `shape`, remove it or turn on the feature gate "
                                          "StorageCapacityScoring")
        shape = _shape(r, {"shape": a["shape"]}, path) if a["shape"] else default.shape
    timeout = a.get("bindTimeoutSeconds")
    timeout = 600 if timeout is None else r.integer(timeout, f"{path}.bindTimeoutSeconds", 0, 2**63 - 1)
    return VolumeBindingArgs(timeout, shape)


def dynamic_resources_defaults(release: Release) -> DynamicResourcesArgs:
    """``SetDefaults_DynamicResourcesArgs`` of an empty args object under the release's default gates."""
    return DynamicResourcesArgs(binding_timeout=release.binding_timeout)


def _dynamic_resources_args(r: FieldReader, a: Any, path: str, release: Release) -> DynamicResourcesArgs:
    """``ValidateDynamicResourcesArgs`` (not modelled): ``filterTimeout`` >= 0; ``bindingTimeout`` >= 1s
    where DRADeviceBindingConditions is on (v1.36), forbidden where it is off (v1.35)."""
    a = r.obj(a, path, ("filterTimeout", "bindingTimeout", *_TYPE_META))
    args = dynamic_resources_defaults(release)
    if a.get("filterTimeout") is not None:
        timeout = r.duration(a["filterTimeout"], f"{path}.filterTimeout", 0.0)
        args = DynamicResourcesArgs(timeout, args.binding_timeout)
    if a.get("bindingTimeout") is not None:
        if release.binding_timeout is None:
            raise r.fail(f"{path}.bindingTimeout", f"Forbidden: DRADeviceBindingConditions or "
                                                   f"DRAResourceClaimDeviceStatus feature gate is disabled "
                                                   f"(kube-scheduler {release.patch} refuses to start)")
        binding = r.duration(a["bindingTimeout"], f"{path}.bindingTimeout", 1.0)
        args = DynamicResourcesArgs(args.filter_timeout, binding)
    return args


_ARGS: dict[str, tuple[str, Any]] = {
    "NodeResourcesFit": ("fit", _fit_args),
    "NodeResourcesBalancedAllocation": ("balanced", _balanced_args),
    "PodTopologySpread": ("spread", _spread_args),
    "InterPodAffinity": ("inter_pod_affinity", _inter_pod_affinity_args),
    "NodeAffinity": ("node_affinity", _node_affinity_args),
    "DefaultPreemption": ("preemption", _preemption_args),
    "DynamicResources": ("dynamic_resources", _dynamic_resources_args),
}


def _type_meta(r: FieldReader, args: Any, path: str, plugin: str) -> None:
    """``decodeNestedObjects``: args that name a type must name this plugin's (``<Plugin>Args``)."""
    if not isinstance(args, dict):
        return
    if args.get("apiVersion") not in (None, API_VERSION):
        raise r.fail(f"{path}.apiVersion", f"{args['apiVersion']!r} is not supported; expected {API_VERSION}")
    if args.get("kind") not in (None, f"{plugin}Args"):
        raise r.fail(f"{path}.kind", f"args for plugin {plugin} must be of kind {plugin}Args, got {args['kind']!r}")


def decode_plugin_configs(r: FieldReader, raw: Any, path: str, release: Release, gates: FeatureGates | None = None
                          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Profile fields of parsed args, raw args by plugin name in the order given), under ``gates``."""
    parsed: dict[str, Any] = {"dynamic_resources": dynamic_resources_defaults(release),
                              "volume_binding": volume_binding_defaults(gates)}
    raw_args: dict[str, Any] = {}
    for i, pc in enumerate(r.seq(raw, path)):
        p = f"{path}[{i}]"
        pc = r.obj(pc, p, ("name", "args"), required=True)
        name = r.string(pc.get("name"), f"{p}.name")
        if name in raw_args:
            raise r.fail(f"{p}.name", f"pluginConfig for {name} is given twice")
        if name in REMOVED_PLUGINS:
            raise r.fail(f"{p}.name", f"plugin {name!r} was removed and is invalid in {API_VERSION}")
        raw_args[name] = pc.get("args")
        if name == "VolumeBinding":  # its defaults and validation read the gates, not the release
            _type_meta(r, pc.get("args"), f"{p}.args", name)
            parsed["volume_binding"] = _volume_binding_args(r, pc.get("args"), f"{p}.args", gates)
        elif name in _ARGS:
            attr, parse = _ARGS[name]
            _type_meta(r, pc.get("args"), f"{p}.args", name)
            parsed[attr] = parse(r, pc.get("args"), f"{p}.args", release)
    return parsed, raw_args


ARGS_PLUGINS = frozenset(_ARGS) | {"VolumeBinding"}
"""The plugins with an args kind (``<Plugin>Args``, ``kube-scheduler/config/v1/register.go``)."""
