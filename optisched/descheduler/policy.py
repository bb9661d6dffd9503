"""Reading a ``DeschedulerPolicy`` (``descheduler/v1alpha2``, kubernetes-sigs/descheduler v0.34.0
``pkg/api/v1alpha2/types.go``): profiles with ``pluginConfig`` and ``plugins`` at the deschedule, balance,
filter and preEvictionFilter points, and the policy-wide eviction limits."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .args import Args, label_selector
from .constraints import EvictorConstraints, parse_duration
from .evictor import EvictorArgs, Limits
from .registry import EVICTOR_PLUGINS, STRATEGIES

__all__ = ["DeschedulerPolicy", "DeschedulerProfile", "load_policy", "parse_policy"]

POINTS = ("deschedule", "balance", "filter", "preEvictionFilter", "preSort", "sort", "evict")
TOP = ("apiVersion", "kind", "profiles", "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace",
       "maxNoOfPodsToEvictTotal", "nodeSelector", "evictionFailureEventNotification", "metricsCollector",
       "metricsProviders", "gracePeriodSeconds", "prometheus")


@dataclass(frozen=True)
class DeschedulerProfile:
    name: str
    strategies: tuple[Any, ...]  # configured strategy objects, deschedule ones first
    evictor: EvictorArgs


@dataclass(frozen=True)
class DeschedulerPolicy:
    profiles: tuple[DeschedulerProfile, ...]
    limits: Limits
    source: str


def _err(source: str, path: str, message: str) -> InputError:
    return InputError(message, source=source, obj="DeschedulerPolicy", path=path)


def _evictor(a: Args) -> EvictorArgs:
    a.only("nodeSelector", "evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "ignorePvcPods",
           "evictFailedBarePods", "labelSelector", "priorityThreshold", "nodeFit", "minReplicas", "minPodAge",
           "ignorePodsWithoutPDB", "podProtections", "noEvictionPolicy")
    value, name = None, None
    prio = a.get("priorityThreshold", dict, None)
    if prio is not None:
        pa = Args(prio, a.source, f"{a.path}.priorityThreshold").only("value", "name")
        value, name = pa.get("value", int, None), pa.get("name", str, None) or None
        if value is not None and name is not None:
            raise pa.error("name", "only one of priorityThreshold value and name can be set")
    age = a.get("minPodAge", str, None)
    seconds = parse_duration(age) if age is not None else None
    if age is not None and seconds is None:
        raise a.error("minPodAge", f"{age!r} is not a duration (e.g. 5m, 1h30m)")
    constraints = EvictorConstraints(value, name, label_selector(a, "labelSelector"), a.count("minReplicas") or 0,
                                     seconds, bool(a.get("ignorePodsWithoutPDB", bool, False)),
                                     bool(a.get("evictFailedBarePods", bool, False)), a.source, a.path)
    return EvictorArgs(node_fit=a.get("nodeFit", bool, False),
                       evict_local_storage_pods=a.get("evictLocalStoragePods", bool, False),
                       evict_system_critical_pods=a.get("evictSystemCriticalPods", bool, False),
                       constraints=constraints)


def _profile(raw: Any, i: int, source: str) -> DeschedulerProfile:
    path = f".profiles[{i}]"
    if not isinstance(raw, dict) or not raw.get("name"):
        raise _err(source, f"{path}.name", "each profile needs a name")
    configs: dict[str, tuple[dict, str]] = {}
    for j, pc in enumerate(raw.get("pluginConfig") or []):
        name = pc.get("name") if isinstance(pc, dict) else None
        if name not in STRATEGIES and name not in EVICTOR_PLUGINS:
            raise _err(source, f"{path}.pluginConfig[{j}].name", f"unknown plugin {name!r}; known: "
                       f"{', '.join([*STRATEGIES, *EVICTOR_PLUGINS])}")
        configs[name] = (pc.get("args") or {}, f"{path}.pluginConfig[{j}].args")
    plugins = raw.get("plugins") or {}
    strategies = []
    for point in plugins:
        if point not in POINTS:
            raise _err(source, f"{path}.plugins.{point}", f"unknown extension point; points: {', '.join(POINTS)}")
    for point in ("deschedule", "balance"):
        for k, name in enumerate((plugins.get(point) or {}).get("enabled") or []):
            cls = STRATEGIES.get(name)
            where = f"{path}.plugins.{point}.enabled[{k}]"
            if cls is None:
                raise _err(source, where, f"unknown strategy {name!r}; strategies: {', '.join(STRATEGIES)}")
            if cls.point != point:
                raise _err(source, where, f"{name} is a {cls.point} plugin, not a {point} one")
            args, at = configs.get(name, ({}, f"{path}.pluginConfig[{name}].args"))
            strategies.append(cls(Args(args, source, at)))
    ev_args, ev_at = configs.get("DefaultEvictor", ({}, f"{path}.pluginConfig[DefaultEvictor].args"))
    return DeschedulerProfile(str(raw["name"]), tuple(strategies), _evictor(Args(ev_args, source, ev_at)))


def parse_policy(doc: Any, source: str = "<policy>") -> DeschedulerPolicy:
    """Validate a DeschedulerPolicy document; every error names the file and the field."""
    if not isinstance(doc, dict) or doc.get("kind") != "DeschedulerPolicy":
        raise _err(source, ".kind", "expected kind: DeschedulerPolicy")
    if doc.get("apiVersion") != "descheduler/v1alpha2":
        raise _err(source, ".apiVersion", f"{doc.get('apiVersion')!r} is not descheduler/v1alpha2")
    for k in doc:
        if k not in TOP:
            raise _err(source, f".{k}", f"unknown field; fields: {', '.join(TOP)}")
    top = Args(doc, source, "")
    limits = Limits(top.count("maxNoOfPodsToEvictPerNode"), top.count("maxNoOfPodsToEvictPerNamespace"),
                    top.count("maxNoOfPodsToEvictTotal"))
    profiles = doc.get("profiles") or []
    if not isinstance(profiles, list) or not profiles:
        raise _err(source, ".profiles", "give at least one profile")
    return DeschedulerPolicy(tuple(_profile(p, i, source) for i, p in enumerate(profiles)), limits, source)


def load_policy(path: str | Path) -> DeschedulerPolicy:
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text())
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(p)) from None
    except yaml.YAMLError as e:
        raise InputError(f"not YAML: {str(e).splitlines()[0]}", source=str(p)) from None
    return parse_policy(doc, str(p))
