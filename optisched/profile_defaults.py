"""kube-scheduler v1.35's default profile, plugin-set merging, argument types with their defaults, and the
strict field reader that :mod:`optisched.profile` decodes a ``KubeSchedulerConfiguration`` with.

Sources (kubernetes v1.35.4):

* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``getDefaultPlugins`` (the multiPoint list and
  its weights, DynamicResources inserted before DefaultPreemption by ``applyFeatureGates``) and
  ``mergePluginSet``;
* ``pkg/scheduler/framework/runtime/framework.go``: ``updatePluginList``, ``expandMultiPointPlugins``
  and ``getScoreWeights``;
* the interfaces each in-tree plugin implements (``pkg/scheduler/framework/plugins/*``), as the
  conformance traces list them;
* ``pkg/scheduler/apis/config/v1/defaults.go``: ``SetDefaults_*Args`` (the argument dataclasses' defaults);
* ``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``: ``systemDefaultConstraints``;
* ``pkg/scheduler/apis/config/validation/validation.go``: ``invalidPluginsByVersion``;
* ``pkg/scheduler/apis/config/scheme/scheme.go``: strict decoding (unknown fields are errors).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .errors import InputError
from .version import KUBE_VERSION

__all__ = [
    "API_VERSION", "DEFAULT_MULTIPOINT", "DEFAULT_PARALLELISM", "DEFAULT_PLUGINS", "DEFAULT_RESOURCES",
    "DEFAULT_SCHEDULER_NAME", "DEFAULT_SPECS", "EXTENSION_POINTS", "KIND", "MULTI_POINT", "NOT_MODELLED",
    "PLUGIN_POINTS", "REMOVED_PLUGINS", "SYSTEM_DEFAULT_CONSTRAINTS", "BalancedAllocationArgs",
    "DefaultPreemptionArgs", "FieldReader", "FrozenMap", "InterPodAffinityArgs", "NodeAffinityArgs",
    "NodeResourcesFitArgs", "PluginSet", "PodTopologySpreadArgs", "ResourceSpec", "ScoringStrategyType",
    "UtilizationShapePoint", "decode_plugins", "expand_point", "implements", "merge_plugin_set", "score_weights",
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

# In-tree plugins optisched accepts but does not model. A name that is not in-tree is refused, as the stock
# kube-scheduler binary refuses it (pkg/scheduler/framework/runtime/framework.go, NewFramework).
# SchedulingGates is modelled by the greedy engine itself: gated pods stay pending and are reported.
NOT_MODELLED: frozenset[str] = frozenset({"DynamicResources"})

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


# ------------------------------------------------------------------------ argument types (defaults.go)
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


class FrozenMap(Mapping[str, Any]):
    """A read-only, hashable mapping (keeps insertion order)."""

    __slots__ = ("_d",)

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._d = dict(items)

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d.items()))

    def __repr__(self) -> str:
        return repr(self._d)


# ------------------------------------------------------------------------ strict field decoding
INT32_MAX = 2**31 - 1
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _what(v: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
             float: "a number", type(None): "null"}
    return names.get(type(v), type(v).__name__)


class FieldReader:
    """Typed access to the decoded YAML, failing with the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, msg: str) -> InputError:
        return InputError(msg, source=self.source, obj=KIND, path=path)

    def obj(self, v: Any, path: str, fields: tuple[str, ...] | None, required: bool = False) -> dict:
        """A mapping (null = empty unless required) whose keys are all in ``fields`` (None: any)."""
        if v is None and not required:
            return {}
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {_what(v)}")
        for key in v:
            if fields is not None and key not in fields:
                raise self.fail(f"{path}.{key}", f"unknown field; expected one of {', '.join(fields)}")
        return v

    def seq(self, v: Any, path: str) -> list:
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {_what(v)}")
        return v

    def integer(self, v: Any, path: str, lo: int = -INT32_MAX - 1, hi: int = INT32_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"{v!r} is not an integer")
        if not lo <= v <= hi:
            raise self.fail(path, f"{v} must be at least {lo}" if v < lo and hi >= INT32_MAX
                            else f"{v} is not in the valid range [{lo}, {hi}]")
        return v

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(path, f"expected a non-empty string, got {v!r}" if isinstance(v, str)
                            else f"expected a non-empty string, got {_what(v)}")
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(path, f"{v!r} is not true or false")
        return v

    def choice(self, v: Any, path: str, options: tuple[str, ...]) -> str:
        if v not in options:
            head = "required: one of" if v in (None, "") else f"{v!r} is not one of"
            raise self.fail(path, f"{head} {', '.join(options)}")
        return v

    def qualified_name(self, v: Any, path: str) -> str:
        """``ValidateLabelName``: an optional DNS-subdomain prefix and ``/``, then a name of up to 63 chars."""
        v = self.string(v, path)
        prefix, _, name = v.rpartition("/")
        if not _NAME.fullmatch(name) or len(name) > 63 or "/" in v and not _SUBDOMAIN.fullmatch(prefix):
            raise self.fail(path, f"{v!r} is not a qualified name (an optional DNS-subdomain prefix and '/', "
                                  "then up to 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)")
        return v

    def duration(self, v: Any, path: str, minimum: float) -> None:
        """A Go ``time.Duration`` string (``metav1.Duration``) of at least ``minimum`` seconds."""
        text = v if isinstance(v, str) else ""
        body = text.lstrip("+-")
        parts = _DURATION.findall(body)
        if body != "0" and (not parts or "".join(a + u for a, u in parts) != body):
            raise self.fail(path, f"{v!r} is not a duration such as '10s' or '1m30s'")
        seconds = sum(float(a) * _UNIT_SECONDS[u] for a, u in parts) * (-1 if text.startswith("-") else 1)
        if seconds < minimum:
            raise self.fail(path, f"{v!r} must be at least {minimum:g}s")


# ------------------------------------------------------------------------ decoding .profiles[*].plugins
def _plugin(r: FieldReader, raw: Any, path: str, enabling: bool) -> tuple[str, int | None]:
    raw = r.obj(raw, path, ("name", "weight"), required=True)
    name = r.string(raw.get("name"), f"{path}.name")
    if enabling and name in REMOVED_PLUGINS:
        raise r.fail(f"{path}.name", f"plugin {name!r} was removed and is invalid in {API_VERSION}")
    weight = raw.get("weight")
    weight = r.integer(weight, f"{path}.weight", 0) if weight is not None else None
    return name, weight or None  # an unset weight and 0 both mean 1 (getScoreWeights)


def _plugin_set(r: FieldReader, raw: Any, path: str, point: str,
                extra: Mapping[str, frozenset[str]] = {}) -> PluginSet:
    raw = r.obj(raw, path, ("enabled", "disabled"))
    enabled: list[tuple[str, int | None]] = []
    for i, entry in enumerate(r.seq(raw.get("enabled"), f"{path}.enabled")):
        p = f"{path}.enabled[{i}]"
        name, weight = _plugin(r, entry, p, True)
        if name in (n for n, _ in enabled):  # updatePluginList / expandMultiPointPlugins
            raise r.fail(f"{p}.name", f"plugin {name!r} is already enabled at {point}")
        if name not in PLUGIN_POINTS and name not in extra:  # NewFramework: `%s %q does not exist`
            raise r.fail(f"{p}.name", f"plugin {name!r} does not exist in kube-scheduler {KUBE_VERSION}, "
                                      "which refuses to start with it")
        if point != MULTI_POINT and not implements(name, point) and point not in extra.get(name, ()):
            raise r.fail(f"{p}.name", f"plugin {name!r} does not extend {point}")
        enabled.append((name, weight))
    disabled = tuple(_plugin(r, e, f"{path}.disabled[{i}]", False)[0]
                     for i, e in enumerate(r.seq(raw.get("disabled"), f"{path}.disabled")))
    return PluginSet(tuple(enabled), disabled)


def decode_plugins(r: FieldReader, raw: Any, path: str, extra: Mapping[str, frozenset[str]] = {}
                   ) -> tuple[dict[str, tuple[str, ...]], dict[str, int], PluginSet]:
    """(plugins per point incl. multiPoint, score weights, the configured queueSort set): ``mergePlugins``,
    then ``NewFramework``'s expansion and its queueSort/bind checks. ``extra``: the out-of-tree plugins
    optisched models (registered like kube's out-of-tree plugins) and the points each extends."""
    raw = r.obj(raw, path, (*EXTENSION_POINTS, MULTI_POINT))
    custom = {p: _plugin_set(r, raw.get(p), f"{path}.{p}", p, extra) for p in (MULTI_POINT, *EXTENSION_POINTS)}
    multipoint = merge_plugin_set(DEFAULT_PLUGINS, custom[MULTI_POINT]).enabled
    lists = {p: expand_point(p, custom[p], multipoint) for p in EXTENSION_POINTS}
    lists[MULTI_POINT] = tuple(n for n, _ in multipoint)
    if len(lists["queueSort"]) != 1:
        raise r.fail(f"{path}.queueSort", f"exactly one queueSort plugin must be enabled, got "
                                          f"{len(lists['queueSort'])}: {', '.join(lists['queueSort']) or 'none'}")
    if not lists["bind"]:
        raise r.fail(f"{path}.bind", "at least one bind plugin must be enabled")
    return lists, score_weights(custom["score"], multipoint, lists["score"]), custom["queueSort"]
