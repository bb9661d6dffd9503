"""The descheduler's in-tree strategies, by name (as ``pkg/framework/pluginregistry`` registers them)."""
from __future__ import annotations

from typing import Any, Protocol

from .args import Args
from .context import Context
from .duplicates import RemoveDuplicates
from .topology_spread import RemovePodsViolatingTopologySpreadConstraint
from .utilization import HighNodeUtilization, LowNodeUtilization
from .violations import (
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeTaints,
)

__all__ = ["EVICTOR_PLUGINS", "STRATEGIES", "Strategy"]


class Strategy(Protocol):
    name: str
    point: str  # "deschedule" or "balance"

    def __init__(self, args: Args) -> None: ...
    def run(self, ctx: Context) -> None: ...


STRATEGIES: dict[str, Any] = {
    "LowNodeUtilization": LowNodeUtilization,
    "HighNodeUtilization": HighNodeUtilization,
    "RemoveDuplicates": RemoveDuplicates,
    "RemovePodsViolatingInterPodAntiAffinity": RemovePodsViolatingInterPodAntiAffinity,
    "RemovePodsViolatingNodeAffinity": RemovePodsViolatingNodeAffinity,
    "RemovePodsViolatingNodeTaints": RemovePodsViolatingNodeTaints,
    "RemovePodsViolatingTopologySpreadConstraint": RemovePodsViolatingTopologySpreadConstraint,
}

EVICTOR_PLUGINS = ("DefaultEvictor",)
