"""Rescheduling running pods, as a descheduler would, with the fewest evictions and a predicted landing
for every replacement (docs/reschedule.md)."""
from __future__ import annotations

from .goals import Goal, parse_goals
from .plan import ReschedulePlan
from .solve import plan_reschedule
from .waves import Budgets, Move, Staging, Wave, stage

__all__ = ["Budgets", "Goal", "Move", "ReschedulePlan", "Staging", "Wave", "parse_goals", "plan_reschedule", "stage"]
