"""``optisched compare``: greedy mode, optimal mode and more greedy policies on one snapshot, through
:func:`optisched.api.compare`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from . import common
from .options import (
    ClusterArg,
    ContextOpt,
    EvictOpt,
    FeatureGatesOpt,
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ObjectiveOpt,
    ProfileOpt,
    VersionOpt,
    WeightsOpt,
    seed_option,
    time_limit_option,
    workers_option,
)


def compare(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    time_limit: Annotated[float, time_limit_option("Seconds for optimal mode.")] = 60.0,
    seed: Annotated[int, seed_option("Solver seed.")] = 0,
    workers: Annotated[int, workers_option("CP-SAT workers.")] = 2,
    policies: Annotated[str, typer.Option("--policies", help="More greedy runs, comma-separated: MostAllocated, "
                                                             "LeastAllocated or KubeSchedulerConfiguration files.")] = "",
    report: Annotated[Path | None, typer.Option("--report", help="Write report.html, plots and CSVs here.")] = None,
    movable: Annotated[bool, typer.Option("--movable", help="Running pods may move in optimal mode.")] = False,
    objective: ObjectiveOpt = None,
    weights: WeightsOpt = None,
    replay: Annotated[bool, typer.Option("--replay", help="Take the running pods off their nodes (DaemonSet, "
                                         "mirror and static pods stay) and place them again; the input's "
                                         "placement is shown as the run 'current'.")] = False,
    selector: Annotated[str, typer.Option("--selector", "-l", help="With --replay: only the running pods this "
                                          "label selector picks (kubectl -l syntax).")] = "",
    namespaces: Annotated[str, typer.Option("--namespaces", help="With --replay: only the running pods of these "
                                            "namespaces, comma-separated.")] = "",
    as_json: JsonOpt = False,
    evict: EvictOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Greedy (kube-scheduler) vs optimal placement of one snapshot: side by side, per pod, with a report."""
    from ..comparison.pipeline import policy_config

    names = tuple(p.strip() for p in policies.split(",") if p.strip())
    for name in names:
        policy_config(name)  # refuse a bad policy before the long runs
    common.solver_choices(objective, weights, evict)
    common.check_outputs({"--report": report}, cluster, profile, names, folders=("--report",))
    if report is not None:
        from ..report import check_report_dir

        check_report_dir(report)
    state, config, warnings = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                          kubernetes_version, feature_gates)
    choices: dict[str, Any] = {
        "time_limit": time_limit, "workers": workers, "seed": seed, "policies": names, "movable": movable,
        "objective": objective, "weights": weights, "replay": replay, "selector": selector,
        "namespaces": tuple(n.strip() for n in namespaces.split(",") if n.strip()), "evict": evict or ""}

    def rescued(crash) -> None:  # type: ignore[no-untyped-def]
        from ..optimal.solve import greedy_answer

        line = crash.line("kube-scheduler's placement (greedy mode) as the optimal run")
        common.error(line)
        _answer(state, config, choices, warnings, as_json, report,
                lambda state, config, options, progress, greedy: greedy_answer(state, config, options, greedy, line))

    common.guarded(lambda: _answer(state, config, choices, warnings, as_json, report, None), rescued)


def _answer(state, config, choices: dict, warnings: list[str], as_json: bool,  # type: ignore[no-untyped-def]
            report: Path | None, solve) -> None:
    """The comparison, by the solver or by ``solve`` (a rescue), printed, written, and the exit it calls for."""
    from ..api import compare as run
    from ..comparison.render import render_comparison
    from ..interrupt import catching, cause, requested
    from ..optimal.solve import solve_optimal
    from .progress import progress_bar, solver_status

    optimal: list[Any] = []

    def solved(state, config, options, progress, greedy):  # type: ignore[no-untyped-def]
        result = solve_optimal(state, config, options, progress=progress, greedy=greedy) if solve is None else \
            solve(state, config, options, progress, greedy)
        optimal.append(result)
        return result

    with catching(), progress_bar(common.err, "greedy mode", len(state.pending)) as on_greedy, \
            solver_status(common.err) as on_solver:
        comparison = run(state, config, **choices, on_greedy=on_greedy, on_solver=on_solver, solve=solved)
    if as_json:
        common.print_json({**comparison.to_json(), **({"interrupted": True} if requested() else {}),
                           "warnings": warnings})
    else:
        render_comparison(common.out, comparison)
    if report is not None:
        from ..report import write_report

        common.wrote_folder(write_report(comparison, report), report)
    if optimal[0].violations:
        raise typer.Exit(common.EXIT_CHECK_FAILED)
    if requested() and not as_json:
        common.out.print(f"interrupted ({cause()}): the runs' answers so far", highlight=False)
    common.stop_if_interrupted()
