"""Effective pod requests, as kube-scheduler computes them in each release it is reproduced for.

Follows ``k8s.io/component-helpers/resource.PodRequests`` (v1.35.4 and v1.36.2,
``component-helpers/resource/helpers.go``: sum of containers; restartable init containers added and
carried into later init containers; max with each init container; pod-level cpu/memory/hugepages
requests replace the aggregate when set; overhead added), the API server's defaulting of requests from
limits (``SetDefaults_Pod``), and the scheduler's non-zero requests used for scoring
(``PodInfo.CalculateResource`` in ``pkg/scheduler/framework/types.go``: 100m CPU / 200 MiB memory for
containers that do not set them).

In-place resize (``UseStatusResources``, on in both releases: the InPlacePodVerticalScaling gate is GA
and locked on since 1.35): a regular or restartable init container with a status that reports
``resources`` requests the per-resource maximum of its spec, its actuated ``status.containerStatuses[]
.resources.requests`` and its ``allocatedResources`` (``determineEffectiveRequests``); while the pod's
``PodResizePending`` condition says ``Infeasible``, the spec is left out of that maximum. The releases
differ in the pod-level requests (:data:`RELEASE_REQUESTS`): 1.36 turns
InPlacePodLevelResourcesVerticalScaling on by default (beta), so pod-level requests take the same maximum
with ``status.resources.requests`` and ``status.allocatedResources``; under 1.35 (alpha, off) the
pod-level spec counts alone. 1.36's DRANodeAllocatableResources (alpha, off) adds nothing.

Both follow their gates when a run sets them (``--feature-gates``): PodLevelResources off skips the
pod-level requests (``SkipPodLevelResources``, and the non-missing defaults apply as without them), and
InPlacePodLevelResourcesVerticalScaling chooses whether pod-level requests are resized. A state's
requests are then named by :func:`requests_key` (the release, and the gates that differ from its
defaults) and computed by :func:`requests_of`.

1.37, from kubernetes PR 140047's text (not verified against the release's code): a resize's requests are
the greatest of the desired, allocated and actual requests each summed over the containers, not the sum
of each container's greatest (:meth:`PodRequests._views`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from .objects import Container, ContainerStatus, Pod
from .quantity import NANO, to_scheduler_units

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "RELEASE_REQUESTS",
    "PodRequests",
    "container_requests",
    "non_zero_requests",
    "pod_requests",
    "requests_key",
    "requests_of",
]

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING = {"cpu": DEFAULT_MILLI_CPU_REQUEST * 10**6, "memory": DEFAULT_MEMORY_REQUEST * NANO}


def container_requests(c: Container) -> dict[str, int]:
    """A container's requests after API defaulting: a limit without a request becomes the request."""
    reqs = dict(c.resources.requests)
    for name, q in c.resources.limits.items():
        reqs.setdefault(name, q)
    return reqs


def _add(into: dict[str, int], other: dict[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], other: dict[str, int]) -> None:
    """``maxResourceList``: the greater of both for every resource of ``other``."""
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def resize_infeasible(pod: Pod) -> bool:
    """``IsPodResizeInfeasible``: the first ``PodResizePending`` condition has reason ``Infeasible``."""
    for cond in pod.status.conditions:
        if cond.type == "PodResizePending":
            return cond.reason == "Infeasible"
    return False


def _effective(pod: Pod, spec: dict[str, int], actuated: dict[str, int],
               allocated: dict[str, int]) -> dict[str, int]:
    """``determineEffectiveRequests``: max(spec, actuated, allocated), without spec when infeasible."""
    out = {} if resize_infeasible(pod) else dict(spec)
    _max(out, actuated)
    _max(out, allocated)
    return out


@dataclass(frozen=True)
class PodRequests:
    """``resource.PodRequests`` with the options one release's scheduler passes it
    (``PodInfo.CalculateResource``): ``pod_level_resize`` is
    ``InPlacePodLevelResourcesVerticalScalingEnabled`` (the gate's default in that release); status
    resources are always used (their gate is locked on)."""

    release: str
    pod_level_resize: bool
    pod_level: bool = True  # the PodLevelResources gate (beta, on in both releases)
    # 1.37: a resize's requests are the greatest of the views' sums, not the sum of each container's greatest
    max_of_aggregates: bool = False

    def _container(self, pod: Pod, c: Container, statuses: dict[str, ContainerStatus]) -> dict[str, int]:
        reqs = container_requests(c)
        cs = statuses.get(c.name)
        if cs is not None and cs.resources is not None:
            return _effective(pod, reqs, cs.resources.requests, cs.allocated_resources)
        return reqs

    def _aggregate(self, pod: Pod, non_missing: dict[str, int] | None) -> dict[str, int]:
        """``AggregateContainerRequests``: each container's effective requests summed; with
        ``max_of_aggregates``, the greatest of the three views' sums instead (:meth:`_views`)."""
        statuses = {s.name: s for s in pod.status.container_statuses}
        statuses.update({s.name: s for s in pod.status.init_container_statuses})
        if self.max_of_aggregates:
            return self._views(pod, statuses, non_missing)

        def reqs_of(c: Container, status: bool) -> dict[str, int]:
            r = self._container(pod, c, statuses) if status else container_requests(c)
            return _with_defaults(r, non_missing)

        return _sum(pod, reqs_of)

    def _views(self, pod: Pod, statuses: dict[str, ContainerStatus],
               non_missing: dict[str, int] | None) -> dict[str, int]:
        """1.37 (kubernetes PR 140047, from its text): the desired (spec), allocated and actual requests
        each summed over the containers, then the maximum of the sums, the desired left out while the
        resize is ``Infeasible``. Per container, allocated falls back to desired and actual to allocated;
        only the containers 1.36 reads the status of (regular and restartable init ones) have views of
        their own."""
        def view(c: Container, status: bool, which: int) -> dict[str, int]:
            desired = container_requests(c)
            cs = statuses.get(c.name) if status else None
            allocated = dict(cs.allocated_resources) if cs is not None and cs.allocated_resources else desired
            actual = (dict(cs.resources.requests) if cs is not None and cs.resources is not None
                      else allocated)
            return _with_defaults(dict((desired, allocated, actual)[which]), non_missing)

        out: dict[str, int] = {}
        for which in range(1 if resize_infeasible(pod) else 0, 3):
            _max(out, _sum(pod, partial(view, which=which)))
        return out


    def _pod_level(self, pod: Pod) -> dict[str, int]:
        """The pod-level requests that replace the aggregate (``IsPodLevelRequestsSet``), resized as the
        release does."""
        spec = _pod_level_requests(pod) if self.pod_level else {}
        if not spec or not self.pod_level_resize or pod.status.resources is None:
            return spec
        eff = _effective(pod, spec, pod.status.resources.requests, pod.status.allocated_resources)
        return {k: eff.get(k, 0) for k in spec}

    def nanos(self, pod: Pod, non_missing: dict[str, int] | None = None) -> dict[str, int]:
        reqs = self._aggregate(pod, non_missing)
        reqs.update(self._pod_level(pod))
        _add(reqs, pod.spec.overhead)
        return reqs

    def requests(self, pod: Pod) -> dict[str, int]:
        """Effective requests in scheduler units (millicores for cpu, ``Value()`` for the rest)."""
        return {k: to_scheduler_units(k, v) for k, v in self.nanos(pod).items()}

    def non_zero(self, pod: Pod) -> tuple[int, int]:
        """(milli-CPU, memory bytes) with the scoring defaults for containers that request neither.

        As ``CalculateResource``/``getNonMissingContainerRequests``: with pod-level requests set, the
        default applies only to a resource that neither level sets.
        """
        plain = self.nanos(pod)
        if self.pod_level and _pod_level_requests(pod):
            non_missing = {k: v for k, v in _NON_MISSING.items() if k not in plain}
        else:
            non_missing = _NON_MISSING
        reqs = self.nanos(pod, non_missing) if non_missing else plain
        return (to_scheduler_units("cpu", reqs.get("cpu", 0)),
                to_scheduler_units("memory", reqs.get("memory", 0)))


def _with_defaults(reqs: dict[str, int], non_missing: dict[str, int] | None) -> dict[str, int]:
    """``reqs`` with ``NonMissingContainerRequests`` for the resources it lacks."""
    for k, v in (non_missing or {}).items():
        reqs.setdefault(k, v)
    return reqs


def _sum(pod: Pod, reqs_of: Callable[[Container, bool], dict[str, int]]) -> dict[str, int]:
    """``AggregateContainerRequests`` over ``reqs_of(container, reads_status)``: regular containers and
    restartable init containers summed, each other init container with the restartable ones before it,
    the greatest of those taken."""
    result: dict[str, int] = {}
    for c in pod.spec.containers:
        _add(result, reqs_of(c, True))
    restartable: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in pod.spec.init_containers:
        sidecar = c.restart_policy == "Always"
        r = reqs_of(c, sidecar)  # only restartable init containers read their status
        if sidecar:
            _add(result, r)
            _add(restartable, r)
            r = dict(restartable)
        else:
            combined = dict(r)
            _add(combined, restartable)
            r = combined
        _max(init_max, r)
    _max(result, init_max)
    return result


RELEASE_REQUESTS: dict[str, PodRequests] = {
    "1.35": PodRequests("1.35", pod_level_resize=False),
    "1.36": PodRequests("1.36", pod_level_resize=True),
    # from kubernetes PR 140047's text, not verified against the release's code
    "1.37": PodRequests("1.37", pod_level_resize=True, max_of_aggregates=True),
}
"""The requests each reproduced release computes, by minor release."""


_GATES = (("PodLevelResources", "pod_level"), ("InPlacePodLevelResourcesVerticalScaling", "pod_level_resize"))


def requests_key(release: str, gates: Any = None) -> str:
    """The name of the requests ``release`` computes under ``gates`` (anything with ``enabled(name)``, a
    profile's :class:`~optisched.profile.gates.FeatureGates`): the release alone under its defaults, else
    ``1.36:PodLevelResources=false``."""
    base = RELEASE_REQUESTS[release]
    if gates is None:
        return release
    changed = [f"{gate}={str(gates.enabled(gate)).lower()}" for gate, attr in _GATES
               if bool(gates.enabled(gate)) != getattr(base, attr)]
    return ":".join([release, ",".join(changed)]) if changed else release


def requests_of(key: str) -> PodRequests:
    """The requests :func:`requests_key` names."""
    release, _, changed = key.partition(":")
    calc = RELEASE_REQUESTS[release]
    values = dict(item.split("=") for item in changed.split(",") if item)
    if "PodLevelResources" in values:
        calc = replace(calc, pod_level=values["PodLevelResources"] == "true")
    if "InPlacePodLevelResourcesVerticalScaling" in values:
        calc = replace(calc, pod_level_resize=values["InPlacePodLevelResourcesVerticalScaling"] == "true")
    return calc


def _pod_level_requests(pod: Pod) -> dict[str, int]:
    res = pod.spec.resources
    if res is None:
        return {}
    reqs = dict(res.requests)
    for name, q in res.limits.items():
        if _pod_level_supported(name):
            reqs.setdefault(name, q)
    return {k: v for k, v in reqs.items() if _pod_level_supported(k)}


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def pod_requests(pod: Pod, release: str = "1.35") -> dict[str, int]:
    """Effective requests of ``release`` (a :func:`requests_key`) in scheduler units
    (:meth:`PodRequests.requests`)."""
    return requests_of(release).requests(pod)


def non_zero_requests(pod: Pod, release: str = "1.35") -> tuple[int, int]:
    """(milli-CPU, memory bytes) for scoring of ``release`` (:meth:`PodRequests.non_zero`)."""
    return requests_of(release).non_zero(pod)
