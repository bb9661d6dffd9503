"""Feature gates: kube-scheduler's ``--feature-gates`` flag, each release's defaults, and the value of
every gate a run follows (:class:`FeatureGates`, which :class:`.config.Profile` carries).

Upstream: ``k8s.io/component-base/featuregate/feature_gate.go`` (``Set``: comma-separated
``Name=bool``, ``strconv.ParseBool``'s spellings; ``unsafeSetFromMap``: an unknown name, a locked gate
set away from its default, an enabled gate whose dependencies are off are errors, with its words) and
``pkg/features/kube_features.go`` (:mod:`.gate_table`), of v1.35.4 and v1.36.2.

The gates the scheduler reads (``pkg/scheduler/framework/plugins/feature/feature.go``, and those the
framework and the default plugins read: the conformance traces' ``featureGates``) are
:data:`SCHEDULER_GATES`. Of these, :data:`MODELLED` are the ones optisched's rules follow either way; a
locked one cannot change, as upstream refuses; any other one set away from the release's default is
refused with a line saying so, since the run would not be what kube-scheduler does. A gate the scheduler
does not read is accepted, changes nothing and is named with the others (``inspect --effective-profile``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .gate_table import ALL_STAGE, DEPENDS, OTHER_SPECS, SPECS

__all__ = ["MODELLED", "SCHEDULER_GATES", "FeatureGates", "GateSpec", "gate_enabled", "gate_spec",
           "parse_feature_gates", "resolve_gates"]

_COLUMN = {"1.35": 0, "1.36": 1, "1.37": 1}
# 1.37 from its release notes and KEPs (no kube_features.go at hand): 1.36's gates with these changes
CHANGED_1_37: dict[str, str] = {
    "NodeDeclaredFeatures": "on GA",  # KEP-5328, kubernetes PR 139763
    "StorageCapacityScoring": "on beta",  # KEP-4049 graduates to beta
}
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}

# feature.Features (v1.35.4 and v1.36.2) and the gates the framework, the queue and getDefaultPlugins read
SCHEDULER_GATES: frozenset[str] = frozenset({
    "CSIMigrationPortworx", "DRAAdminAccess", "DRAConsumableCapacity", "DRADeviceBindingConditions",
    "DRADeviceTaintRules", "DRADeviceTaints", "DRAExtendedResource", "DRAListTypeAttributes",
    "DRANodeAllocatableResources", "DRAPartitionableDevices", "DRAPrioritizedList",
    "DRAResourceClaimDeviceStatus", "DRASchedulerFilterTimeout", "DRAWorkloadResourceClaims",
    "DynamicResourceAllocation", "GangScheduling", "GenericWorkload",
    "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScaling", "MatchLabelKeysInPodAffinity",
    "MatchLabelKeysInPodTopologySpread", "NodeDeclaredFeatures", "NodeInclusionPolicyInPodTopologySpread",
    "NominatedNodeNameForExpectation", "OpportunisticBatching", "PodLevelResources",
    "SchedulerAsyncAPICalls", "SchedulerAsyncPreemption", "SchedulerQueueingHints", "SidecarContainers",
    "StorageCapacityScoring", "TaintTolerationComparisonOperators", "TopologyAwareWorkloadScheduling",
    "VolumeAttributesClass", "VolumeLimitScaling", "WorkloadAwarePreemption",
})
# the scheduler's gates whose either value optisched's rules follow
MODELLED: frozenset[str] = frozenset({
    "DRAAdminAccess", "DRAPrioritizedList", "InPlacePodLevelResourcesVerticalScaling",
    "MatchLabelKeysInPodTopologySpread", "NodeDeclaredFeatures", "PodLevelResources", "StorageCapacityScoring",
})


@dataclass(frozen=True)
class GateSpec:
    """One gate as a release's binary sees it."""

    name: str
    default: bool
    stage: str  # alpha, beta, GA, deprecated
    locked: bool


def gate_spec(version: str, name: str) -> GateSpec | None:
    """Gate ``name`` in release ``version`` (``1.35``), None when that release does not know it."""
    specs = SPECS.get(name) or OTHER_SPECS.get(name)
    text = specs[_COLUMN[version]] if specs is not None else None
    if version == "1.37":
        text = CHANGED_1_37.get(name, text)
    if text is None:
        return None
    words = text.split()
    return GateSpec(name, words[0] == "on", words[1], "locked" in words[2:])


def gate_enabled(profile: object, name: str) -> bool:
    """Gate ``name`` as ``profile`` (a :class:`.config.Profile`) has it; a profile-less rule (a test's stub)
    gets the default of the profile's release, else of 1.35."""
    gates = getattr(profile, "feature_gates", None)
    if gates is None:
        gates = FeatureGates(getattr(profile, "kubernetes_version", "1.35"))
    return bool(gates.enabled(name))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``featureGate.Set``'s syntax: ``A=true,B=false`` (empty items skipped); ValueError with its words."""
    out: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise ValueError(f"missing bool value for {key}")
        if value not in _TRUE | _FALSE:
            raise ValueError(f'invalid value of {key}={value}, err: strconv.ParseBool: parsing "{value}": '
                             "invalid syntax")
        out[key] = value in _TRUE
    return out


@dataclass(frozen=True)
class FeatureGates:
    """The gates of one run: the release and the values set (``--feature-gates``); every other gate
    has the release's default."""

    version: str = "1.35"
    set: tuple[tuple[str, bool], ...] = ()  # (name, value), sorted by name

    @property
    def asked(self) -> dict[str, bool]:
        return dict(self.set)

    def enabled(self, name: str) -> bool:
        asked = self.asked
        if name in asked:
            return asked[name]
        spec = gate_spec(self.version, name)
        if spec is None:
            return False
        for special, stage in ALL_STAGE.items():  # setUnsetAlphaGates / setUnsetBetaGates
            if special in asked and spec.stage == stage and name not in ALL_STAGE:
                return asked[special]
        return spec.default

    def scheduler_values(self) -> dict[str, bool]:
        """The value of every gate the release's scheduler reads, by name (a trace's ``featureGates``)."""
        return {n: self.enabled(n) for n in sorted(SCHEDULER_GATES) if gate_spec(self.version, n) is not None}

    def others(self) -> dict[str, bool]:
        """The gates set that the scheduler does not read (accepted; they change nothing)."""
        return {n: v for n, v in sorted(self.asked.items()) if n not in SCHEDULER_GATES}


def resolve_gates(version: str, asked: Mapping[str, bool]) -> FeatureGates:
    """``asked`` checked against release ``version`` as ``unsafeSetFromMap`` checks it (``AllAlpha`` and
    ``AllBeta`` set every other gate of their stage not set explicitly, as ``setUnsetAlphaGates`` does),
    then against what optisched models; ValueError with one line naming the gate."""
    for name, value in asked.items():
        spec = gate_spec(version, name)
        if spec is None:
            raise ValueError(f"unrecognized feature gate: {name}")
        if spec.locked and value != spec.default:
            raise ValueError(f"cannot set feature gate {name} to {_go(value)}, feature is locked to "
                             f"{_go(spec.default)}")
    gates = FeatureGates(version, tuple(sorted(asked.items())))
    by = {name: special for special, stage in ALL_STAGE.items() if special in asked
          for name in set(SPECS) | set(OTHER_SPECS)
          if name not in asked and name not in ALL_STAGE and (spec := gate_spec(version, name)) is not None
          and spec.stage == stage}
    for feature, deps in DEPENDS["1.36" if version == "1.37" else version].items():
        # a dependency outside the gates a release's binary registers is not checked
        off = [d for d in deps.split() if gate_spec(version, d) is not None and not gates.enabled(d)]
        if gates.enabled(feature) and off:
            raise ValueError(f"{feature} is enabled, but depends on features that are disabled: "
                             f"[{' '.join(off)}]")
    for name in sorted(set(asked) | set(by)):
        spec, value = gate_spec(version, name), gates.enabled(name)
        assert spec is not None
        if name in SCHEDULER_GATES and name not in MODELLED and value != spec.default:
            via = f" (set by {by[name]}={_go(asked[by[name]])})" if name in by else ""
            raise ValueError(f"feature gate {name}={_go(value)}{via}: kube-scheduler reads it, and optisched "
                             f"models only its default in {version} ({_go(spec.default)}; docs/fidelity.md)")
    return gates


def _go(value: bool) -> str:
    return "true" if value else "false"
