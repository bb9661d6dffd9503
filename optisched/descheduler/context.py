"""What a strategy sees in one descheduling cycle: the cluster, the scheduler profile and the evictor."""
from __future__ import annotations

from dataclasses import dataclass

from ..model.state import ClusterState
from ..profile import SchedulerConfig
from .evictor import Evictor

__all__ = ["Context"]


@dataclass
class Context:
    state: ClusterState
    config: SchedulerConfig
    evictor: Evictor
