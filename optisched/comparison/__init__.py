"""Compare: runs of several modes on one batch, compared as tables, plots and reports."""
from __future__ import annotations

from .compare import Comparison, build_comparison
from .replay import Replay, prepare_replay
from .runs import PlacementRun, placement_run, run_greedy

__all__ = ["Comparison", "PlacementRun", "Replay", "build_comparison", "placement_run", "prepare_replay",
           "run_greedy"]
