"""Who may leave their node: one eviction policy for ``--movable``, batch preemption, reschedule and drain.

The rules follow the descheduler's ``DefaultEvictor`` (kubernetes-sigs/descheduler v0.34.0,
``pkg/framework/plugins/defaultevictor/defaultevictor.go`` ``Filter`` with its default protections, and
``pkg/utils/pod.go``):

- never: terminating pods (``deletionTimestamp``), mirror and static pods (annotation
  ``kubernetes.io/config.mirror``, ``kubernetes.io/config.source`` other than ``api``, or an owner of kind
  ``Node``) and DaemonSet pods (an owner of kind ``DaemonSet``). Upstream's ``descheduler.alpha.kubernetes.io/evict``
  annotation lifts even these; here it does not, because none of them can land on another node (kubelet owns
  static pods, the DaemonSet controller re-creates its pod on the same node);
- pods with a PersistentVolumeClaim (or an ephemeral volume's claim) move when the input holds storage
  objects, held to their volume's nodes by the volume rules; never when it holds none (the rules then skip,
  and the volume's node or zone is unknown);
- only when the user allows the kind (each by its own flag): system-critical priority (>= 2,000,000,000,
  ``IsCriticalPriorityPod``), pods annotated ``karpenter.sh/do-not-disrupt: "true"`` or
  ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``, pods with local storage (an ``emptyDir`` or
  ``hostPath`` volume, ``IsPodWithLocalStorage``) and bare pods (no ownerReferences, upstream's
  ``FailedBarePods`` protection for a pod that is not ``Failed``). The ``descheduler.alpha.kubernetes.io/evict``
  annotation (any value) allows these kinds for its pod, as upstream's ``HaveEvictAnnotation`` does.

Narrowing (``--namespaces`` / ``--exclude-namespaces`` / ``--selector``), as the descheduler's plugin
arguments ``namespaces.include`` / ``namespaces.exclude`` (checked by each strategy before it asks the
evictor, so the evict annotation does not lift them) and ``DefaultEvictorArgs.labelSelector`` (one of
``Filter``'s constraints, so the annotation does lift it, as upstream).

PodDisruptionBudgets are not a per-pod verdict: they limit how many pods of a budget may leave together
(:mod:`optisched.optimal.eviction.pdb_model`).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from ..errors import InputError
from ..model.objects import Pod
from ..model.selectors import parse_label_selector
from ..model.state import ClusterState
from ..model.storage import catalog

__all__ = ["CRITICAL_PRIORITY", "EVICT_KINDS", "KINDS", "EvictionPolicy", "Keep", "Verdicts", "kept_notes", "node_bound",
           "pod_kinds"]

CRITICAL_PRIORITY = 2_000_000_000  # scheduling.SystemCriticalPriority
MIRROR = "kubernetes.io/config.mirror"
SOURCE = "kubernetes.io/config.source"
EVICT = "descheduler.alpha.kubernetes.io/evict"


class Keep(StrEnum):
    """Why a pod stays on its node, in the order a pod's first reason is reported."""

    TERMINATING = "terminating"
    STATIC = "mirror or static pod"
    DAEMONSET = "DaemonSet pod"
    PVC = "has a PersistentVolumeClaim and the input holds no storage objects to keep it by its volume"
    CRITICAL = "system-critical priority (--evict system-critical)"
    PROTECTED = "annotated do-not-disrupt or safe-to-evict: false (--evict protected)"
    LOCAL_STORAGE = "has emptyDir or hostPath storage (--evict local-storage)"
    BARE = "has no controller (--evict bare-pods)"
    NAMESPACE = "namespace outside --namespaces / --exclude-namespaces"
    UNSELECTED = "labels outside --selector"
    NODE = "on a node the goal takes no pods from (docs/reschedule.md)"
    STAGED = "its move could not be staged; the plan was solved again with it on its node (docs/reschedule.md)"


KINDS = list(Keep)
EVICT_KINDS = {"protected": "evict_protected", "local-storage": "evict_local_storage", "bare-pods": "evict_bare_pods",
               "system-critical": "evict_system_critical"}
ALWAYS = {Keep.TERMINATING, Keep.STATIC, Keep.DAEMONSET, Keep.PVC, Keep.NAMESPACE, Keep.NODE, Keep.STAGED}
NARROWING = (Keep.NAMESPACE, Keep.UNSELECTED, Keep.NODE, Keep.STAGED)  # computed per policy, not per pod (EvictionPolicy.scope)


def _features(pod: Pod, priority: int, storage: bool) -> list[bool]:
    """One flag per :class:`Keep` kind: whether the pod is of that kind (whatever the flags say). A pod
    with a claim may move when the input holds storage objects (``storage``): VolumeBinding, VolumeZone,
    VolumeRestrictions and NodeVolumeLimits then hold its target to its volume's nodes (docs/volumes.md);
    without them those rules skip, so such a pod stays."""
    meta, spec = pod.metadata, pod.spec
    ann = meta.annotations
    kinds = {o.kind for o in meta.owner_references}
    return [
        meta.deletion_timestamp is not None,
        MIRROR in ann or ann.get(SOURCE, "api") != "api" or "Node" in kinds,
        "DaemonSet" in kinds,
        not storage and any(v.persistent_volume_claim is not None or v.ephemeral is not None for v in spec.volumes),
        priority >= CRITICAL_PRIORITY,
        ann.get("karpenter.sh/do-not-disrupt") == "true" or
        ann.get("cluster-autoscaler.kubernetes.io/safe-to-evict") == "false",
        any(v.empty_dir is not None or v.host_path is not None for v in spec.volumes),
        not meta.owner_references,
        False, False, False, False,  # narrowing: EvictionPolicy.scope
    ]


NODE_BOUND = (Keep.TERMINATING, Keep.STATIC, Keep.DAEMONSET)


def node_bound(pod: Pod) -> Keep | None:
    """The first reason a pod can never be placed anew (terminating, mirror/static, DaemonSet), whatever
    any flag or annotation says; None for any other pod. Replays and the consolidation goal ask this."""
    flags = _features(pod, 0, False)
    return next((k for k in NODE_BOUND if flags[KINDS.index(k)]), None)


def pod_kinds(state: ClusterState) -> np.ndarray:
    """bool [P, len(Keep)]: each pod's kinds, computed once per state."""
    hit = state.memo.get(("eviction-kinds",))
    if hit is None:
        storage = catalog(state.cluster).present
        rows = [_features(p, int(state.pod_priority[i]), storage) for i, p in enumerate(state.pods)]
        hit = np.array(rows, dtype=bool).reshape(len(state.pods), len(KINDS))
        state.memo[("eviction-kinds",)] = hit
    return hit


@dataclass(frozen=True)
class Verdicts:
    """Per pod row: whether it may leave its node, and the first reason it may not (an index into
    :data:`KINDS`, -1 when it may)."""

    state: ClusterState
    may_leave: np.ndarray  # bool [P]
    reason: np.ndarray  # int64 [P]

    def why(self, pod: int) -> Keep | None:
        r = int(self.reason[pod])
        return None if r < 0 else KINDS[r]

    def kept(self, rows: np.ndarray | list[int]) -> dict[str, Keep]:
        """``namespace/name`` -> reason, for the pods of ``rows`` that may not leave."""
        return {self.state.pods[p].key: KINDS[int(self.reason[p])] for p in np.asarray(rows, dtype=np.int64).tolist()
                if self.reason[p] >= 0}


@dataclass(frozen=True)
class EvictionPolicy:
    """Which protected kinds the user allows to leave their node (the flags of the same names)."""

    evict_protected: bool = False
    evict_local_storage: bool = False
    evict_bare_pods: bool = False
    evict_system_critical: bool = False
    namespaces: tuple[str, ...] = ()  # only these namespaces (empty: every one)
    exclude_namespaces: tuple[str, ...] = ()
    selector: str = ""  # kubectl's -l syntax; pods whose labels do not match stay
    only_nodes: frozenset[str] | None = None  # only pods on these nodes leave (LowNodeUtilization's sources)
    stay: frozenset[str] = frozenset()  # these pods (namespace/name) stay: a reschedule re-plan pins them

    def scope(self, state: ClusterState) -> np.ndarray:
        """bool [P, 4]: per pod, outside the namespaces asked for, outside the label selector, on a
        node outside ``only_nodes``, and in ``stay``."""
        sel = parse_label_selector(self.selector)
        inc, exc = set(self.namespaces), set(self.exclude_namespaces)
        names = state.node_names
        rows = []
        for i, p in enumerate(state.pods):
            ns = p.metadata.namespace or "default"
            n = int(state.pod_node[i])
            off = self.only_nodes is not None and (n < 0 or names[n] not in self.only_nodes)
            rows.append([(bool(inc) and ns not in inc) or ns in exc, not sel.matches(p.metadata.labels), off,
                         p.key in self.stay])
        return np.array(rows, dtype=bool).reshape(len(state.pods), 4)

    def allowed(self) -> np.ndarray:
        """bool [len(Keep)]: the kinds this policy lets leave."""
        on: dict[Keep, bool] = {Keep.PROTECTED: self.evict_protected, Keep.LOCAL_STORAGE: self.evict_local_storage,
              Keep.BARE: self.evict_bare_pods, Keep.CRITICAL: self.evict_system_critical}
        return np.array([on.get(k, False) for k in KINDS], dtype=bool)

    def verdicts(self, state: ClusterState) -> Verdicts:
        """The verdict for every pod row (pending pods included: they have nowhere to leave from)."""
        kinds = pod_kinds(state).copy()
        if self.namespaces or self.exclude_namespaces or self.selector or self.only_nodes is not None or self.stay:
            kinds[:, [KINDS.index(k) for k in NARROWING]] = self.scope(state)
        blocking = kinds & ~self.allowed()
        overridden = np.array([EVICT in p.metadata.annotations for p in state.pods], dtype=bool)
        gated = np.array([k not in ALWAYS for k in KINDS], dtype=bool)
        blocking[overridden[:, None] & gated[None, :]] = False
        stays = blocking.any(axis=1)
        reason = np.where(stays, np.argmax(blocking, axis=1), -1).astype(np.int64)
        return Verdicts(state, ~stays, reason)

    @classmethod
    def parse(cls, text: str | None) -> EvictionPolicy:
        """``--evict protected,local-storage,bare-pods,system-critical``: the kinds allowed to leave."""
        names = [x.strip() for x in (text or "").split(",") if x.strip()]
        bad = [x for x in names if x not in EVICT_KINDS]
        if bad:
            raise InputError(f"--evict: {bad[0]!r} is not a kind; kinds: {', '.join(EVICT_KINDS)}")
        return cls(**{EVICT_KINDS[x]: True for x in names})  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, bool]:
        return {"evictProtected": self.evict_protected, "evictLocalStorage": self.evict_local_storage,
                "evictBarePods": self.evict_bare_pods, "evictSystemCritical": self.evict_system_critical}


def kept_notes(state: ClusterState, kept: dict[int, Keep], in_batch: np.ndarray, shown: int = 5) -> list[str]:
    """Lines for a summary. ``kept``: running pods the policy does not let leave, with why; ``in_batch``
    (bool per pod row): those still in the batch as preemption victims, which kube may evict but the
    answer does not re-place. Pods with a claim are named (a warning: they need their volume's node or
    zone); the others are counted per reason."""
    notes = []
    for victims, what in ((False, "stay on their node"), (True, "may be preempted but are not re-placed")):
        rows = [p for p in kept if bool(in_batch[p]) == victims]
        claims = sorted(state.pods[p].key for p in rows if kept[p] == Keep.PVC)
        if claims:
            more = f" and {len(claims) - shown} more" if len(claims) > shown else ""
            notes.append(f"warning: {len(claims)} pod(s) with a PersistentVolumeClaim {what} (the input holds no "
                         f"PersistentVolumes, claims or storage classes): {', '.join(claims[:shown])}{more}")
        counts: dict[Keep, int] = {}
        for p in rows:
            if kept[p] != Keep.PVC:
                counts[kept[p]] = counts.get(kept[p], 0) + 1
        notes += [f"{n} running pod(s) {what}: {why.value}" for why, n in counts.items()]
    return notes
