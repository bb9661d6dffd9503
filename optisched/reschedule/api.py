"""``optisched.reschedule(cluster, goal=...)``: the Python entry point (the CLI calls the same planner)."""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from ..model.cluster import Cluster
from ..model.state import compile_cluster
from ..policy.eviction import EvictionPolicy
from ..profile import SchedulerConfig, default_config, for_version
from ..profile.releases import chosen_version, notice, parse_version
from .plan import ReschedulePlan
from .solve import plan_reschedule
from .waves import Budgets

__all__ = ["reschedule_cluster"]


def reschedule_cluster(cluster: Cluster, profile: SchedulerConfig | None = None, *,
                       goal: str | list[str] = "consolidate", max_moves: int | None = None,
                       max_moves_per_node: int | None = None, max_unavailable_per_workload: str | None = None,
                       evict: str = "", namespaces: Iterable[str] = (), exclude_namespaces: Iterable[str] = (),
                       selector: str = "", time_limit: float = 30.0, seed: int = 0,
                       gang: Iterable[str] = (), soft: bool = False, pareto: bool = False,
                       compare_descheduler: bool | str | Path = False,
                       kubernetes_version: str | None = None,
                       feature_gates: Mapping[str, bool] | None = None) -> ReschedulePlan:
    """Evictions that reach ``goal`` (``"consolidate"``, ``"fit-pending"``, ``"repair"``, ``"balance"``; several
    in priority order), in waves, each replacement's landing predicted by a kube-scheduler replay
    (docs/reschedule.md); ``soft``: ``repair`` repairs the preferences too.
    The answer's ``target_frame()``, ``waves_frame()`` and ``prediction_frame()`` are pandas DataFrames;
    ``summary()`` the terminal lines, ``to_dict()`` plan.json. ``gang``: ``fit-pending`` for these pending
    pods only (``--for``), all or none. ``pareto``: also the goal at move budgets 0, 1, 2, 4, ...
    (``pareto_frame()``, docs/reschedule.md). ``compare_descheduler``: True (the goal's strategy) or a
    DeschedulerPolicy file: ``plan.versus`` then holds the descheduler beside the plan
    (``plan.versus.frame()`` a DataFrame, ``to_dict()`` the ``compareDescheduler`` of plan.json).
    ``kubernetes_version`` (``"1.36"``): the kube-scheduler release the replays and the rules follow
    (None: the one the configuration was decoded for, 1.35 by default); ``feature_gates``: name -> value, as
    kube-scheduler's ``--feature-gates`` (None: the configuration's)."""
    config = profile or cluster.config or default_config()
    if kubernetes_version is not None or cluster.kubernetes_version is not None:
        asked = parse_version(kubernetes_version) if kubernetes_version is not None else None
        config = for_version(config, chosen_version(asked, cluster.kubernetes_version)[0])
    if feature_gates is not None:
        config = for_version(config, config.kubernetes_version, feature_gates)
    if (unverified := notice(config.kubernetes_version)) is not None:
        warnings.warn(unverified, UserWarning, stacklevel=3)
    policy = replace(EvictionPolicy.parse(evict), namespaces=tuple(namespaces),
                     exclude_namespaces=tuple(exclude_namespaces), selector=selector)
    state = compile_cluster(cluster, config.requests_key)
    plan = plan_reschedule(state, config, goal, Budgets(max_moves, max_moves_per_node, max_unavailable_per_workload),
                           policy, time_limit=time_limit, seed=seed, gang=list(gang) or None, soft=soft,
                           pareto=pareto)
    if compare_descheduler is not False:
        from ..descheduler import load_policy
        from .versus import compare_descheduler as versus

        given = None if compare_descheduler is True else load_policy(compare_descheduler)
        plan.versus = versus(state, config, plan, given)
    return plan
