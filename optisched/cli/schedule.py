"""``optisched schedule``: greedy mode (kube-scheduler, cycle by cycle) or optimal mode (CP-SAT, all at once)."""
from __future__ import annotations

import json
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
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    NondeterministicOpt,
    ObjectiveOpt,
    ProfileOpt,
    StopAfterOpt,
    VersionOpt,
    WeightsOpt,
    mode_option,
    seed_option,
    time_limit_option,
    workers_option,
)


def schedule(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    mode: Annotated[str, mode_option("greedy (kube-scheduler) | optimal (CP-SAT batch)")] = "greedy",
    tie_break: Annotated[str, typer.Option("--tie-break", help="first | heap | random")] = "first",
    seed: Annotated[int, seed_option("Seed for --tie-break random and the solver.")] = 0,
    no_requeue: Annotated[bool, typer.Option("--no-requeue", help="One attempt per pod (conformance traces).")] = False,
    trace: Annotated[Path | None, typer.Option(help="Write the per-cycle trace (JSON; greedy mode).")] = None,
    output: Annotated[Path | None, typer.Option(help="Write placements: FILE.json or FILE.csv.")] = None,
    time_limit: Annotated[float, time_limit_option("Optimal mode: seconds in all.")] = 60.0,
    workers: Annotated[int, workers_option("Optimal mode: CP-SAT workers.")] = 2,
    movable: Annotated[bool, typer.Option("--movable", help="Optimal mode: running pods may move.")] = False,
    objective: ObjectiveOpt = None,
    weights: WeightsOpt = None,
    nondeterministic: NondeterministicOpt = False,
    stop_after: StopAfterOpt = None,
    as_json: JsonOpt = False,
    fail_on_pending: Annotated[bool, typer.Option("--fail-on-pending", help="Exit 1 when pods stay pending "
                                                  "(unschedulable; pods not handled do not count).")] = False,
    evict: EvictOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Place the pending pods as kube-scheduler would (greedy mode), or all at once (optimal mode)."""
    from ..greedy.select import TieBreak

    try:
        tb = TieBreak(tie_break)
    except ValueError:
        raise InputError(f"--tie-break: {tie_break!r} is not one of first, heap, random") from None
    if mode == "optimal" and trace is not None:
        raise InputError("--trace records greedy mode's cycles; optimal mode has none (use --output)")
    if objective is not None and mode != "optimal":
        raise InputError("--objective applies to optimal mode (--mode optimal)")
    if weights is not None and mode != "optimal":
        raise InputError("--weights applies to optimal mode (--mode optimal)")
    from ..optimal.solve import STOP_AFTER

    if stop_after is not None and stop_after not in STOP_AFTER:
        raise InputError(f"--stop-after: {stop_after!r} is not one of {', '.join(STOP_AFTER)}")
    parsed, policy = common.solver_choices(objective, weights, evict)
    common.check_outputs({"--output": output, "--trace": trace}, cluster, profile)
    state, config, warnings = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                          kubernetes_version, feature_gates)
    if mode == "greedy":
        summary = _schedule_greedy(state, config, tb, seed, no_requeue, trace, output, as_json)
        return _schedule_end(summary, as_json, warnings, fail_on_pending)
    from ..optimal.solve import OptimalOptions

    options = OptimalOptions(time_limit=time_limit, workers=workers, seed=seed, movable=movable, objective=objective,
                             weights=parsed, eviction=policy, deterministic=not nondeterministic,
                             stop_after=stop_after)

    def answer(solve) -> None:  # type: ignore[no-untyped-def]
        summary = _schedule_optimal(state, config, options, output, as_json, solve)
        _schedule_end(summary, as_json, warnings, fail_on_pending)

    common.guarded(lambda: answer(_solved(state, config, options)),
                   lambda crash: answer(_rescued(state, config, crash)))


def _schedule_end(summary: dict, as_json: bool, warnings: list[str], fail_on_pending: bool) -> None:
    """What every schedule run does with its summary: print it as JSON, and exit as docs/cli.md says."""
    if as_json:
        common.print_json({**summary, "warnings": warnings})
    if summary.get("violations"):
        raise typer.Exit(common.EXIT_CHECK_FAILED)
    common.stop_if_interrupted()
    if fail_on_pending and summary["counts"]["unschedulable"]:
        common.err.print(f"{summary['counts']['unschedulable']} pod(s) stayed pending (--fail-on-pending)",
                         highlight=False)
        raise typer.Exit(common.EXIT_CHECK_FAILED)


def _solved(state, config, options):  # type: ignore[no-untyped-def]
    """``solve(options, progress)``: optimal mode's answer, interruptible (Ctrl-C, SIGTERM)."""
    from ..optimal.solve import solve_optimal

    return lambda options, progress: solve_optimal(state, config, options, progress=progress)


def _rescued(state, config, crash):  # type: ignore[no-untyped-def]
    """``solve(options, progress)`` after the solver's process crashed: say so on one line, then kube-scheduler's
    placement (greedy mode, run again here to the end) as optimal mode's answer, marked as such."""
    from ..greedy.scheduler import GreedyOptions, GreedyScheduler
    from ..optimal.solve import greedy_answer

    line = crash.line("kube-scheduler's placement (greedy mode)")
    common.error(line)

    def solve(options, progress):  # type: ignore[no-untyped-def]
        greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
        return greedy_answer(state, config, options, greedy, line)

    return solve


def _schedule_greedy(state, config, tb, seed: int, no_requeue: bool, trace: Path | None,  # type: ignore[no-untyped-def]
                     output: Path | None, as_json: bool) -> dict:
    from ..greedy.scheduler import GreedyOptions, GreedyScheduler
    from ..greedy.trace import trace_of
    from ..interrupt import catching
    from ..profile.releases import release
    from .progress import progress_bar
    from .render import render_schedule_summary
    from .summaries import greedy_summary

    sched = GreedyScheduler(state, config, GreedyOptions(tie_break=tb, seed=seed, requeue=not no_requeue,
                                                         record=trace is not None, interruptible=True))
    with catching(), progress_bar(common.err, "scheduling", len(state.pending)) as advance:
        result = sched.run(progress=advance)
    summary = {**greedy_summary(result), "kubernetesVersion": release(config.kubernetes_version).patch}
    if trace is not None:
        from ..outputs import write_text

        write_text(trace, json.dumps(trace_of(result, config, tb), indent=1) + "\n")
    if output is not None:
        unsched = {state.pods[p].key: m for p, m in result.unschedulable.items()}
        stopped = {"interrupted": True, "notAttempted": summary["notAttempted"]} if result.interrupted else {}
        common.write_placements(output, "greedy", state, result.snapshot.node_of, result.skipped,
                                {"unschedulable": unsched, "evicted": summary["evicted"], **stopped},
                                result.not_attempted)
    if not as_json:
        render_schedule_summary(common.err if str(output) == "-" else common.out, summary)
    return summary


def _schedule_optimal(state, config, options, output: Path | None, as_json: bool,  # type: ignore[no-untyped-def]
                      solve) -> dict:
    """Optimal mode's answer by ``solve(options, progress)`` (:func:`_solved`, :func:`_rescued`): written,
    printed; its summary."""
    from ..interrupt import catching
    from ..profile.releases import release
    from .progress import solver_status
    from .render import render_optimal_summary
    from .summaries import optimal_summary

    with catching(), solver_status(common.err) as update:
        result = solve(options, update)
    summary = {**optimal_summary(result), "kubernetesVersion": release(config.kubernetes_version).patch}
    if output is not None:
        unsched = {state.pods[p].key: m for p, m in result.unschedulable.items()}
        common.write_placements(output, "optimal", state, result.node_of, result.batch.skipped,
                                {"unschedulable": unsched, "evicted": summary["evicted"], "moved": summary["moved"],
                                 "certificate": summary["certificate"], "explanations": summary["explanations"],
                                 **({"interrupted": True} if result.certificate.interrupted else {})},
                                result.greedy.not_attempted)
    if not as_json:
        render_optimal_summary(common.err if str(output) == "-" else common.out, result, summary)
    return summary
