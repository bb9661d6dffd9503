"""The resolved scheduler configuration the engines read: frozen, with every default applied."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .args import (
    BalancedAllocationArgs,
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    VolumeBindingArgs,
)
from .gates import FeatureGates

__all__ = ["FrozenMap", "Profile", "SchedulerConfig"]


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


@dataclass(frozen=True)
class Profile:
    """One resolved scheduling profile: plugins per extension point in execution order, and their args.

    ``plugins`` has every extension point (empty tuples included) and ``multiPoint``: the merged multiPoint
    list the points were expanded from. ``score_weights`` has exactly the plugins of ``plugins["score"]``.
    """

    scheduler_name: str
    plugins: Mapping[str, tuple[str, ...]]
    score_weights: Mapping[str, int]
    percentage_of_nodes_to_score: int | None = None
    fit: NodeResourcesFitArgs = field(default_factory=NodeResourcesFitArgs)
    balanced: BalancedAllocationArgs = field(default_factory=BalancedAllocationArgs)
    spread: PodTopologySpreadArgs = field(default_factory=PodTopologySpreadArgs)
    inter_pod_affinity: InterPodAffinityArgs = field(default_factory=InterPodAffinityArgs)
    node_affinity: NodeAffinityArgs = field(default_factory=NodeAffinityArgs)
    preemption: DefaultPreemptionArgs = field(default_factory=DefaultPreemptionArgs)
    volume_binding: VolumeBindingArgs = field(default_factory=VolumeBindingArgs)
    dynamic_resources: DynamicResourcesArgs = field(default_factory=DynamicResourcesArgs)
    not_modelled: tuple[str, ...] = ()
    kubernetes_version: str = "1.35"  # the minor release whose rules the plugins follow (.releases)
    # the run's feature gates (--feature-gates over the release's defaults, .gates)
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    # placementScore's weights (v1.36; empty before), as score_weights is score's
    placement_score_weights: Mapping[str, int] = field(default_factory=lambda: FrozenMap({}))
    # the weights the merged multiPoint entries give (those that set one)
    multipoint_weights: Mapping[str, int] = field(default_factory=lambda: FrozenMap({}))
    # the pluginConfig entries as written, in order: (plugin name, raw args)
    plugin_config: tuple[tuple[str, Any], ...] = field(default=(), compare=False, hash=False)

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
    kubernetes_version: str = "1.35"
    # the KubeSchedulerConfiguration it was decoded from (None: the defaults), to decode it for another release
    document: Any = field(default=None, compare=False, hash=False, repr=False)
    feature_gates: FeatureGates = field(default_factory=FeatureGates)

    @property
    def requests_key(self) -> str:
        """The requests the run's pods hold: the release's under its gates
        (:func:`optisched.model.requests.requests_key`; what ``compile_cluster`` and ``for_release`` take)."""
        from ..model.requests import requests_key

        return requests_key(self.kubernetes_version, self.feature_gates)

    def profile_for(self, scheduler_name: str) -> Profile | None:
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)
