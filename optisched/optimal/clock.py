"""Time as optimal mode's choices see it: deterministic work by default, the wall clock as a safety net.

Every choice that depends on time (a tier's share of what is left, when a neighbourhood search stops,
whether an objective is built, whether an explanation probe runs) reads :meth:`Clock.now`. By default
that is *deterministic time*: the sum of CP-SAT's and GLOP's own deterministic work counters (a measure
of work done, the same on every run of the same model with the same parameters), converted to nominal
seconds by :func:`det_rate` (a function of the model's size, fitted to measurements), plus the work
counted outside the solvers (pods, checks, model terms written and copied, LP iterations: :meth:`Clock.work`
at :data:`WORK_COST`, fitted to CPU time), recorded per phase in :attr:`Clock.ledger`. Ctrl-C (:mod:`optisched.interrupt`) makes every deadline past. So the
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
from collections.abc import Iterator
from contextlib import contextmanager

from .. import interrupt

__all__ = ["DET_PER_SECOND", "WORK_COST", "Clock", "det_rate", "model_terms"]

# CP-SAT deterministic time per nominal second, as a function of the model's size (never measured at run
# time, so the same model gets the same budget on every machine): RATE_AT_1K · (variables / 1000) ^ −RATE_EXP,
# between RATE_MIN and RATE_MAX. Fitted to idle-machine measurements of deterministic time per wall second
# (2 interleaved workers, generated clusters; docs/optimal_trust.md): 0.25-0.42 for 400-4,000 variables,
# 0.10-0.14 for 11-17k (0.03-0.06 on later tiers), 0.01-0.05 for 34-46k; scaled by 0.8 so that on an idle
# machine a call ends at about 80 % of its wall share. Under load a unit takes longer: the wall-clock
# safety net (set_limits) keeps the run inside the limit, and the certificate says so.
RATE_AT_1K = 0.4
RATE_EXP = 0.77
RATE_MIN, RATE_MAX = 0.01, 0.33
# the rate of a model whose size is not known (a phase charged without one)
DET_PER_SECOND = 0.05
# interleaved workers check the deterministic limit between batches of tasks: a call asked for d units
# used up to 2.2 d (CP-SAT 9.15, generated 60-node models), so they are asked for d / OVERSHOOT
OVERSHOOT = 2.0
# wall seconds per model variable a CP-SAT call costs outside the solver's own limit: setting the objective
# and the hint, handing the model over, reading the answer (0.1-0.3 s for 30,000 variables, idle machine)
CALL_COST = 1e-5
# Clock.wall_for: the wall seconds before a run's CPU share is measured, the least share assumed, and
# the share that counts as a whole core (an idle machine's, whatever the noise: its deterministic
# budgets, not the net, should end the run)
MEASURE_AFTER = 0.5
MIN_SHARE = 0.05
FULL_SHARE = 0.8
# GLOP's deterministic time runs about ten times slower than CP-SAT's for the same wall time
GLOP_DET_PER_SECOND = 5.0


# nominal seconds per unit of work counted outside the solvers, fitted to CPU time (time.process_time(),
# one core, so about idle wall time) on generated clusters of 40-2,000 nodes by
# benchmarks/calibrate_clock.py (the data: docs/optimal_trust.md, "How much a unit of built work costs")
WORK_COST = {
    "pod": 4.9e-5,  # a pod put in a snapshot, its rules' states or a class (batch, repair, the model's rules)
    "check": 1.15e-3,  # a pod put through the greedy filters over every node (greedy mode, the repair)
    "cell": 6.5e-8,  # a (class, node) pair the filter rules restrict (phase 1 of the model)
    "candidate": 2.2e-4,  # a class of a large batch whose candidate nodes are chosen among its allowed ones
    "edge": 7e-6,  # a (class, node) or (class, class) edge of the graph of independent parts
    "term": 6e-6,  # a variable, a constraint or a term of one a rule writes to a CP-SAT model through its wrapper
    "objective term": 3.5e-6,  # the same, written by an objective built when its tier comes (the score)
    "copy": 9e-7,  # one of those copied or read whole (a probe's copy, the search's view of the model)
    "lp": 2e-6,  # a nonzero or column of the LP relaxation built
    "lp iteration": 2.5e-4,  # a simplex iteration of GLOP
    "step": 1.2e-7,  # a variable or term of the model a neighbourhood step passes over (drawing its nodes)
    "tier term": 1.1e-5,  # a term of an objective a tier evaluates, scales, compares or hands over
    "call": CALL_COST,  # a variable of a model handed to CP-SAT (its hint, the copy, the answer read back)
}


def model_terms(proto, constraints_since: int = 0, variables_since: int = 0) -> int:  # type: ignore[no-untyped-def]
    """Variables and constraints (each with its linear terms and enforcement literals) of a CP-SAT model
    proto, counted from ``variables_since`` and ``constraints_since`` on: the work of writing them, the
    same on every run. Read only: no constraint is changed."""
    cts = proto.constraints
    total = len(proto.variables) - variables_since
    for i in range(constraints_since, len(cts)):
        ct = cts[i]
        # (reading ``linear`` of another kind of constraint would turn it into an empty linear one)
        total += 1 + len(ct.enforcement_literal) + (len(ct.linear.vars) if ct.has_linear() else 0)
    return total


def det_rate(variables: int) -> float:
    """CP-SAT deterministic time per nominal second for a model of ``variables`` variables (the fit above)."""
    if variables <= 0:
        return DET_PER_SECOND
    return min(RATE_MAX, max(RATE_MIN, RATE_AT_1K * (variables / 1000) ** -RATE_EXP))


class Clock:
    """The run's clock: :meth:`now` in nominal seconds since the start (deterministic or wall)."""

    def __init__(self, limit: float, deterministic: bool = True) -> None:
        self.t0 = time.perf_counter()
        self.cpu0 = time.process_time()
        self.limit = limit
        self.deterministic = deterministic
        self.spent = 0.0  # deterministic nominal seconds charged so far
        self.wall_hit = False  # the wall-clock safety net stopped a call (the run may not repeat)
        # phase -> {"nominal": charged, "cpu": process seconds, "wall": seconds, kind: units of work}
        self.ledger: dict[str, dict[str, float]] = {}
        self._phase = "other"
        self._mark = (0.0, time.process_time(), self.t0)
        self._call_cpu = 0.0

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

    def work(self, kind: str, units: float) -> None:
        """Charge ``units`` of counted work of ``kind`` (:data:`WORK_COST`), noted in the phase's ledger."""
        self.charge(WORK_COST[kind] * units)
        row = self.ledger.setdefault(self._phase, {})
        row[kind] = row.get(kind, 0.0) + units

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Note in :attr:`ledger` what the steps inside cost, a phase inside another counted apart from
        it: nominal seconds charged, CPU and wall seconds (what ``benchmarks/calibrate_clock.py`` fits
        the costs to); never an input to a choice."""
        outer = self._phase
        self._close()
        self._phase = name
        try:
            yield
        finally:
            self._close()
            self._phase = outer

    def _close(self) -> None:
        """Add what the current phase cost since its last mark to its ledger row; mark now."""
        now = (self.spent, time.process_time(), time.perf_counter())
        row = self.ledger.setdefault(self._phase, {})
        for key, value, before in zip(("nominal", "cpu", "wall"), now, self._mark):
            row[key] = row.get(key, 0.0) + value - before
        self._mark = now

    @property
    def interrupted(self) -> bool:
        """Ctrl-C asked the run to stop (:mod:`optisched.interrupt`): every deadline has passed."""
        return interrupt.requested()

    def past(self, deadline: float) -> bool:
        """Whether ``deadline`` (a :meth:`now` value) has passed, or the wall limit (then noted), or the
        run was interrupted."""
        if self.interrupted:
            return True
        if self.wall_left() <= 0:
            self.wall_hit = self.wall_hit or self.deterministic
            return True
        return self.now() >= deadline

    def wall_allows(self, seconds: float) -> bool:
        """Whether ``seconds`` of work outside a solver's own limit (copying a model) still fit before the
        wall limit; when not, the safety net has decided (noted). Never once interrupted."""
        if self.interrupted:
            return False
        if self.wall_left() > seconds:
            return True
        self.wall_hit = self.wall_hit or self.deterministic
        return False

    def affords(self, variables: int) -> bool:
        """Whether a solver call on a model of ``variables`` variables may still start: not once
        interrupted; for a large model (its own work outside the solver's limit above 0.05 s) only while
        the wall clock has room for that work (else the safety net decides, noted). A small model's call
        costs milliseconds and still gets CP-SAT's least limit."""
        if self.interrupted:
            return False
        own = CALL_COST * variables
        return own <= 0.05 or self.wall_allows(own)

    def wall_for(self, cpu: float) -> float:
        """Wall seconds that ``cpu`` CPU seconds of this process's work will take at the share of a core it
        has had so far (at ``nice 19`` on a 2-core machine at a load average of 10, a tenth); ``cpu``
        itself before half a second has passed (too short to measure). Only the safety net reads it."""
        wall = time.perf_counter() - self.t0
        if wall < MEASURE_AFTER:
            return cpu
        share = (time.process_time() - self.cpu0) / wall
        return cpu if share >= FULL_SHARE else cpu / max(MIN_SHARE, share)

    def wall_left(self) -> float:
        """Wall seconds left until the limit (the safety net)."""
        return self.t0 + self.limit - time.perf_counter()

    def set_limits(self, parameters, seconds: float, workers: int = 1,  # type: ignore[no-untyped-def]
                   variables: int = 0) -> None:
        """A CP-SAT call's limits for ``seconds`` nominal seconds on a model of ``variables`` variables:
        deterministic time (and interleaved workers) by default, the wall time left as the safety net
        either way; none at all once interrupted. CP-SAT's own Ctrl-C handler is off (ours stops the run)."""
        parameters.catch_sigint_signal = False
        self._call_cpu = time.process_time()
        wall = max(0.01, self.wall_left()) if not self.interrupted else 0.0
        if self.deterministic:
            rate = det_rate(variables) / (OVERSHOOT if workers > 1 else 1)
            parameters.max_deterministic_time = max(1e-4, seconds * rate)
            parameters.max_time_in_seconds = wall
            if workers > 1:
                parameters.interleave_search = True
        else:
            parameters.max_time_in_seconds = min(wall, max(0.01, seconds))

    def settle(self, response, seconds: float, variables: int = 0) -> None:  # type: ignore[no-untyped-def]
        """After a CP-SAT call given ``seconds`` on a model of ``variables`` variables: charge its
        deterministic time, note a wall stop."""
        row = self.ledger.setdefault(self._phase, {})
        row["solver cpu"] = row.get("solver cpu", 0.0) + time.process_time() - self._call_cpu
        self.work("call", variables)
        if not self.deterministic:
            return
        row["solver det"] = row.get("solver det", 0.0) + response.deterministic_time
        used = response.deterministic_time / det_rate(variables)
        self.spent += used
        row["solver nominal"] = row.get("solver nominal", 0.0) + used
        if self.wall_left() <= 0.01 and used < 0.99 * seconds and not self.interrupted:
            self.wall_hit = True

    def glop_parameters(self, seconds: float) -> str:
        """GLOP's limits (a text ``GlopParameters``) for ``seconds`` nominal seconds."""
        wall = max(0.01, self.wall_left()) if not self.interrupted else 0.0
        if self.deterministic:
            return f"max_deterministic_time: {max(1e-3, seconds * GLOP_DET_PER_SECOND)} max_time_in_seconds: {wall}"
        return f"max_time_in_seconds: {min(wall, max(0.01, seconds))}"
