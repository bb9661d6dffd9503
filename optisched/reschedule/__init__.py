"""Rescheduling running pods, as a descheduler would, with the fewest evictions and a predicted landing
for every replacement (docs/reschedule.md)."""
from __future__ import annotations

import sys
import types

from .goals import Goal, parse_goals
from .plan import ReschedulePlan
from .solve import plan_reschedule
from .waves import Budgets, Move, Staging, Wave, stage

__all__ = ["Budgets", "Goal", "Move", "ReschedulePlan", "Staging", "Wave", "parse_goals", "plan_reschedule", "stage"]


class _CallableModule(types.ModuleType):
    """``optisched.reschedule`` is both this package and the API function: importing the package rebinds
    the parent's attribute to the module, so the module forwards a call to the function."""

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        from .api import reschedule_cluster

        return reschedule_cluster(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
