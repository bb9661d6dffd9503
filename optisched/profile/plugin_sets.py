"""Plugin sets per extension point: ``mergePluginSet`` over the defaults, the framework's multiPoint
expansion and score weights, and the decoding of ``.profiles[*].plugins`` with its checks.

Sources (kubernetes v1.35.4):

* ``pkg/scheduler/apis/config/v1/default_plugins.go``: ``mergePluginSet``;
* ``pkg/scheduler/framework/runtime/framework.go``: ``updatePluginList``, ``expandMultiPointPlugins``,
  ``getScoreWeights`` and ``NewFramework``'s queueSort and bind checks.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..registry import REGISTRY, plugin_points
from .defaults import (
    API_VERSION,
    MULTI_POINT,
    PLACEMENT_POINTS,
    REMOVED_PLUGINS,
    Release,
)
from .reader import FieldReader

__all__ = ["Entry", "PluginSet", "decode_plugins", "expand_point", "implements",
           "merge_plugin_set", "score_weights"]

Entry = tuple[str, int | None]


@dataclass(frozen=True)
class PluginSet:
    """v1.PluginSet: enabled (name, weight) entries in order, and the disabled names ("*" = all defaults)."""

    enabled: tuple[Entry, ...] = ()
    disabled: tuple[str, ...] = ()




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


def implements(plugin: str, point: str, release: Release) -> bool:
    """Whether a registered plugin implements ``point``: its class's ``points`` (a plugin of ``release``
    optisched does not model: the release's table). ``expandMultiPointPlugins`` expands every plugin of
    the registry it is given, out-of-tree ones too; unknown plugins: unknown, so never expanded."""
    if plugin not in release.in_tree and plugin not in REGISTRY:
        return False
    return point in (release.unmodelled_points.get(plugin) or plugin_points(plugin))


def expand_point(point: str, explicit: PluginSet, multipoint: tuple[Entry, ...], release: Release) -> tuple[str, ...]:
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
        if not implements(name, point, release) or name in explicit.disabled:
            continue
        if name in names:
            overrides.add(name)
        elif name not in expanded:
            expanded.append(name)
    first = [n for n in names if n in overrides]
    return tuple(first + expanded + [n for n in names if n not in overrides])


def score_weights(score: PluginSet, multipoint: tuple[Entry, ...], enabled: tuple[str, ...]) -> dict[str, int]:
    """``getScoreWeights``: the first weight given in score.enabled (or placementScore.enabled) then
    multiPoint.enabled; 0/unset is 1."""
    weights: dict[str, int] = {}
    for name, weight in score.enabled + multipoint:
        if name in enabled and name not in weights:
            weights[name] = weight or 1
    return {name: weights.get(name, 1) for name in enabled}



# ------------------------------------------------------------------------ decoding .profiles[*].plugins
def _plugin(r: FieldReader, raw: Any, path: str, enabling: bool) -> tuple[str, int | None]:
    raw = r.obj(raw, path, ("name", "weight"), required=True)
    name = r.string(raw.get("name"), f"{path}.name")
    if enabling and name in REMOVED_PLUGINS:
        raise r.fail(f"{path}.name", f"plugin {name!r} was removed and is invalid in {API_VERSION}")
    weight = raw.get("weight")
    weight = r.integer(weight, f"{path}.weight", 0) if weight is not None else None
    return name, weight or None  # an unset weight and 0 both mean 1 (getScoreWeights)


def _plugin_set(r: FieldReader, raw: Any, path: str, point: str, release: Release,
                extra: Mapping[str, frozenset[str]] = {}) -> PluginSet:
    raw = r.obj(raw, path, ("enabled", "disabled"))
    enabled: list[tuple[str, int | None]] = []
    for i, entry in enumerate(r.seq(raw.get("enabled"), f"{path}.enabled")):
        p = f"{path}.enabled[{i}]"
        name, weight = _plugin(r, entry, p, True)
        if name in (n for n, _ in enabled):  # updatePluginList / expandMultiPointPlugins
            raise r.fail(f"{p}.name", f"plugin {name!r} is already enabled at {point}")
        if name not in release.in_tree and name not in extra:  # NewFramework: `%s %q does not exist`
            raise r.fail(f"{p}.name", f"plugin {name!r} does not exist in kube-scheduler {release.patch}, "
                                      "which refuses to start with it")
        if point != MULTI_POINT and not implements(name, point, release) and point not in extra.get(name, ()):
            raise r.fail(f"{p}.name", f"plugin {name!r} does not extend {point}")
        enabled.append((name, weight))
    disabled = tuple(_plugin(r, e, f"{path}.disabled[{i}]", False)[0]
                     for i, e in enumerate(r.seq(raw.get("disabled"), f"{path}.disabled")))
    return PluginSet(tuple(enabled), disabled)


def decode_plugins(r: FieldReader, raw: Any, path: str, release: Release, extra: Mapping[str, frozenset[str]] = {}
                   ) -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, int]], PluginSet]:
    """(plugins per point incl. multiPoint, weights per weighted point (score, and placementScore where
    the release has it; for multiPoint, the weights its merged entries give), the configured queueSort
    set): ``mergePlugins``, then ``NewFramework``'s expansion and its queueSort/bind checks. ``extra``: the
    out-of-tree plugins optisched models (registered like kube's out-of-tree plugins) and the points each
    extends."""
    points = release.extension_points
    for key in raw if isinstance(raw, dict) else ():
        if key in PLACEMENT_POINTS and key not in points:  # strict decoding: not a field of this v1.Plugins
            raise r.fail(f"{path}.{key}", f"unknown field: kube-scheduler {release.patch} decodes its "
                                          f"configuration strictly and has no {key} (added in v1.36)")
    raw = r.obj(raw, path, (*points, MULTI_POINT))
    custom = {p: _plugin_set(r, raw.get(p), f"{path}.{p}", p, release, extra) for p in (MULTI_POINT, *points)}
    multipoint = merge_plugin_set(PluginSet(release.multipoint), custom[MULTI_POINT]).enabled
    lists = {p: expand_point(p, custom[p], multipoint, release) for p in points}
    lists[MULTI_POINT] = tuple(n for n, _ in multipoint)
    if len(lists["queueSort"]) != 1:
        raise r.fail(f"{path}.queueSort", f"exactly one queueSort plugin must be enabled, got "
                                          f"{len(lists['queueSort'])}: {', '.join(lists['queueSort']) or 'none'}")
    if not lists["bind"]:
        raise r.fail(f"{path}.bind", "at least one bind plugin must be enabled")
    weights: dict[str, dict[str, int]] = {p: score_weights(custom[p], multipoint, lists[p])
                                          for p in ("score", "placementScore") if p in points}
    weights[MULTI_POINT] = {name: w for name, w in multipoint if w is not None}
    return lists, weights, custom["queueSort"]
