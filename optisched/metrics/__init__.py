"""Metrics of a placement: pure functions over ``(state, node_of)``, vectorized over nodes.

``node_of`` is an int64 vector over the pod rows of a :class:`~optisched.model.state.ClusterState`
giving each pod's node row after a run (-1 = not placed); see :mod:`optisched.comparison.runs`.
"""
from __future__ import annotations

from .cost import COST_KEY, hourly_cost, node_costs
from .devices import (
    DeviceUsage,
    DeviceWorkload,
    device_fragmentation,
    device_usage,
    device_workload,
    published_devices,
)
from .disruption import PDBViolation, evicted, moved, pdb_violations
from .fragmentation import (
    GPU,
    GpuFragmentation,
    Workload,
    copies_that_fit,
    expected_fragmentation,
    expected_fragmented_free,
    fits,
    fragmentation,
    fragmented_free,
    gpu_fragmentation,
    largest_fitting_shape,
    workload_of,
)
from .resources import (
    UtilizationStats,
    allocation_ratio,
    free_capacity,
    nodes_used,
    pods_per_node,
    requested_per_node,
    utilization,
    utilization_stats,
)
from .spread import SpreadDomains, domain_counts, spread_constraints, spread_skew

__all__ = [
    "COST_KEY",
    "GPU",
    "DeviceUsage",
    "DeviceWorkload",
    "GpuFragmentation",
    "PDBViolation",
    "SpreadDomains",
    "UtilizationStats",
    "Workload",
    "allocation_ratio",
    "copies_that_fit",
    "device_fragmentation",
    "device_usage",
    "device_workload",
    "domain_counts",
    "evicted",
    "expected_fragmentation",
    "expected_fragmented_free",
    "fits",
    "fragmentation",
    "fragmented_free",
    "free_capacity",
    "gpu_fragmentation",
    "hourly_cost",
    "largest_fitting_shape",
    "moved",
    "node_costs",
    "nodes_used",
    "pdb_violations",
    "pods_per_node",
    "published_devices",
    "requested_per_node",
    "spread_constraints",
    "spread_skew",
    "utilization",
    "utilization_stats",
    "workload_of",
]
