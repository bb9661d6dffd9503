"""Effective pod requests, exactly as kube-scheduler v1.35 computes them.

Follows ``k8s.io/component-helpers/resource.PodRequests`` (sum of containers;
restartable init containers added and carried into later init containers; max
with each init container; pod-level cpu/memory/hugepages requests replace the
aggregate when set; overhead added), the API server's defaulting of requests
from limits (``SetDefaults_Pod``), and the scheduler's non-zero requests used
for scoring (``framework.calculateResource``: 100m CPU / 200 MiB memory for
containers that do not set them).
"""
from __future__ import annotations

from .objects import Container, Pod
from .quantity import NANO, to_scheduler_units

__all__ = [
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "container_requests",
    "non_zero_requests",
    "pod_requests",
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
    for k, v in other.items():
        if v > into.get(k, 0) or k not in into:
            into[k] = max(v, into.get(k, 0))


def _aggregate(pod: Pod, non_missing: dict[str, int] | None) -> dict[str, int]:
    def reqs_of(c: Container) -> dict[str, int]:
        r = container_requests(c)
        if non_missing:
            for k, v in non_missing.items():
                r.setdefault(k, v)
        return r

    result: dict[str, int] = {}
    for c in pod.spec.containers:
        _add(result, reqs_of(c))
    restartable: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in pod.spec.init_containers:
        r = reqs_of(c)
        if c.restart_policy == "Always":
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


def _nanos_requests(pod: Pod, non_missing: dict[str, int] | None) -> dict[str, int]:
    reqs = _aggregate(pod, non_missing)
    reqs.update(_pod_level_requests(pod))
    _add(reqs, pod.spec.overhead)
    return reqs


def pod_requests(pod: Pod) -> dict[str, int]:
    """Effective requests in scheduler units (millicores for cpu, ``Value()`` for the rest)."""
    return {k: to_scheduler_units(k, v) for k, v in _nanos_requests(pod, None).items()}


def non_zero_requests(pod: Pod) -> tuple[int, int]:
    """(milli-CPU, memory bytes) with the scoring defaults for containers that request neither.

    As ``framework.calculateResource``/``getNonMissingContainerRequests``: with pod-level requests set,
    the default applies only to a resource that neither level sets.
    """
    plain = _nanos_requests(pod, None)
    res = pod.spec.resources
    pod_level_set = res is not None and any(_pod_level_supported(k) for k in (*res.requests, *res.limits))
    if pod_level_set:
        non_missing = {k: v for k, v in _NON_MISSING.items() if k not in plain}
    else:
        non_missing = _NON_MISSING
    reqs = _nanos_requests(pod, non_missing) if non_missing else plain
    return to_scheduler_units("cpu", reqs.get("cpu", 0)), to_scheduler_units("memory", reqs.get("memory", 0))
