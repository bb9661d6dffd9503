"""Scheduler profiles: ``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1) parsed and defaulted
exactly as kube-scheduler v1.35 does.

Plugin sets are merged as ``mergePlugins`` (``apis/config/v1/default_plugins.go``) and expanded from
multiPoint as the framework's ``expandMultiPointPlugins`` does (plugins enabled explicitly at a point
first, in their order; then the multiPoint plugins; ``disabled: [{name: "*"}]`` turns a point's
defaults off). Argument defaults follow ``apis/config/v1/defaults.go``, checks
``apis/config/validation``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from .errors import InputError
from .profile_defaults import (
    DEFAULT_MULTIPOINT,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    NOT_MODELLED,
    PLUGIN_POINTS,
    SYSTEM_DEFAULT_CONSTRAINTS,
)
from .version import KUBE_VERSION

__all__ = [
    "KUBE_VERSION",
    "NOT_MODELLED",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "BalancedAllocationArgs",
    "DefaultPreemptionArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesFitArgs",
    "PodTopologySpreadArgs",
    "Profile",
    "ResourceSpec",
    "SchedulerConfig",
    "ScoringStrategyType",
    "UtilizationShapePoint",
    "default_config",
    "load_config",
    "parse_config",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
_OBJ = "KubeSchedulerConfiguration"


class ScoringStrategyType(StrEnum):
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


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    strategy: ScoringStrategyType = ScoringStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class BalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[dict, ...] = ()
    defaulting_type: str = "System"

    @property
    def effective_default_constraints(self) -> tuple[dict, ...]:
        """System defaults, or the listed ones (``buildDefaultConstraints``)."""
        return SYSTEM_DEFAULT_CONSTRAINTS if self.defaulting_type == "System" else self.default_constraints


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True)
class NodeAffinityArgs:
    added_affinity: dict | None = None


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True)
class Profile:
    scheduler_name: str
    plugins: Mapping[str, tuple[str, ...]]
    score_weights: Mapping[str, int]
    percentage_of_nodes_to_score: int | None = None
    fit: NodeResourcesFitArgs = NodeResourcesFitArgs()
    balanced: BalancedAllocationArgs = BalancedAllocationArgs()
    spread: PodTopologySpreadArgs = PodTopologySpreadArgs()
    inter_pod_affinity: InterPodAffinityArgs = InterPodAffinityArgs()
    node_affinity: NodeAffinityArgs = NodeAffinityArgs()
    preemption: DefaultPreemptionArgs = DefaultPreemptionArgs()
    not_modelled: tuple[str, ...] = ()

    def enabled(self, point: str, plugin: str) -> bool:
        return plugin in self.plugins.get(point, ())

    def effective_percentage(self, global_pct: int | None) -> int:
        """The profile's percentageOfNodesToScore, else the global one, else 0 (adaptive)."""
        if self.percentage_of_nodes_to_score is not None:
            return self.percentage_of_nodes_to_score
        return global_pct if global_pct is not None else 0


@dataclass(frozen=True)
class SchedulerConfig:
    percentage_of_nodes_to_score: int | None
    parallelism: int
    profiles: tuple[Profile, ...]
    source: str = "<default>"

    def profile_for(self, scheduler_name: str) -> Profile | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)


# ---------------------------------------------------------------------- parsing helpers
class _Ctx:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, msg: str) -> InputError:
        return InputError(msg, source=self.source, obj=_OBJ, path=path)

    def mapping(self, v: Any, path: str, *, allow_none: bool = True) -> dict:
        if v is None and allow_none:
            return {}
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {type(v).__name__}")
        return v

    def seq(self, v: Any, path: str) -> list:
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        return v

    def integer(self, v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"{v!r} is not an integer")
        if lo is not None and v < lo or hi is not None and v > hi:
            rng = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise self.fail(path, f"{v} must be {rng}")
        return v

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(path, f"{v!r} is not a non-empty string")
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(path, f"{v!r} is not true or false")
        return v


def _plugin_list(ctx: _Ctx, v: Any, path: str) -> list[tuple[str, int | None]]:
    out = []
    for i, entry in enumerate(ctx.seq(v, path)):
        p = f"{path}[{i}]"
        entry = ctx.mapping(entry, p, allow_none=False)
        name = ctx.string(entry.get("name"), f"{p}.name")
        weight = entry.get("weight")
        if weight is not None:
            weight = ctx.integer(weight, f"{p}.weight", 0, 100)
        out.append((name, weight))
    return out


def _expand_plugins(ctx: _Ctx, plugins: dict, path: str) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """mergePlugins(defaults, custom) then expandMultiPointPlugins, per extension point."""
    known_points = set(EXTENSION_POINTS) | {"multiPoint"}
    for key in plugins:
        if key not in known_points:
            raise ctx.fail(f"{path}.{key}", f"unknown extension point; expected one of {', '.join(sorted(known_points))}")

    def sets(point: str) -> tuple[list[tuple[str, int | None]], list[str]]:
        block = ctx.mapping(plugins.get(point), f"{path}.{point}")
        enabled = _plugin_list(ctx, block.get("enabled"), f"{path}.{point}.enabled")
        disabled = [n for n, _ in _plugin_list(ctx, block.get("disabled"), f"{path}.{point}.disabled")]
        return enabled, disabled

    # mergePluginSet for multiPoint
    mp_enabled, mp_disabled = sets("multiPoint")
    custom_idx = {n: (i, (n, w)) for i, (n, w) in enumerate(mp_enabled)}
    replaced: set[int] = set()
    multipoint: list[tuple[str, int | None]] = []
    if "*" not in mp_disabled:
        for name, weight in DEFAULT_MULTIPOINT:
            if name in mp_disabled:
                continue
            entry: tuple[str, int | None] = (name, weight or None)
            if name in custom_idx:
                idx, entry = custom_idx[name]
                replaced.add(idx)
            multipoint.append(entry)
    multipoint += [e for i, e in enumerate(mp_enabled) if i not in replaced]

    result: dict[str, tuple[str, ...]] = {}
    weights: dict[str, int] = {}
    for point in EXTENSION_POINTS:
        enabled, disabled = sets(point)
        names = [n for n, _ in enabled]
        if len(set(names)) != len(names):
            raise ctx.fail(f"{path}.{point}.enabled", "a plugin is enabled twice")
        order: list[str]
        if "*" in disabled:
            order = names
        else:
            override = [n for n in names if any(n == m for m, _ in multipoint)]
            mp = [m for m, _ in multipoint
                  if m not in disabled and m not in names and point in PLUGIN_POINTS.get(m, {point})]
            order = override + mp + [n for n in names if n not in override]
        result[point] = tuple(order)
        if point == "score":
            explicit = dict(enabled)
            mp_w = dict(multipoint)
            for n in order:
                w = explicit.get(n) if n in explicit else mp_w.get(n)
                weights[n] = w if w else 1
    return result, weights


def _resources(ctx: _Ctx, v: Any, path: str, default: tuple[ResourceSpec, ...]) -> tuple[ResourceSpec, ...]:
    items = ctx.seq(v, path)
    if not items:
        return default
    out, seen = [], set()
    for i, r in enumerate(items):
        p = f"{path}[{i}]"
        r = ctx.mapping(r, p, allow_none=False)
        name = ctx.string(r.get("name"), f"{p}.name")
        if name in seen:
            raise ctx.fail(f"{p}.name", f"resource {name!r} is listed twice")
        seen.add(name)
        w = r.get("weight", 0)
        w = ctx.integer(w, f"{p}.weight", 0, 100) if w is not None else 0
        out.append(ResourceSpec(name, w or 1))
    return tuple(out)


def _fit_args(ctx: _Ctx, args: dict, path: str) -> NodeResourcesFitArgs:
    ignored = tuple(ctx.string(x, f"{path}.ignoredResources[{i}]")
                    for i, x in enumerate(ctx.seq(args.get("ignoredResources"), f"{path}.ignoredResources")))
    groups = tuple(ctx.string(x, f"{path}.ignoredResourceGroups[{i}]")
                   for i, x in enumerate(ctx.seq(args.get("ignoredResourceGroups"), f"{path}.ignoredResourceGroups")))
    for i, g in enumerate(groups):
        if "/" in g:
            raise ctx.fail(f"{path}.ignoredResourceGroups[{i}]", f"{g!r}: resource group name can't contain '/'")
    ss = ctx.mapping(args.get("scoringStrategy"), f"{path}.scoringStrategy")
    sp = f"{path}.scoringStrategy"
    raw_type = ss.get("type") or "LeastAllocated"
    try:
        strategy = ScoringStrategyType(raw_type)
    except ValueError:
        raise ctx.fail(f"{sp}.type", f"{raw_type!r} is not one of LeastAllocated, MostAllocated, "
                                     "RequestedToCapacityRatio") from None
    resources = _resources(ctx, ss.get("resources"), f"{sp}.resources", NodeResourcesFitArgs.resources)
    shape: tuple[UtilizationShapePoint, ...] = ()
    if strategy == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
        rtcr = ctx.mapping(ss.get("requestedToCapacityRatio"), f"{sp}.requestedToCapacityRatio")
        pts = ctx.seq(rtcr.get("shape"), f"{sp}.requestedToCapacityRatio.shape")
        if not pts:
            raise ctx.fail(f"{sp}.requestedToCapacityRatio.shape", "at least one point is required")
        out = []
        for i, pt in enumerate(pts):
            p = f"{sp}.requestedToCapacityRatio.shape[{i}]"
            pt = ctx.mapping(pt, p, allow_none=False)
            u = ctx.integer(pt.get("utilization", 0), f"{p}.utilization", 0, 100)
            s = ctx.integer(pt.get("score", 0), f"{p}.score", 0, 10)
            if out and u <= out[-1].utilization:
                raise ctx.fail(f"{p}.utilization", "utilization values must be sorted in increasing order")
            out.append(UtilizationShapePoint(u, s))
        shape = tuple(out)
    return NodeResourcesFitArgs(ignored, groups, strategy, resources, shape)


def _spread_args(ctx: _Ctx, args: dict, path: str) -> PodTopologySpreadArgs:
    dtype = args.get("defaultingType") or "System"
    if dtype not in ("System", "List"):
        raise ctx.fail(f"{path}.defaultingType", f"{dtype!r} is not one of System, List")
    cons = []
    seen = set()
    for i, c in enumerate(ctx.seq(args.get("defaultConstraints"), f"{path}.defaultConstraints")):
        p = f"{path}.defaultConstraints[{i}]"
        c = ctx.mapping(c, p, allow_none=False)
        ctx.integer(c.get("maxSkew"), f"{p}.maxSkew", 1)
        key = ctx.string(c.get("topologyKey"), f"{p}.topologyKey")
        when = c.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ctx.fail(f"{p}.whenUnsatisfiable", f"{when!r} is not one of DoNotSchedule, ScheduleAnyway")
        if c.get("labelSelector") is not None:
            raise ctx.fail(f"{p}.labelSelector", "default constraints must not have a labelSelector")
        if (key, when) in seen:
            raise ctx.fail(p, f"duplicate constraint for {key} / {when}")
        seen.add((key, when))
        cons.append(dict(c))
    if dtype == "System" and cons:
        raise ctx.fail(f"{path}.defaultConstraints", 'when .defaultingType is "System", .defaultConstraints must be empty')
    return PodTopologySpreadArgs(tuple(cons), dtype)


def _profile(ctx: _Ctx, raw: Any, path: str) -> Profile:
    raw = ctx.mapping(raw, path, allow_none=False)
    name = raw.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    ctx.string(name, f"{path}.schedulerName")
    pct = raw.get("percentageOfNodesToScore")
    if pct is not None:
        pct = ctx.integer(pct, f"{path}.percentageOfNodesToScore", 0, 100)
    plugins, weights = _expand_plugins(ctx, ctx.mapping(raw.get("plugins"), f"{path}.plugins"), f"{path}.plugins")
    if len(plugins["queueSort"]) != 1:
        raise ctx.fail(f"{path}.plugins.queueSort", "exactly one queueSort plugin must be enabled")
    args: dict[str, Any] = {}
    seen: set[str] = set()
    for i, pc in enumerate(ctx.seq(raw.get("pluginConfig"), f"{path}.pluginConfig")):
        p = f"{path}.pluginConfig[{i}]"
        pc = ctx.mapping(pc, p, allow_none=False)
        pname = ctx.string(pc.get("name"), f"{p}.name")
        if pname in seen:
            raise ctx.fail(f"{p}.name", f"pluginConfig for {pname} is given twice")
        seen.add(pname)
        a = ctx.mapping(pc.get("args"), f"{p}.args")
        ap = f"{p}.args"
        if pname == "NodeResourcesFit":
            args["fit"] = _fit_args(ctx, a, ap)
        elif pname == "NodeResourcesBalancedAllocation":
            args["balanced"] = BalancedAllocationArgs(
                _resources(ctx, a.get("resources"), f"{ap}.resources", BalancedAllocationArgs.resources))
        elif pname == "PodTopologySpread":
            args["spread"] = _spread_args(ctx, a, ap)
        elif pname == "InterPodAffinity":
            w = a.get("hardPodAffinityWeight", 1)
            ign = a.get("ignorePreferredTermsOfExistingPods", False)
            args["inter_pod_affinity"] = InterPodAffinityArgs(
                ctx.integer(w, f"{ap}.hardPodAffinityWeight", 0, 100),
                ctx.boolean(ign, f"{ap}.ignorePreferredTermsOfExistingPods"))
        elif pname == "NodeAffinity":
            added = a.get("addedAffinity")
            if added is not None:
                _validate_added_affinity(ctx, added, f"{ap}.addedAffinity")
            args["node_affinity"] = NodeAffinityArgs(added)
        elif pname == "DefaultPreemption":
            pctc = ctx.integer(a.get("minCandidateNodesPercentage", 10), f"{ap}.minCandidateNodesPercentage", 0, 100)
            absn = ctx.integer(a.get("minCandidateNodesAbsolute", 100), f"{ap}.minCandidateNodesAbsolute", 0)
            if pctc == 0 and absn == 0:
                raise ctx.fail(ap, "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero")
            args["preemption"] = DefaultPreemptionArgs(pctc, absn)
    enabled = {n for names in plugins.values() for n in names}
    not_modelled = tuple(sorted(n for n in enabled if n in NOT_MODELLED or n not in PLUGIN_POINTS))
    return Profile(name, plugins, weights, pct, not_modelled=not_modelled, **args)


def _validate_added_affinity(ctx: _Ctx, added: Any, path: str) -> None:
    from pydantic import ValidationError

    from .model.loader import validation_message
    from .model.objects import NodeAffinity

    try:
        NodeAffinity.model_validate(added)
    except ValidationError as e:
        sub, msg = validation_message(e)
        raise ctx.fail(path + sub, msg) from None


def parse_config(doc: Any, source: str = "<config>") -> SchedulerConfig:
    """Parse one ``KubeSchedulerConfiguration`` mapping; raise :class:`InputError` on anything invalid."""
    ctx = _Ctx(source)
    doc = ctx.mapping(doc, "", allow_none=False)
    api = doc.get("apiVersion")
    if api != API_VERSION:
        raise ctx.fail(".apiVersion", f"{api!r} is not supported; expected {API_VERSION}")
    if doc.get("kind") != _OBJ:
        raise ctx.fail(".kind", f"{doc.get('kind')!r}; expected {_OBJ}")
    pct = doc.get("percentageOfNodesToScore")
    if pct is not None:
        pct = ctx.integer(pct, ".percentageOfNodesToScore", 0, 100)
    par = ctx.integer(doc.get("parallelism", 16), ".parallelism", 1)
    raw_profiles = ctx.seq(doc.get("profiles"), ".profiles") or [{}]
    profiles = tuple(_profile(ctx, p, f".profiles[{i}]") for i, p in enumerate(raw_profiles))
    names = [p.scheduler_name for p in profiles]
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ctx.fail(f".profiles[{i}].schedulerName", f"duplicate schedulerName {n!r}")
    sorts = {p.plugins["queueSort"] for p in profiles}
    if len(sorts) > 1:
        raise ctx.fail(".profiles", "all profiles must use the same queueSort plugin")
    return SchedulerConfig(pct, par, profiles, source)


def default_config() -> SchedulerConfig:
    """What kube-scheduler runs with no configuration file."""
    return parse_config({"apiVersion": API_VERSION, "kind": _OBJ}, "<default>")


def load_config(path: str | Path) -> SchedulerConfig:
    """Read a YAML or JSON file holding one KubeSchedulerConfiguration."""
    from .model.loader import load_documents, read_source

    src, text = read_source(str(path))
    configs = [d for d in load_documents(src, text) if isinstance(d, dict) and d.get("kind") == _OBJ]
    if len(configs) != 1:
        raise InputError(f"expected exactly one {_OBJ} document, found {len(configs)}", source=src)
    return parse_config(configs[0], src)
