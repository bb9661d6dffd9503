"""The effective configuration of a run, as a ``KubeSchedulerConfiguration`` document of the release it
follows: every default applied, each extension point's plugins as the framework runs them (the
multiPoint expansion done, with their weights), and a ``pluginConfig`` entry for every enabled plugin
that has an args kind, its defaults filled in.

Upstream: ``SetDefaults_KubeSchedulerConfiguration`` and ``setDefaults_KubeSchedulerProfile``
(``pkg/scheduler/apis/config/v1/defaults.go``: the configured args first, in their order, then the
defaults of the other enabled plugins, by name), the ``SetDefaults_*Args`` and the JSON names and
``omitempty`` of ``kube-scheduler/config/v1`` (v1.35.4 and v1.36.2). Durations print as Go's
``time.Duration.String``. Decoding the document again gives the same profiles: every point lists its
plugins with ``disabled: [{name: "*"}]``, so nothing else is merged in.
"""

from __future__ import annotations

from typing import Any

from .config import Profile, SchedulerConfig
from .decode import API_VERSION, KIND
from .defaults import MULTI_POINT
from .plugin_config import ARGS_PLUGINS
from .releases import RELEASES

__all__ = ["effective_document", "go_duration", "profile_document"]


def _all() -> list[dict[str, str]]:
    return [{"name": "*"}]


def go_duration(seconds: float) -> str:
    """``time.Duration.String`` for a non-negative duration: ``10s``, ``10m0s``, ``1h0m0s``, ``1.5s``,
    ``500ms``, ``0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size:
                return f"{_trim(ns / size)}{unit}"
    h, rest = divmod(ns, 3600 * 10**9)
    m, s_ns = divmod(rest, 60 * 10**9)
    secs = f"{_trim(s_ns / 1e9)}s"
    if h:
        return f"{h}h{m}m{secs}"
    return f"{m}m{secs}" if m else secs


def _trim(x: float) -> str:
    return f"{x:.9f}".rstrip("0").rstrip(".")


def _resources(specs: Any) -> list[dict]:
    return [{"name": s.name, "weight": s.weight} for s in specs]


def _args(profile: Profile, name: str, raw: Any) -> dict[str, Any] | Any:
    """The args of plugin ``name`` as v1 serializes them after defaulting (``raw`` for a plugin without
    an args kind: kept as written)."""
    if name not in ARGS_PLUGINS:
        return raw
    out: dict[str, Any] = {"apiVersion": API_VERSION, "kind": f"{name}Args"}
    if name == "DefaultPreemption":
        p = profile.preemption
        out |= {
            "minCandidateNodesPercentage": p.min_candidate_nodes_percentage,
            "minCandidateNodesAbsolute": p.min_candidate_nodes_absolute,
        }
    elif name == "DynamicResources":
        d = profile.dynamic_resources
        out["filterTimeout"] = go_duration(d.filter_timeout)
        if d.binding_timeout is not None:
            out["bindingTimeout"] = go_duration(d.binding_timeout)
    elif name == "InterPodAffinity":
        a = profile.inter_pod_affinity
        out |= {
            "hardPodAffinityWeight": a.hard_pod_affinity_weight,  # a set *int32 0 is kept
            "ignorePreferredTermsOfExistingPods": a.ignore_preferred_terms_of_existing_pods,
        }
    elif name == "NodeAffinity":
        if profile.node_affinity.added_affinity is not None:
            out["addedAffinity"] = profile.node_affinity.added_affinity
    elif name == "NodeResourcesBalancedAllocation":
        out["resources"] = _resources(profile.balanced.resources)
    elif name == "NodeResourcesFit":
        out |= _fit(profile)
    elif name == "PodTopologySpread":
        s = profile.spread
        if s.default_constraints:
            out["defaultConstraints"] = [dict(c) for c in s.default_constraints]
        out["defaultingType"] = s.defaulting_type
    elif name == "VolumeBinding":
        out["bindTimeoutSeconds"] = profile.volume_binding.bind_timeout_seconds
        if profile.volume_binding.shape:
            out["shape"] = [{"utilization": p.utilization, "score": p.score} for p in profile.volume_binding.shape]
    return out


def _fit(profile: Profile) -> dict[str, Any]:
    f = profile.fit
    out: dict[str, Any] = {}
    if f.ignored_resources:
        out["ignoredResources"] = list(f.ignored_resources)
    if f.ignored_resource_groups:
        out["ignoredResourceGroups"] = list(f.ignored_resource_groups)
    strategy: dict[str, Any] = {"type": str(f.strategy), "resources": _resources(f.resources)}
    if f.shape:
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": p.utilization, "score": p.score} for p in f.shape]
        }
    out["scoringStrategy"] = strategy
    return out


def _entries(names: tuple[str, ...], weights: Any) -> list[dict[str, Any]]:
    return [{"name": n, "weight": weights[n]} if n in weights else {"name": n} for n in names]


def profile_document(profile: Profile) -> dict[str, Any]:
    """One ``profiles[]`` entry."""
    points = RELEASES[profile.kubernetes_version].extension_points
    plugins: dict[str, Any] = {
        MULTI_POINT: {
            "enabled": _entries(profile.plugins[MULTI_POINT], profile.multipoint_weights),
            "disabled": _all(),
        }
    }
    weighted = {"score": profile.score_weights, "placementScore": profile.placement_score_weights}
    for point in points:
        plugins[point] = {
            "enabled": _entries(profile.plugins[point], weighted.get(point, {})),
            "disabled": _all(),
        }
    given = dict(profile.plugin_config)
    enabled = {n for names in profile.plugins.values() for n in names}
    names = [*given, *sorted(n for n in enabled if n in ARGS_PLUGINS and n not in given)]
    doc: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        doc["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    doc["plugins"] = plugins
    doc["pluginConfig"] = [{"name": n, "args": _args(profile, n, given.get(n))} for n in names]
    return doc


def effective_document(config: SchedulerConfig) -> dict[str, Any]:
    """The whole configuration after defaulting (the fields optisched reads)."""
    given = config.document if isinstance(config.document, dict) else {}
    initial = given.get("podInitialBackoffSeconds")
    maximum = given.get("podMaxBackoffSeconds")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": config.parallelism,
        "percentageOfNodesToScore": config.percentage_of_nodes_to_score or 0,
        "podInitialBackoffSeconds": 1 if initial is None else initial,
        "podMaxBackoffSeconds": 10 if maximum is None else maximum,
        "profiles": [profile_document(p) for p in config.profiles],
    }
