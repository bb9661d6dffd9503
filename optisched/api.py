"""The public Python API's functions (re-exported by the package root, :mod:`optisched`); the command
line calls them too, so a notebook and ``optisched COMMAND`` give the same answers. Every heavy import
happens inside a function, on call."""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .comparison.compare import Comparison
    from .greedy.scheduler import GreedyResult
    from .model.cluster import Cluster
    from .model.state import ClusterState
    from .optimal.result import OptimalResult
    from .optimal.tiers import Progress
    from .profile import SchedulerConfig
    from .reschedule import ReschedulePlan

__all__ = ["compare", "load", "reschedule", "schedule", "solve"]


def load(paths: Iterable[str], *, max_input_size: str | int = "4Gi") -> Cluster:
    """Load and validate a cluster from files, folders or ``-`` (raises :class:`optisched.errors.InputError`).
    ``max_input_size``: the largest file read, in bytes or as a quantity (``"512Mi"``)."""
    from .model.bounded import parse_size
    from .model.loader import load_cluster

    limit = parse_size(max_input_size) if isinstance(max_input_size, str) else max_input_size
    return load_cluster(list(paths), limit)


def _config(profile: SchedulerConfig | None, cluster: Cluster | ClusterState,
            kubernetes_version: str | None,
            feature_gates: Mapping[str, bool] | None = None) -> SchedulerConfig:
    """:func:`_release_config`, with ``feature_gates`` (name -> value) over the release's defaults when given
    (None: the ones the configuration was decoded with). A release whose rules are not verified against
    its code (1.37) says so in a ``UserWarning``, as the command line does on stderr."""
    from .profile import for_version
    from .profile.releases import notice

    config = _release_config(profile, cluster, kubernetes_version)
    if (unverified := notice(config.kubernetes_version)) is not None:
        warnings.warn(unverified, UserWarning, stacklevel=3)
    return config if feature_gates is None else for_version(config, config.kubernetes_version, feature_gates)


def _release_config(profile: SchedulerConfig | None, cluster: Cluster | ClusterState,
                    kubernetes_version: str | None) -> SchedulerConfig:
    """``profile``, else the input's configuration, else the defaults; as ``kubernetes_version`` reads it
    (``"1.35"``, ``"v1.36.2"``, ...), else the release the input names (:func:`.profile.releases.chosen_version`),
    else the one ``profile`` was decoded for (the input's own configuration: the default release, as the
    command line reads it)."""
    from .model.state import ClusterState
    from .profile import default_config, for_version
    from .profile.releases import chosen_version, parse_version

    found = cluster.cluster if isinstance(cluster, ClusterState) else cluster
    config = profile or found.config or default_config()
    if kubernetes_version is None and found.kubernetes_version is None and profile is not None:
        return config
    asked = parse_version(kubernetes_version) if kubernetes_version is not None else None
    return for_version(config, chosen_version(asked, found.kubernetes_version)[0])


def schedule(cluster: Cluster, profile: SchedulerConfig | None = None, *, mode: str = "greedy",
             tie_break: str = "first", seed: int = 0, requeue: bool = True,
             kubernetes_version: str | None = None,
             feature_gates: Mapping[str, bool] | None = None) -> GreedyResult:
    """Place the cluster's pending pods. ``mode="greedy"`` reproduces kube-scheduler; the config defaults to
    the one in the input, else kube-scheduler's default profile; ``kubernetes_version`` (``"1.36"``): the
    release whose rules to follow (default 1.35; docs/fidelity.md); ``feature_gates``
    (``{"NodeDeclaredFeatures": True}``): as kube-scheduler's ``--feature-gates``, over the release's
    defaults."""
    from .greedy.scheduler import GreedyOptions, GreedyScheduler
    from .greedy.select import TieBreak
    from .model.state import compile_cluster

    if mode != "greedy":
        raise ValueError(f"schedule() is greedy mode; use solve(cluster, mode={mode!r})")
    config = _config(profile, cluster, kubernetes_version, feature_gates)
    options = GreedyOptions(tie_break=TieBreak(tie_break), seed=seed, requeue=requeue)
    return GreedyScheduler(compile_cluster(cluster, config.requests_key), config, options).run()


def solve(cluster: Cluster, profile: SchedulerConfig | None = None, *, mode: str = "optimal",
          time_limit: float = 60.0, workers: int = 2, seed: int = 0, movable: bool = False,
          tie_break: str = "first", objective: str | None = None,
          weights: str | dict[str, int] | None = None, evict: str | Iterable[str] = (), deterministic: bool = True,
          stop_after: str | None = None, kubernetes_version: str | None = None,
          feature_gates: Mapping[str, bool] | None = None) -> OptimalResult | GreedyResult:
    """Place the cluster's pending pods in ``mode``: ``"optimal"`` solves the whole batch with CP-SAT and
    returns placements with a certificate (``result.certificate``); ``"greedy"`` is :func:`schedule`.
    ``objective`` (optimal mode): ``"pack"``, ``"spread"`` or ``"balance"``, solved before the profile's
    score (another name raises :class:`~optisched.errors.InputError`). ``weights`` (optimal mode), e.g.
    ``{"placed": 1000, "disruption": 1}``: one weighted objective instead of the lexicographic tiers
    (:func:`~optisched.optimal.options.parse_weights`). ``evict``: protected kinds that may leave their node
    (``"protected"``, ``"local-storage"``, ``"bare-pods"``, ``"system-critical"``; docs/eviction.md).
    ``deterministic=False``: budgets by the wall clock (two runs may differ); ``stop_after="placed"``: end
    after the placement tiers. ``kubernetes_version`` and ``feature_gates``: as for :func:`schedule`."""
    from .model.state import compile_cluster
    from .optimal.solve import OptimalOptions, parse_weights, solve_optimal
    from .policy.eviction import EvictionPolicy

    if mode == "greedy":
        return schedule(cluster, profile, tie_break=tie_break, seed=seed,
                        kubernetes_version=kubernetes_version, feature_gates=feature_gates)
    if mode != "optimal":
        raise ValueError(f"mode {mode!r} is not available; modes: greedy, optimal")
    config = _config(profile, cluster, kubernetes_version, feature_gates)
    options = OptimalOptions(time_limit=time_limit, workers=workers, seed=seed, movable=movable, objective=objective,
                             weights=parse_weights(weights),
                             eviction=EvictionPolicy.parse(evict if isinstance(evict, str) else ",".join(evict)),
                             deterministic=deterministic, stop_after=stop_after)
    return solve_optimal(compile_cluster(cluster, config.requests_key), config, options)


def reschedule(cluster: Cluster, profile: SchedulerConfig | None = None, *, goal: str | list[str] = "consolidate",
               kubernetes_version: str | None = None, feature_gates: Mapping[str, bool] | None = None,
               **options: object) -> ReschedulePlan:
    """Evictions that reach ``goal`` (``"consolidate"``, ``"fit-pending"``, ``"balance"``; several in priority
    order), in waves, each replacement's landing predicted by a kube-scheduler replay (docs/reschedule.md).
    Options: ``max_moves``, ``max_moves_per_node``, ``max_unavailable_per_workload``, ``evict``,
    ``namespaces``, ``exclude_namespaces``, ``selector``, ``time_limit``, ``seed``, ``pareto``;
    ``kubernetes_version`` and ``feature_gates`` as for :func:`schedule`. The answer's
    ``target_frame()``, ``waves_frame()``, ``prediction_frame()`` and ``pareto_frame()`` are pandas DataFrames; ``summary()``
    the terminal lines, ``to_dict()`` plan.json."""
    from .reschedule.api import reschedule_cluster

    return reschedule_cluster(cluster, profile, goal=goal, kubernetes_version=kubernetes_version,
                              feature_gates=feature_gates, **options)  # type: ignore[arg-type]


def compare(cluster: Cluster | ClusterState, profile: SchedulerConfig | None = None, *, time_limit: float = 60.0,
            workers: int = 2, seed: int = 0, policies: Iterable[str] = (), movable: bool = False,
            objective: str | None = None, weights: str | dict[str, int] | None = None, replay: bool = False,
            selector: str = "", namespaces: Iterable[str] = (),
            placements: Mapping[str, Mapping[str, str | None]] | None = None,
            evict: str | Iterable[str] = (), on_greedy: Callable[[int, int], None] | None = None,
            on_solver: Progress | None = None, solve: Callable[..., OptimalResult] | None = None,
            kubernetes_version: str | None = None,
            feature_gates: Mapping[str, bool] | None = None) -> Comparison:
    """Greedy mode vs optimal mode (and greedy ``policies``: ``MostAllocated``, ``LeastAllocated`` or config
    files) on one snapshot: a :class:`~optisched.comparison.Comparison` with DataFrames ``.summary``,
    ``.pods`` (the per-pod diff), ``.nodes`` and ``.plot_*()`` helpers; ``optisched.report.write_report``
    writes it as a report. ``replay=True`` takes the running pods (those ``selector``, kubectl's ``-l``
    syntax, and ``namespaces`` pick; DaemonSet, mirror and static pods stay) off their nodes and places
    them again with the pending ones; the input's placement is the third run, ``"current"``.
    ``placements`` adds your own runs, ``{"mine": {"ns/pod": "node" or None}}`` (pods not named keep
    their input node), measured with the same metrics. ``objective``, ``weights`` and ``evict``: as for
    :func:`solve`. A compiled :class:`~optisched.model.state.ClusterState` is used as it is. Hooks:
    ``on_greedy(done, total)`` and ``on_solver`` report progress; ``solve(state, config, options, progress,
    greedy)`` gives the optimal run instead of the solver (:func:`~optisched.comparison.pipeline.run_comparison`).
    ``kubernetes_version`` and ``feature_gates``: as for :func:`schedule`."""
    from .comparison.pipeline import CompareOptions, run_comparison
    from .comparison.runs import placement_run
    from .model.state import ClusterState, compile_cluster, for_release
    from .optimal.options import parse_weights
    from .policy.eviction import EvictionPolicy

    state = cluster if isinstance(cluster, ClusterState) else compile_cluster(cluster)
    config = _config(profile, state, kubernetes_version, feature_gates)
    state = for_release(state, config.requests_key)
    options = CompareOptions(time_limit=time_limit, workers=workers, seed=seed, policies=tuple(policies),
                             movable=movable, objective=objective, weights=parse_weights(weights), replay=replay,
                             selector=selector, namespaces=tuple(namespaces),
                             eviction=EvictionPolicy.parse(evict if isinstance(evict, str) else ",".join(evict)))
    given = [placement_run(state, name, p) for name, p in (placements or {}).items()]
    return run_comparison(state, config, options, on_greedy=on_greedy, on_solver=on_solver, extra=given,
                          solve=solve)[0]
