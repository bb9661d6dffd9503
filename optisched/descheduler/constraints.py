"""DefaultEvictor's constraints beyond the eviction policy's protections: ``priorityThreshold``,
``labelSelector``, ``minReplicas``, ``minPodAge``, ``ignorePodsWithoutPDB`` and ``evictFailedBarePods``.

Follows kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/defaultevictor/defaultevictor.go``
(``addAllConstraints``, ``legacyGetPodProtections`` and ``Filter``) and ``constraints.go``:

- ``priorityThreshold`` (``value``, or ``name`` of a PriorityClass, one of the two): a pod at or above it
  stays; only applied while system-critical pods are protected (``evictSystemCriticalPods: false``);
- ``labelSelector``: a pod whose labels do not match stays;
- ``minReplicas`` (> 1): a pod with exactly one owner stays while fewer than ``minReplicas`` pods (of any
  phase and node, pending included) share that owner's uid; pods with no or several owners pass;
- ``minPodAge`` (a Go duration): a pod without ``status.startTime``, or started less than that long ago,
  stays;
- ``ignorePodsWithoutPDB``: a pod that no PodDisruptionBudget of its namespace selects stays
  (``utils.IsPodCoveredByPDB``: an empty selector selects every pod);
- ``evictFailedBarePods``: a pod without an owner may go only if its phase is ``Failed``.

A pod annotated ``descheduler.alpha.kubernetes.io/evict`` passes every one of these (``Filter`` returns
early), as it passes the policy's protections other than those optisched always keeps.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from ..errors import InputError
from ..model.objects import LabelSelector
from ..model.selectors import label_selector_matches
from ..model.state import ClusterState
from ..policy.eviction import EVICT

__all__ = ["EvictorConstraints", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds in a Go ``time.ParseDuration`` string (``90s``, ``1h30m``, ``0``); None when it is not one."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    parts = _PART.findall(s)
    if not s or "".join(n + u for n, u in parts) != s:
        return None
    return sign * sum(float(n) * _UNITS[u] for n, u in parts)


@dataclass(frozen=True)
class EvictorConstraints:
    """The constraint arguments as read from the policy (``source``/``path`` name them in errors)."""

    priority_value: int | None = None
    priority_name: str | None = None
    label_selector: LabelSelector | None = None
    min_replicas: int = 0
    min_pod_age: float | None = None  # seconds
    ignore_pods_without_pdb: bool = False
    evict_failed_bare_pods: bool = False
    source: str = "<policy>"
    path: str = ""

    def threshold(self, state: ClusterState) -> int | None:
        """``GetPriorityValueFromPriorityThreshold``: the value, or the named PriorityClass's value."""
        if self.priority_name is None:
            return self.priority_value
        for pc in state.cluster.priority_classes:
            if pc.metadata.name == self.priority_name:
                return int(pc.value)
        raise InputError(f"no PriorityClass {self.priority_name!r} in the cluster", source=self.source,
                         obj="DeschedulerPolicy", path=f"{self.path}.priorityThreshold.name")

    def mask(self, state: ClusterState, critical_protected: bool, now: datetime | None = None) -> np.ndarray:
        """bool [P]: the pods these constraints let go (the evict annotation lifts them all)."""
        pods = state.pods
        ok = np.ones(len(pods), dtype=bool)
        value = self.threshold(state) if critical_protected else None
        if value is not None:
            ok &= state.pod_priority < value
        if self.label_selector is not None:
            ok &= np.array([label_selector_matches(self.label_selector, p.metadata.labels) for p in pods], dtype=bool)
        if self.min_replicas > 1:
            ok &= self._replicas(state)
        if self.min_pod_age is not None:
            at = now or datetime.now(UTC)
            ok &= np.array([p.status.start_time is not None and
                            (at - _aware(p.status.start_time)).total_seconds() >= self.min_pod_age for p in pods],
                           dtype=bool)
        if self.ignore_pods_without_pdb:
            ok &= self._covered(state)
        ok |= np.array([EVICT in p.metadata.annotations for p in pods], dtype=bool)
        return ok

    def _replicas(self, state: ClusterState) -> np.ndarray:
        """Per pod: not a single-owner pod whose owner has fewer than ``min_replicas`` pods."""
        def uid(o) -> str:  # type: ignore[no-untyped-def]
            return o.uid or f"{o.kind}/{o.name}"

        count: dict[tuple[str, str], int] = {}
        for p in state.cluster.pods:  # every pod the informer lists, finished ones too
            for o in p.metadata.owner_references:
                key = (p.metadata.namespace or "default", uid(o))
                count[key] = count.get(key, 0) + 1
        out = []
        for p in state.pods:
            refs = p.metadata.owner_references
            out.append(len(refs) != 1 or count.get((p.metadata.namespace or "default", uid(refs[0])), 0)
                       >= self.min_replicas)
        return np.array(out, dtype=bool)

    def _covered(self, state: ClusterState) -> np.ndarray:
        """Per pod: some PodDisruptionBudget of its namespace selects it (``IsPodCoveredByPDB``)."""
        by_ns: dict[str, list[LabelSelector | None]] = {}
        for b in state.cluster.pdbs:
            by_ns.setdefault(b.metadata.namespace or "default", []).append(b.spec.selector)
        return np.array([any(label_selector_matches(sel, p.metadata.labels)
                             for sel in by_ns.get(p.metadata.namespace or "default", []))
                         for p in state.pods], dtype=bool)


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)
