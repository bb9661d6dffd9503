"""What-ifs on a running cluster: node-pressure eviction by the kubelet, replayed through kube-scheduler.

See docs/whatif.md.
"""
from __future__ import annotations

from .kubelet import EvictionThresholds, load_kubelet_config, parse_thresholds
from .pressure import PressureOutcome, run_pressure
from .usage import Usage, load_usage, usage_from_annotations

__all__ = ["EvictionThresholds", "PressureOutcome", "Usage", "load_kubelet_config", "load_usage", "parse_thresholds",
           "run_pressure", "usage_from_annotations"]
