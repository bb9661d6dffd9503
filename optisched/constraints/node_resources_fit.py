"""NodeResourcesFit filter: the node must have room for the pod's requests.

Upstream: ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (``fitsRequest``): "Too many pods"
first, then every requested resource (cpu, memory, ephemeral-storage, then scalar resources: extended,
hugepages) whose free amount is below the request; ignored extended resources and resource groups are
skipped. A request larger than the node's whole allocatable makes the failure
UnschedulableAndUnresolvable (no preemption can help), otherwise Unschedulable.
"""
from __future__ import annotations

import numpy as np

from ..framework import Code, CycleState, FilterResult, Status
from ..model.snapshot import Snapshot

__all__ = ["TOO_MANY_PODS", "NodeResourcesFit", "is_extended_resource"]

TOO_MANY_PODS = "Too many pods"
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


def is_extended_resource(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: namespaced, not ``kubernetes.io/``, not ``requests.`` prefixed."""
    if name.startswith("hugepages-") or "/" not in name:
        return False
    if name.startswith("kubernetes.io/") or ".kubernetes.io/" in name.split("/")[0] + "/":
        return False
    return not name.startswith("requests.")


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.snapshot = snapshot
        state = snapshot.state
        fit = getattr(profile, "fit", None)
        ignored = set(getattr(fit, "ignored_resources", ()))
        groups = set(getattr(fit, "ignored_resource_groups", ()))
        self.pods_col = state.resource_col("pods")
        # columns checked, in upstream's order: cpu, memory, ephemeral-storage, then scalars by name
        self.check_cols: list[tuple[int, str]] = []
        for j, r in enumerate(state.resources):
            if r == "pods":
                continue
            if r not in _NATIVE and is_extended_resource(r) and (r in ignored or r.split("/")[0] in groups):
                continue
            self.check_cols.append((j, f"Insufficient {r}"))

    def pre_filter(self, cycle: CycleState) -> Status:
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        return self.fits(cycle.pod, nodes, self.snapshot.requested[nodes])

    def fits(self, pod: int, nodes: np.ndarray, used: np.ndarray) -> FilterResult:
        """``fitsRequest`` of pod row ``pod`` on ``nodes`` given what is already requested there."""
        alloc = self.snapshot.state.allocatable[nodes]
        req = self.snapshot.state.pod_requests[pod]
        code = np.zeros(len(nodes), dtype=np.int8)
        reasons: list[tuple[np.ndarray, str]] = []
        too_many = used[:, self.pods_col] + 1 > alloc[:, self.pods_col]
        if too_many.any():
            code[too_many] = Code.UNSCHEDULABLE
            reasons.append((too_many, TOO_MANY_PODS))
        for j, text in self.check_cols:
            need = req[j]
            if need <= 0:
                continue
            short = need > alloc[:, j] - used[:, j]
            if short.any():
                code[short] = np.maximum(code[short], Code.UNSCHEDULABLE)
                never = short & (need > alloc[:, j])
                code[never] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                reasons.append((short, text))
        return FilterResult(code, reasons)
