"""Time as optimal mode's choices see it: deterministic work by default, the wall clock as a safety net.

Every choice that depends on time (a tier's share of what is left, when a neighbourhood search stops,
whether an objective is built, whether an explanation probe runs) reads :meth:`Clock.now`. By default
that is *deterministic time*: the sum of CP-SAT's and GLOP's own deterministic work counters (a measure
of work done, the same on every run of the same model with the same parameters), converted to nominal
seconds by :data:`DET_PER_SECOND`, plus fixed charges for the steps that are not solver calls. So the
same input, options and seed give the same answer whatever the machine's load.

The wall clock only guards the promise: every solver call also gets the wall time left until the limit
(``max_time_in_seconds``). When that safety net stops a call, the run is no longer reproducible and
:attr:`Clock.wall_hit` says so (the certificate notes it). ``deterministic=False`` (``--nondeterministic``)
measures everything by the wall clock, as earlier versions did: it uses the whole limit on a loaded
machine, but two runs may differ.

CP-SAT's parallel search is made reproducible with ``interleave_search`` (its workers' tasks run in a
fixed order, "deterministic independently of num_workers", ortools ``sat_parameters.proto``).
"""
from __future__ import annotations

import time

__all__ = ["DET_PER_SECOND", "Clock"]

# CP-SAT deterministic time per nominal second. On the 2-core machine with nothing else running, 1 unit
# of CP-SAT's deterministic time took 0.6-1.2 s of wall time (two interleaved workers, generated clusters
# of 40-400 nodes); with a dozen other jobs on the same cores it took up to 20 s. 0.05 keeps the solver
# phases inside the limit even then, so on an idle machine a run ends well before its limit (the search
# uses a fraction of it); --nondeterministic spends the whole limit by the wall clock (docs/optimal_trust.md).
DET_PER_SECOND = 0.05
# interleaved workers check the deterministic limit between batches of tasks: a call asked for d units
# used up to 2.2 d (CP-SAT 9.15, generated 60-node models), so they are asked for d / OVERSHOOT
OVERSHOOT = 2.0
# GLOP's deterministic time runs about ten times slower than CP-SAT's for the same wall time
GLOP_DET_PER_SECOND = 5.0


class Clock:
    """The run's clock: :meth:`now` in nominal seconds since the start (deterministic or wall)."""

    def __init__(self, limit: float, deterministic: bool = True) -> None:
        self.t0 = time.perf_counter()
        self.limit = limit
        self.deterministic = deterministic
        self.spent = 0.0  # deterministic nominal seconds charged so far
        self.wall_hit = False  # the wall-clock safety net stopped a call (the run may not repeat)

    @classmethod
    def wall(cls) -> Clock:
        """A wall clock without a limit whose :meth:`now` is ``time.perf_counter()`` (for callers that
        keep deadlines as perf_counter values)."""
        clock = cls(float("inf"), deterministic=False)
        clock.t0 = 0.0
        return clock

    def now(self) -> float:
        """Nominal seconds used so far."""
        return self.spent if self.deterministic else time.perf_counter() - self.t0

    def charge(self, seconds: float) -> None:
        """Count ``seconds`` of deterministic work done outside a solver call (no effect on wall time)."""
        if self.deterministic:
            self.spent += max(0.0, seconds)

    def past(self, deadline: float) -> bool:
        """Whether ``deadline`` (a :meth:`now` value) has passed, or the wall limit (then noted)."""
        if self.wall_left() <= 0:
            self.wall_hit = self.wall_hit or self.deterministic
            return True
        return self.now() >= deadline

    def wall_allows(self, seconds: float) -> bool:
        """Whether ``seconds`` of work outside a solver's own limit (copying a model) still fit before the
        wall limit; when not, the safety net has decided (noted)."""
        if self.wall_left() > seconds:
            return True
        self.wall_hit = self.wall_hit or self.deterministic
        return False

    def wall_left(self) -> float:
        """Wall seconds left until the limit (the safety net)."""
        return self.t0 + self.limit - time.perf_counter()

    def set_limits(self, parameters, seconds: float, workers: int = 1) -> None:  # type: ignore[no-untyped-def]
        """A CP-SAT call's limits for ``seconds`` nominal seconds: deterministic time (and interleaved
        workers) by default, the wall time left as the safety net either way."""
        wall = max(0.01, self.wall_left())
        if self.deterministic:
            parameters.max_deterministic_time = max(1e-4, seconds * DET_PER_SECOND / (OVERSHOOT if workers > 1 else 1))
            parameters.max_time_in_seconds = wall
            if workers > 1:
                parameters.interleave_search = True
        else:
            parameters.max_time_in_seconds = max(0.01, min(seconds, wall))

    def settle(self, response, seconds: float) -> None:  # type: ignore[no-untyped-def]
        """After a CP-SAT call given ``seconds``: charge its deterministic time, note a wall stop."""
        if not self.deterministic:
            return
        used = response.deterministic_time / DET_PER_SECOND
        self.spent += used
        if self.wall_left() <= 0.01 and used < 0.99 * seconds:
            self.wall_hit = True

    def glop_parameters(self, seconds: float) -> str:
        """GLOP's limits (a text ``GlopParameters``) for ``seconds`` nominal seconds."""
        wall = max(0.01, self.wall_left())
        if self.deterministic:
            return f"max_deterministic_time: {max(1e-3, seconds * GLOP_DET_PER_SECOND)} max_time_in_seconds: {wall}"
        return f"max_time_in_seconds: {max(0.01, min(seconds, wall))}"
