"""NodeDeclaredFeatures: a pod that needs a node feature (a restart rule restarting all containers, a host
network pod in its own user namespace) only fits a node whose kubelet declares it in
``status.declaredFeatures``.

Upstream (kubernetes v1.36.2): the plugin, ``pkg/scheduler/framework/plugins/nodedeclaredfeatures/
nodedeclaredfeatures.go`` (PreFilter infers the pod's requirements and skips the pod that has none;
Filter rejects a node lacking one, ``UnschedulableAndUnresolvable``); what a pod requires, the registry
of ``k8s.io/component-helpers/nodedeclaredfeatures`` (``features/registry.go``, ``framework.go``). A
node's list is matched as ``NodeInfo.SetNode`` maps it (``TryMap``): names the registry does not know
are ignored.

Its gate, ``NodeDeclaredFeatures``, is on by default from 1.36, whose default profile runs it. v1.35.4
registers the plugin too, but with the gate off by default (alpha) ``New`` builds it disabled: a 1.35
profile may name it, and its PreFilter then skips every pod. With the gate on (``--feature-gates``,
:mod:`optisched.profile.gates`) 1.35 runs its own variant (v1.35.4's ``nodedeclaredfeatures.go`` and
``component-helpers/nodedeclaredfeatures``): the registry :data:`FEATURES_1_35`, the node's declared
names taken as they are, and the reason ``node declared features check failed - unsatisfied
requirements: <names>`` (:data:`REASON_1_35`); 1.36 with the gate off skips every pod too.

The plugin's ``EventsToRegister`` are a node added or its declared features updated, and an update of
the pod itself; a greedy run generates neither, so ``events`` is empty.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ..model.objects import PodSpec
from ..model.snapshot import Snapshot
from ..profile.releases import DEFAULT_VERSION, at_least, release
from . import names

if TYPE_CHECKING:
    from ..model.state import ClusterState
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel

__all__ = ["FEATURES", "FEATURES_1_35", "REASON", "REASON_1_35", "DeclaredFeature", "NodeDeclaredFeatures",
           "required_features",
           "scheduling_key", "semver_after"]

REASON = "node(s) didn't match Pod's required features"  # errReasonUnsatisfiedRequirements
# v1.35.4's Filter: the unsatisfied requirements joined by ", " (a Go set's order; its registry infers
# one feature at most, so the list is that one)
REASON_1_35 = "node declared features check failed - unsatisfied requirements: "


def restarts_all_containers(spec: PodSpec) -> bool:
    """``restartallcontainers``: a container or init container has a restart rule whose action is
    ``RestartAllContainers``."""
    return any(rule.action == "RestartAllContainers"
               for c in (*spec.containers, *spec.init_containers) for rule in c.restart_policy_rules)


def host_network_in_user_namespace(spec: PodSpec) -> bool:
    """``usernamespaceshostnetwork``: ``hostNetwork`` with ``hostUsers: false``."""
    return spec.host_network and spec.host_users is False


def only_on_update(spec: PodSpec) -> bool:
    """A feature a pod never requires to be scheduled (only a later update of it may)."""
    return False


@dataclass(frozen=True)
class DeclaredFeature:
    """One feature of the registry (``types.Feature``): its name, whether scheduling ``spec`` requires it
    (``InferForScheduling``), and the last release in which it is still asked for (``MaxVersion``, None:
    always)."""

    name: str
    infer_for_scheduling: Callable[[PodSpec], bool]
    max_version: str | None = None


# features.AllFeatures, sorted by name as ndf.New sorts it; the gate of each is named after it.
FEATURES: tuple[DeclaredFeature, ...] = (
    DeclaredFeature("ExtendWebSocketsToKubelet", only_on_update),  # gate beta, on in 1.36
    DeclaredFeature("InPlacePodLevelResourcesVerticalScaling", only_on_update),  # gate beta, on in 1.36
    DeclaredFeature("InPlacePodVerticalScalingInitContainers", only_on_update),  # gate beta, on in 1.36
    # gate RestartAllContainersOnContainerExits: beta, on by default in 1.36
    DeclaredFeature("RestartAllContainersOnContainerExits", restarts_all_containers),
    # gate UserNamespacesHostNetworkSupport: alpha, off by default in 1.36; the API server then refuses a
    # pod with hostNetwork and hostUsers false, but the scheduler infers the requirement all the same
    DeclaredFeature("UserNamespacesHostNetworkSupport", host_network_in_user_namespace),
)

# v1.35.4's features.AllFeatures, in its order (GuaranteedQoSPodCPUResize and the pod-level resize are
# only inferred for an update)
FEATURES_1_35: tuple[DeclaredFeature, ...] = (
    DeclaredFeature("RestartAllContainersOnContainerExits", restarts_all_containers),
    DeclaredFeature("GuaranteedQoSPodCPUResize", only_on_update),
    DeclaredFeature("InPlacePodLevelResourcesVerticalScaling", only_on_update),
)

_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")


def _semver_key(text: str) -> tuple:
    """A sort key with semantic versioning's precedence (a pre-release before its release)."""
    m = _SEMVER.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a semantic version")
    pre = m.group(4)
    ids = () if pre is None else tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre is None, ids


def semver_after(a: str, b: str) -> bool:
    """``version.GreaterThan``: ``a`` comes after ``b``."""
    return _semver_key(a) > _semver_key(b)


def required_features(spec: PodSpec, version: str, registry: tuple[DeclaredFeature, ...] = FEATURES
                      ) -> tuple[str, ...]:
    """``Framework.InferForPodScheduling``: the features of ``registry`` scheduling the pod requires when
    the scheduler is release ``version`` (e.g. ``v1.36.2``), sorted."""
    return tuple(f.name for f in registry
                 if not (f.max_version is not None and semver_after(version, f.max_version))
                 and f.infer_for_scheduling(spec))


def scheduling_key(spec: PodSpec) -> tuple[bool, ...]:
    """What the inference reads of a pod, for caches keyed by pod shape."""
    return tuple(f.infer_for_scheduling(spec) for f in FEATURES)


def declared_matrix(state: ClusterState, registry: tuple[DeclaredFeature, ...]) -> np.ndarray:
    """Bool [N, F]: the node declares the registry's feature (names it does not know are dropped)."""
    key = ("declared_features", tuple(f.name for f in registry))
    hit = state.memo.get(key)
    if hit is None:
        column = {f.name: j for j, f in enumerate(registry)}
        hit = np.zeros((state.num_nodes, len(registry)), dtype=bool)
        for i, node in enumerate(state.nodes):
            for name in node.status.declared_features:
                if name in column:
                    hit[i, column[name]] = True
        state.memo[key] = hit
    return hit


class NodeDeclaredFeatures(Plugin):
    name = names.NODE_DECLARED_FEATURES
    points = frozenset({"preFilter", "filter"})
    static = True
    placement_free = True

    def __init__(self, snapshot: Snapshot, profile: object,
                 registry: tuple[DeclaredFeature, ...] | None = None) -> None:
        minor = getattr(profile, "kubernetes_version", DEFAULT_VERSION)
        gates = getattr(profile, "feature_gates", None)
        self.enabled = (gates.enabled(names.NODE_DECLARED_FEATURES) if gates is not None
                        else at_least(minor, "1.36"))
        self.newer = at_least(minor, "1.36")  # 1.36's registry and reason; before, 1.35.4's
        if registry is None:
            registry = FEATURES if self.newer else FEATURES_1_35
        self.registry = registry
        self.version = release(minor).patch
        self.declared = (declared_matrix(snapshot.state, registry) if self.enabled
                         else np.zeros((snapshot.state.num_nodes, len(registry)), dtype=bool))

    def pre_filter(self, cycle: CycleState) -> Status:
        """Skip a pod that requires no feature (every pod, disabled); otherwise keep which it requires."""
        if not self.enabled:
            return Status.skip()
        required = required_features(cycle.pod_obj.spec, self.version, self.registry)
        wanted = np.array([f.name in required for f in self.registry], dtype=bool)
        if not wanted.any():
            return Status.skip()
        cycle.data[self.name] = wanted
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        wanted = cycle.data[self.name]
        fails = ~self.declared[nodes][:, wanted].all(axis=1)
        reason = REASON if self.newer else REASON_1_35 + ", ".join(
            f.name for f, w in zip(self.registry, wanted, strict=True) if w)
        return FilterResult.from_mask(fails, reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """The pod's spec and the node's declared features decide: the greedy verdict is the domain."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Nothing here depends on where other pods go."""
