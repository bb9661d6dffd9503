"""The descheduler's strategies run on a snapshot, and what kube-scheduler does with their evictions.

Follows kubernetes-sigs/descheduler v0.34.0; see docs/whatif.md.
"""
from __future__ import annotations

from .policy import DeschedulerPolicy, load_policy, parse_policy
from .registry import STRATEGIES
from .run import DeschedulerOutcome, Eviction, evictions_of, run_descheduler

__all__ = ["STRATEGIES", "DeschedulerOutcome", "DeschedulerPolicy", "Eviction", "evictions_of", "load_policy",
           "parse_policy", "run_descheduler"]
