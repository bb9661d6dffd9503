"""``compare``: greedy mode, optimal mode and other greedy policies on one snapshot, as one Comparison.

Greedy mode runs first (recording each cycle, for the per-plugin scores of the per-pod diff) and its
result is reused as optimal mode's hint, so optimal mode's time limit is spent on the solver. Other
policies are greedy mode under another profile: a named NodeResourcesFit strategy (``MostAllocated``,
``LeastAllocated``) or a ``KubeSchedulerConfiguration`` file. With ``replay`` the running pods are placed
again first (:mod:`optisched.comparison.replay`) and the input's placement is the third run, ``current``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import interrupt
from ..errors import InputError
from ..greedy.scheduler import GreedyOptions, GreedyScheduler
from ..model.state import ClusterState
from ..optimal.eviction.pdb_model import budget_use
from ..optimal.score_terms import SCORE_SCALE
from ..optimal.solve import OptimalOptions, OptimalResult, solve_optimal
from ..optimal.tier_key import TierKind
from ..optimal.tiers import Progress
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig, load_config, parse_config
from .compare import Comparison, build_comparison
from .replay import prepare_replay
from .runs import PlacementRun

__all__ = ["CompareOptions", "policy_config", "run_comparison"]

STRATEGIES = ("LeastAllocated", "MostAllocated")


@dataclass(frozen=True)
class CompareOptions:
    time_limit: float = 60.0
    workers: int = 2
    seed: int = 0
    policies: tuple[str, ...] = ()
    movable: bool = False
    objective: str | None = None  # a user objective for optimal mode (pack, spread, balance)
    weights: tuple[tuple[str, int], ...] = ()  # one weighted objective for optimal mode (solve.parse_weights)
    eviction: EvictionPolicy = field(default_factory=EvictionPolicy)  # which running pods optimal mode may move
    replay: bool = False  # place the running pods again; the input's placement becomes the run "current"
    selector: str = ""  # replay: only the running pods this label selector (kubectl -l syntax) picks
    namespaces: tuple[str, ...] = ()  # replay: only the running pods of these namespaces

    def __post_init__(self) -> None:
        if not self.replay and (self.selector or self.namespaces):
            raise InputError("--selector and --namespaces choose the pods of a replay; add --replay")
        if self.replay and self.movable:
            raise InputError("--movable and --replay: a replay already places the running pods again")


def policy_config(policy: str) -> SchedulerConfig:
    """The configuration of a greedy policy: a NodeResourcesFit strategy name, or a config file."""
    if policy in STRATEGIES:
        return parse_config({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{
                "name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": policy}}}]}]}, f"<{policy}>")
    path = Path(policy)
    if not path.exists():
        from ..errors import InputError

        raise InputError(f"--policies: {policy!r} is neither a strategy ({', '.join(STRATEGIES)}) nor a file")
    return load_config(path)


def optimal_run(result: OptimalResult, seconds: float) -> PlacementRun:
    cert = result.certificate.to_dict()
    score = next((t.objective for t in result.certificate.tiers if t.key.base.kind == TierKind.SCORE), None)
    return PlacementRun("optimal", "optimal", result.node_of.copy(), seconds, dict(result.unschedulable),
                        not_handled=dict(result.batch.skipped), certificate=cert,
                        score_objective=None if score is None else score / SCORE_SCALE,
                        budgets=[u.to_dict() for u in budget_use(result.batch, result.node_of)])


def run_comparison(state: ClusterState, config: SchedulerConfig, options: CompareOptions = CompareOptions(), *,
                   on_greedy: Callable[[int, int], None] | None = None,
                   on_solver: Progress | None = None,
                   extra: Sequence[PlacementRun] = (),
                   solve: Callable[..., OptimalResult] | None = None) -> tuple[Comparison, OptimalResult]:
    """Greedy, optimal, each policy, then the ``extra`` runs given (e.g. :func:`~.runs.placement_run`);
    ``on_greedy(done, total)`` and ``on_solver`` report progress. With ``options.replay`` the comparison
    is of the replay's batch (same pod rows as ``state``), and its ``current`` run is third. ``solve(state,
    config, options, progress, greedy)`` gives the optimal run instead of :func:`solve_optimal` (a rescue
    after the solver's process crashed: :mod:`optisched.worker`)."""
    known: list[PlacementRun] = []
    if options.replay:
        replay = prepare_replay(state.cluster, [p.scheduler_name for p in config.profiles], options.selector,
                                options.namespaces)
        state, known = replay.state, [replay.current]
    start = time.perf_counter()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=True, record_candidates=False,
                                                          interruptible=True)).run(progress=on_greedy)
    runs = [PlacementRun.from_greedy("greedy", greedy, time.perf_counter() - start)]
    start = time.perf_counter()
    optimal = OptimalOptions(time_limit=options.time_limit, workers=options.workers, seed=options.seed,
                             movable=options.movable, objective=options.objective, weights=options.weights,
                             eviction=options.eviction)
    opt = solve_optimal(state, config, optimal, progress=on_solver, greedy=greedy) if solve is None else \
        solve(state, config, optimal, on_solver, greedy)
    runs.append(optimal_run(opt, time.perf_counter() - start))
    runs += known
    for policy in options.policies if not interrupt.requested() else ():  # (Ctrl-C: the runs so far)
        start = time.perf_counter()
        other = GreedyScheduler(state, policy_config(policy),
                                GreedyOptions(record=True, record_candidates=False)).run()
        runs.append(PlacementRun.from_greedy(f"greedy:{Path(policy).stem}", other, time.perf_counter() - start))
    runs.extend(extra)
    return build_comparison(state, config, runs), opt
