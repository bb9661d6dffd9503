"""Whether a replacement may keep a landing elsewhere than its target: every goal must still hold there.

The staging's *accept* step (:mod:`.waves`) keeps kube-scheduler's landing when it differs from the
target, instead of re-planning, only when the goals the plan is for are not given up at the landing
node. kube-scheduler's filters already passed there (the replay placed it), so what is checked is what
the filters do not see, per goal:

* ``consolidate``: not a node the plan empties or leaves empty (it would be in use again);
* ``repair``: the replacement is no duplicate over RemoveDuplicates' average there, and its landing
  creates no violation anywhere, counted as the summary counts them (:mod:`.violations`) on the
  predicted placement: kube-scheduler's filters passed for the replacement itself, but not for the pods
  already there (another pod's DoNotSchedule spread pushed over maxSkew by the arrival; the descheduler's
  anti-affinity predicate, which reads topology domains as its own code does; with ``--soft`` the
  preferences);
* ``balance``: with target thresholds, the landing node stays at or below them (LowNodeUtilization moves
  pods off over-utilized nodes, never onto one, kubernetes-sigs/descheduler v0.34.0
  ``pkg/framework/plugins/nodeutilization/lownodeutilization.go``); without, its utilization stays at
  or below the most utilized node's in the target;
* ``fit-pending``: not a node the target puts a pod that is still pending on (the room is planned for it).
"""
from __future__ import annotations

import numpy as np

from ..descheduler.utilization import above_any
from ..model.state import ClusterState
from ..profile import SchedulerConfig
from .goals import Goal
from .start import duplicate_check, shares
from .violations import landing_violations, placed_snapshot
from .waves import Accept

__all__ = ["landing_check"]


def _repaired(state: ClusterState, config: SchedulerConfig, counted: np.ndarray, soft: bool):  # type: ignore[no-untyped-def]
    """The repair check: the replacement is no duplicate over RemoveDuplicates' average at the landing
    node, and its landing creates no violation anywhere (:func:`.violations.landing_violations`: the
    summary's own counting, per class, on the predicted placement, over the pods a topology domain of
    the landing node holds): neither it nor another pod breaks a repaired rule (with ``soft``, the
    preferences too) that it did not break without the replacement there."""
    over = duplicate_check(state, counted)
    last: dict[bytes, tuple] = {}  # the wave's predicted placement: one snapshot for all its landings

    def check(p: int, node: int, before: np.ndarray, after: np.ndarray) -> str | None:
        if over(np.flatnonzero(after == node).tolist(), p):
            return f"lands on {state.node_names[node]}, where it would break Duplicates"
        key = np.asarray(after, dtype=np.int64).tobytes()
        if key not in last:
            last.clear()
            last[key] = placed_snapshot(state, config, after, True)
        snapshot, frameworks = last[key]
        made = landing_violations(state, config, snapshot, frameworks, p, soft)
        if not made:
            return None
        q = p if p in made else min(made)
        who = "it" if q == p else state.pods[q].key
        return f"lands on {state.node_names[node]}, where {who} would break {made[q]}"
    return check


def landing_check(state: ClusterState, config: SchedulerConfig, goals: list[Goal], target: np.ndarray,
                  counted: np.ndarray, soft: bool = False,
                  targets: dict[str, int] | None = None) -> Accept:
    """The check the staging calls for a landing elsewhere than the target (see the module docstring):
    (pod row, landing node row, placement before the wave, predicted placement after it) -> why the
    landing is refused, or None. ``emptied`` nodes are refused by the staging itself."""
    names = state.node_names
    repaired = _repaired(state, config, counted, soft) if Goal.REPAIR in goals else None
    resources: list[str] = [r for r in ("cpu", "memory") if r in state.resources]
    ceiling = shares(state, target, resources).max() if resources else 0.0
    awaited = {int(target[p]) for p in np.flatnonzero((state.pod_node < 0) & (target >= 0)).tolist()}

    def check(p: int, node: int, before: np.ndarray, after: np.ndarray) -> str | None:
        if Goal.FIT_PENDING in goals and node in awaited and any(
                after[q] < 0 for q in np.flatnonzero((state.pod_node < 0) & (target == node)).tolist()):
            return f"lands on {names[node]}, where the plan makes room for a pending pod"
        if Goal.BALANCE in goals and targets:
            pct = 100.0 * shares(state, after, list(targets))
            if above_any(pct, np.array(list(targets.values()), dtype=float))[node]:
                return f"lands on {names[node]}, which it puts over the target thresholds"
        elif Goal.BALANCE in goals and resources and shares(state, after, resources)[node].max() > ceiling + 1e-9:
            return f"lands on {names[node]}, more utilized than any node of the target"
        return repaired(p, node, before, after) if repaired is not None else None
    return check
