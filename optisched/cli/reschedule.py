"""``optisched reschedule``: evictions in waves that reach a goal, each landing predicted by a kube-scheduler
replay; ``--apply`` carries them out, ``--undo-cordons`` (:mod:`.undo_cordons`) restores the nodes after."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from . import common
from .options import (
    ClusterArg,
    ContextOpt,
    EvictOpt,
    FeatureGatesOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ProfileOpt,
    VersionOpt,
    seed_option,
    time_limit_option,
)


def reschedule(
    cluster: ClusterArg = None,
    goal: Annotated[str, typer.Option("--goal", help="consolidate | fit-pending | repair | balance, several "
                                      "comma-separated in priority order (docs/reschedule.md).")] = "consolidate",
    soft: Annotated[bool, typer.Option("--soft", help="repair: the preferences too (preferred affinity and "
                                       "anti-affinity, ScheduleAnyway spread), as a lower tier.")] = False,
    max_moves: Annotated[int | None, typer.Option("--max-moves", min=0, help="At most this many evictions.")] = None,
    max_moves_per_node: Annotated[int | None, typer.Option("--max-moves-per-node", min=0,
                                                           help="At most this many evictions off one node.")] = None,
    max_unavailable: Annotated[str | None, typer.Option("--max-unavailable-per-workload",
                                                        help="Per owner and wave: a count or a percent.")] = None,
    evict: EvictOpt = None,
    namespaces: Annotated[str, typer.Option("--namespaces", help="Only pods of these namespaces move.")] = "",
    exclude_namespaces: Annotated[str, typer.Option("--exclude-namespaces", help="Pods of these never move.")] = "",
    selector: Annotated[str, typer.Option("--selector", "-l", help="Only pods with these labels move.")] = "",
    thresholds: Annotated[str, typer.Option("--thresholds", help="balance: LowNodeUtilization's under-utilized "
                                            "percents, e.g. cpu=20,memory=20.")] = "",
    target_thresholds: Annotated[str, typer.Option("--target-thresholds", help="balance: over-utilized above "
                                                   "these percents, e.g. cpu=50,memory=50.")] = "",
    for_pods: Annotated[str, typer.Option("--for", help="fit-pending: only these pending pods (ns/name,...), "
                                          "all or none.")] = "",
    time_limit: Annotated[float, time_limit_option("Seconds for the target.")] = 30.0,
    seed: Annotated[int, seed_option("CP-SAT random seed.")] = 0,
    pareto: Annotated[bool, typer.Option("--pareto", help="Also the goal at 0, 1, 2, 4, ... moves, with the "
                                         "knee (shares --time-limit with the plan).")] = False,
    profile: ProfileOpt = None,
    output: Annotated[Path | None, typer.Option(help="Write the plan: plan.json or plan.yaml (Evictions).")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write report.html, plots and CSVs here.")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Carry the plan out through the Eviction API, wave by "
                                        "wave (needs --kubeconfig; a dry run otherwise).")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
    compare_descheduler: Annotated[bool, typer.Option("--compare-descheduler", help="Also run the descheduler's "
                                                      "strategy for the goal on the snapshot, replayed, beside "
                                                      "the plan (docs/whatif.md).")] = False,
    descheduler_policy: Annotated[Path | None, typer.Option("--descheduler-policy", help="With "
                                                            "--compare-descheduler: this DeschedulerPolicy instead "
                                                            "of the goal's strategy.")] = None,
    fail_on_unreached: Annotated[bool, typer.Option("--fail-on-unreached", help="Exit 1 when the plan does not "
                                                    "reach a goal as far as its target does.")] = False,
    undo_cordons: Annotated[bool, typer.Option("--undo-cordons", help="Instead of planning: uncordon the nodes an "
                                               "earlier --apply cordoned and marked that hold pods "
                                               "(docs/reschedule.md).")] = False,
    plan_id: Annotated[str | None, typer.Option("--plan", help="With --undo-cordons: only the nodes of this "
                                                "plan id.")] = None,
    undo_all: Annotated[bool, typer.Option("--all", help="With --undo-cordons: the empty nodes a plan emptied "
                                           "too (kept cordoned for an autoscaler otherwise).")] = False,
) -> None:
    """Evict running pods to reach a goal, in waves kube can carry out, each replacement's landing predicted."""
    import dataclasses

    if undo_cordons:
        from .undo_cordons import undo

        return undo(cluster, apply, kubeconfig, context, plan_id, undo_all)
    if plan_id is not None or undo_all:
        raise InputError("--plan and --all go with --undo-cordons")

    from ..policy.eviction import EvictionPolicy
    from ..reschedule import Budgets, parse_goals, plan_reschedule
    from ..reschedule.goals import parse_thresholds
    from ..reschedule.output import check_output, write_plan

    goals = parse_goals(goal)
    if bool(thresholds) != bool(target_thresholds):
        raise InputError("--thresholds and --target-thresholds go together")
    levels = (parse_thresholds(thresholds, "--thresholds"), parse_thresholds(target_thresholds, "--target-thresholds")) \
        if thresholds else None
    if apply and not kubeconfig:
        raise InputError("--apply needs --kubeconfig (the cluster the plan is read from and carried out on)")
    if max_unavailable is not None and not (max_unavailable.rstrip("%").isdigit()):
        raise InputError(f"--max-unavailable-per-workload: {max_unavailable!r} is not a count or a percent")
    if output is not None:
        check_output(output)
    common.check_outputs({"--output": output, "--report": report}, cluster, profile, descheduler_policy,
                         folders=("--report",))
    if report is not None:
        from ..reschedule.report import check_reschedule_report

        check_reschedule_report(report)
    from ..descheduler import load_policy

    versus_policy = load_policy(descheduler_policy) if descheduler_policy else None
    split = lambda text: tuple(x.strip() for x in text.split(",") if x.strip())
    policy = dataclasses.replace(EvictionPolicy.parse(evict), namespaces=split(namespaces),
                                 exclude_namespaces=split(exclude_namespaces), selector=selector)
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                   kubernetes_version, feature_gates)
    from ..interrupt import catching, cause, requested

    with catching():
        plan = plan_reschedule(state, config, goals, Budgets(max_moves, max_moves_per_node, max_unavailable), policy,
                               time_limit=time_limit, seed=seed,
                               gang=[k if "/" in k else f"default/{k}" for k in split(for_pods)] or None,
                               thresholds=levels, pareto=pareto, soft=soft)
    common.print_lines(plan.summary())
    if compare_descheduler or descheduler_policy:
        from ..reschedule.versus import compare_descheduler as versus
        from ..reschedule.versus import render_versus

        plan.versus = versus(state, config, plan, versus_policy, levels)
        render_versus(common.out, plan.versus)
    if output is not None:
        write_plan(plan, output)
    if report is not None:
        from ..reschedule.report import write_reschedule_report

        common.wrote_folder(write_reschedule_report(plan, state, report), report)
    if requested():  # an interrupted plan is shown and written, never carried out
        common.out.print(f"interrupted ({cause()}): the plan so far" + (", not applied" if apply else ""),
                         highlight=False)
        common.stop_if_interrupted()
    if fail_on_unreached and not plan.reached:  # a gate: the plan is shown and written, not carried out
        missed = ", ".join(r.goal for r in plan.reach if not r.reached)
        common.err.print(f"the plan does not reach its target on {missed} (--fail-on-unreached)"
                         + ("; not applied" if apply else ""), highlight=False)
        raise typer.Exit(1)
    if apply:
        _apply(plan, state, kubeconfig, context)


def _apply(plan, state, kubeconfig: str | None, context: str | None) -> None:  # type: ignore[no-untyped-def]
    """``--apply``: the plan through the Eviction API, wave by wave; exit 1 when an eviction failed."""
    from ..interrupt import catching
    from ..reschedule.apply import apply_live
    from ..reschedule.recheck import placement

    with catching():  # Ctrl-C (or SIGTERM) stops between two evictions, then the report is printed
        done = apply_live(plan, kubeconfig, context, placement(state))
    common.print_lines(done.lines())
    common.stop_if_interrupted()
    if done.failed:
        raise typer.Exit(1)
