"""A ``KubeSchedulerConfiguration`` document decoded into a :class:`SchedulerConfig`: its top-level
fields, each profile (a default name when there is one, unique names, one queueSort for all, as
``pkg/scheduler/apis/config/validation/validation.go`` checks them), and the file it is read from."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..registry import REGISTRY, plugin_points
from .config import FrozenMap, Profile, SchedulerConfig
from .defaults import (
    API_VERSION,
    DEFAULT_PARALLELISM,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    Release,
)
from .gates import FeatureGates, resolve_gates
from .plugin_config import decode_plugin_configs
from .plugin_sets import PluginSet, decode_plugins
from .reader import FieldReader
from .releases import DEFAULT_VERSION, RELEASES, default_multipoint

__all__ = ["default_config", "load_config", "parse_config"]

_PROFILE_FIELDS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
_TOP_FIELDS = ("apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "enableProfiling",
               "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds",
               "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive")


@dataclass(frozen=True)
class _Parsed:
    profile: Profile
    queue_sort: PluginSet
    raw_args: dict[str, Any]


def _percentage(r: FieldReader, v: Any, path: str) -> int | None:
    return None if v is None else r.integer(v, path, 0, 100)


def _out_of_tree(release: Release) -> dict[str, frozenset[str]]:
    """Plugins optisched models beyond kube-scheduler's in-tree ones (GPU sharing, the FGD policies, a user's
    package's through the ``optisched.plugins`` entry points) and the extension points each extends."""
    return {name: plugin_points(name) for name in REGISTRY if name not in release.in_tree}


def _profile(r: FieldReader, raw: Any, path: str, only: bool, release: Release,
             gates: FeatureGates) -> _Parsed:
    raw = r.obj(raw, path, _PROFILE_FIELDS, required=True)
    name = raw.get("schedulerName")
    if name is None and only:  # a default name only when there is a single profile
        name = DEFAULT_SCHEDULER_NAME
    elif name is None:
        raise r.fail(f"{path}.schedulerName", "required: when there are several profiles, each needs a name")
    name = r.string(name, f"{path}.schedulerName")
    pct = _percentage(r, raw.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
    plugins, weights, queue_sort = decode_plugins(r, raw.get("plugins"), f"{path}.plugins", release,
                                                  _out_of_tree(release))
    args, raw_args = decode_plugin_configs(r, raw.get("pluginConfig"), f"{path}.pluginConfig", release,
                                           gates)
    enabled = {n for names in plugins.values() for n in names}
    # REGISTRY also holds the out-of-tree rules optisched models (GPU sharing, the FGD policies)
    not_modelled = tuple(sorted(n for n in enabled
                                if n in release.not_modelled or (n not in release.in_tree and n not in REGISTRY)))
    profile = Profile(name, FrozenMap(plugins), FrozenMap(weights["score"]), pct, not_modelled=not_modelled,
                      kubernetes_version=release.minor, feature_gates=gates,
                      placement_score_weights=FrozenMap(weights.get("placementScore", {})),
                      multipoint_weights=FrozenMap(weights["multiPoint"]),
                      plugin_config=tuple(raw_args.items()), **args)
    return _Parsed(profile, queue_sort, raw_args)


def _check_profiles(r: FieldReader, parsed: list[_Parsed]) -> None:
    """Unique scheduler names; one queueSort, configured alike, for all (``validateCommonQueueSort``)."""
    first = parsed[0]
    sort_name = first.profile.plugins["queueSort"][0]
    for i, cur in enumerate(parsed):
        name = cur.profile.scheduler_name
        j = next(k for k, o in enumerate(parsed) if o.profile.scheduler_name == name)
        if j < i:
            raise r.fail(f".profiles[{i}].schedulerName", f"duplicate schedulerName {name!r} "
                                                          f"(.profiles[{j}] has it too)")
        if cur.queue_sort != first.queue_sort or cur.profile.plugins["queueSort"][0] != sort_name:
            raise r.fail(f".profiles[{i}].plugins.queueSort", "queueSort must be the same for all profiles")
        if sort_name in cur.raw_args and cur.raw_args[sort_name] != first.raw_args.get(sort_name):
            raise r.fail(f".profiles[{i}].pluginConfig", f"the args of queueSort plugin {sort_name} "
                                                         "must be the same for all profiles")


def _check_top(r: FieldReader, doc: dict) -> None:
    """apiVersion and kind, the fields optisched does not use (types only), the backoff bounds."""
    if doc.get("apiVersion") != API_VERSION:
        raise r.fail(".apiVersion", f"{doc.get('apiVersion')!r} is not supported; expected apiVersion {API_VERSION}")
    if doc.get("kind") != KIND:
        raise r.fail(".kind", f"{doc.get('kind')!r}; expected kind {KIND}")
    for key in ("leaderElection", "clientConnection"):
        r.obj(doc.get(key), f".{key}", None)
    for key in ("enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"):
        if doc.get(key) is not None:
            r.boolean(doc[key], f".{key}")
    if r.seq(doc.get("extenders"), ".extenders"):
        raise r.fail(".extenders", "scheduler extenders are not supported: optisched cannot call them")
    initial = doc.get("podInitialBackoffSeconds")
    initial = 1 if initial is None else r.integer(initial, ".podInitialBackoffSeconds", 1, 2**63 - 1)
    if doc.get("podMaxBackoffSeconds") is not None:
        r.integer(doc["podMaxBackoffSeconds"], ".podMaxBackoffSeconds", initial, 2**63 - 1)


def _gates(kubernetes_version: str, feature_gates: Mapping[str, bool] | None) -> FeatureGates:
    """``feature_gates`` checked for the release (:func:`.gates.resolve_gates`)."""
    try:
        return resolve_gates(kubernetes_version, feature_gates or {})
    except ValueError as e:
        raise InputError(str(e), source="--feature-gates") from None


def parse_config(doc: Any, source: str = "<config>", kubernetes_version: str = DEFAULT_VERSION,
                 feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """Decode, default and validate one ``KubeSchedulerConfiguration`` mapping (a parsed YAML document)
    as kube-scheduler ``kubernetes_version`` (a minor release of :mod:`.releases`) does with
    ``feature_gates`` (``--feature-gates``: name -> value; the release's defaults for the others)."""
    gates = _gates(kubernetes_version, feature_gates)
    release = RELEASES[kubernetes_version]
    release = replace(release, multipoint=default_multipoint(release, gates))
    original = doc
    r = FieldReader(source)
    doc = r.obj(doc, "", _TOP_FIELDS, required=True)
    _check_top(r, doc)
    pct = _percentage(r, doc.get("percentageOfNodesToScore"), ".percentageOfNodesToScore")
    par = doc.get("parallelism")
    par = DEFAULT_PARALLELISM if par is None else r.integer(par, ".parallelism", 1)
    raw_profiles = r.seq(doc.get("profiles"), ".profiles") or [{}]
    parsed = [_profile(r, p, f".profiles[{i}]", len(raw_profiles) == 1, release, gates)
              for i, p in enumerate(raw_profiles)]
    _check_profiles(r, parsed)
    return SchedulerConfig(pct, par, tuple(p.profile for p in parsed), source, release.minor, original, gates)


def default_config(kubernetes_version: str = DEFAULT_VERSION,
                   feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """What kube-scheduler ``kubernetes_version`` runs with no configuration file: one default profile,
    nothing else set."""
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND}, "<default>", kubernetes_version,
                          feature_gates)
    return replace(config, document=None)


def for_version(config: SchedulerConfig, kubernetes_version: str,
                feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """``config`` as kube-scheduler ``kubernetes_version`` reads it with ``feature_gates`` (None: the ones
    ``config`` was decoded with): its document decoded again with that release's defaults (the defaults
    alone when it has none)."""
    gates = config.feature_gates.asked if feature_gates is None else dict(feature_gates)
    if config.kubernetes_version == kubernetes_version and config.feature_gates.asked == gates:
        return config
    if config.document is None:
        return replace(default_config(kubernetes_version, gates), source=config.source)
    return parse_config(config.document, config.source, kubernetes_version, gates)


def load_config(path: str | Path, kubernetes_version: str = DEFAULT_VERSION,
                feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """Read a YAML (or JSON) file holding one KubeSchedulerConfiguration."""
    from ..model.documents import load_documents, read_source

    if Path(path).is_dir():  # (read_source would call it "not a regular file")
        raise InputError(f"is a directory; give a {KIND} file", source=str(path))
    src, text = read_source(str(path))
    docs = [d for d in load_documents(src, text) if d is not None]
    if len(docs) != 1:
        docs = [d for d in docs if isinstance(d, dict) and d.get("kind") == KIND]
    if len(docs) != 1:
        raise InputError(f"expected exactly one {KIND} document, found {len(docs)}", source=src)
    return parse_config(docs[0], src, kubernetes_version, feature_gates)
