"""The ``optisched`` command line: parse, load, call, render. Nothing else lives here."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Placement optimizer for Kubernetes: reproduce kube-scheduler cycle by cycle, then beat it.")
out = Console()
err = Console(stderr=True)

ClusterArg = Annotated[list[str] | None, typer.Argument(
    help="Files, folders or - (stdin): YAML/JSON objects or List dumps. Omit with --kubeconfig/--context.")]
ProfileOpt = Annotated[Path | None, typer.Option("--profile", help="KubeSchedulerConfiguration file.")]
KubeconfigOpt = Annotated[str | None, typer.Option("--kubeconfig", help="Read a live cluster (read-only).")]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context of the live cluster.")]


def _load(paths: list[str] | None, profile: Path | None, kubeconfig: str | None = None, context: str | None = None):
    from .model.loader import load_cluster
    from .model.state import compile_cluster
    from .profile import default_config, load_config

    if kubeconfig or context:
        if paths:
            raise InputError("give either CLUSTER files or --kubeconfig/--context, not both")
        from .model.live import load_live

        cluster = load_live(kubeconfig, context)
    elif not paths:
        raise InputError("no input: give CLUSTER files or folders, - for stdin, or --kubeconfig/--context")
    else:
        cluster = load_cluster(paths)
    config = load_config(profile) if profile else (cluster.config or default_config())
    dra = [p.key for p in cluster.pods if p.spec.resource_claims and not p.spec.node_name]
    if dra:
        err.print(f"[yellow]warning:[/] {len(dra)} pending pod(s) carry resourceClaims ({escape(dra[0])}"
                  f"{', …' if len(dra) > 1 else ''}): DynamicResources is not modelled, their claims are ignored")
    return compile_cluster(cluster), config


def _write_placements(path: Path, mode: str, placements: dict[str, str | None], extra: dict) -> None:
    if path.suffix == ".csv":
        lines = ["pod,node"] + [f"{k},{v or ''}" for k, v in placements.items()]
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(json.dumps({"mode": mode, "placements": placements, **extra}, indent=1) + "\n")


MODES = ("greedy", "optimal")
ObjectiveOpt = Annotated[str | None, typer.Option(
    "--objective", help="Optimal mode: pack | spread | balance, solved before the profile's score.")]


@app.command()
def schedule(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    mode: Annotated[str, typer.Option("--mode", help="greedy (kube-scheduler) | optimal (CP-SAT batch)")] = "greedy",
    tie_break: Annotated[str, typer.Option("--tie-break", help="first | heap | random")] = "first",
    seed: Annotated[int, typer.Option(help="Seed for --tie-break random and the solver.")] = 0,
    no_requeue: Annotated[bool, typer.Option("--no-requeue", help="One attempt per pod (conformance traces).")] = False,
    trace: Annotated[Path | None, typer.Option(help="Write the per-cycle trace (JSON; greedy mode).")] = None,
    output: Annotated[Path | None, typer.Option(help="Write placements: FILE.json or FILE.csv.")] = None,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.1, help="Optimal mode: seconds in all.")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Optimal mode: CP-SAT workers.")] = 2,
    movable: Annotated[bool, typer.Option("--movable", help="Optimal mode: running pods may move.")] = False,
    objective: ObjectiveOpt = None,
    weights: Annotated[str | None, typer.Option("--weights", help="Optimal mode: one weighted objective instead of "
                                                "the tiers, e.g. placed=1000,disruption=1,score=1.")] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Place the pending pods as kube-scheduler would (greedy mode), or all at once (optimal mode)."""
    from .greedy.select import TieBreak

    if mode not in MODES:
        raise InputError(f"--mode: {mode!r} is not one of {', '.join(MODES)}")
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
    from .optimal.solve import parse_weights
    from .optimal.user_objectives import check_objective

    check_objective(objective)
    parsed = parse_weights(weights)
    state, config = _load(cluster, profile, kubeconfig, context)
    if mode == "optimal":
        _schedule_optimal(state, config, seed, output, time_limit, workers, movable, objective, parsed)
        return
    _schedule_greedy(state, config, tb, seed, no_requeue, trace, output)


def _schedule_greedy(state, config, tb, seed: int, no_requeue: bool, trace: Path | None,  # type: ignore[no-untyped-def]
                     output: Path | None) -> None:
    from .greedy.scheduler import GreedyOptions, GreedyScheduler
    from .greedy.trace import trace_of
    from .render import progress_bar, render_schedule_summary

    sched = GreedyScheduler(state, config, GreedyOptions(tie_break=tb, seed=seed, requeue=not no_requeue,
                                                         record=trace is not None))
    with progress_bar(err, "scheduling", len(state.pending)) as advance:
        result = sched.run(progress=advance)
    if trace is not None:
        trace.write_text(json.dumps(trace_of(result, config, tb), indent=1) + "\n")
    if output is not None:
        unsched = {state.pods[p].key: m for p, m in result.unschedulable.items()}
        _write_placements(output, "greedy", result.placements(), {"unschedulable": unsched})
    if trace is None:
        render_schedule_summary(out, result)


def _schedule_optimal(state, config, seed: int, output: Path | None, time_limit: float,  # type: ignore[no-untyped-def]
                      workers: int, movable: bool, objective: str | None = None,
                      weights: tuple[tuple[str, int], ...] = ()) -> None:
    from .optimal.solve import OptimalOptions, solve_optimal
    from .render import render_optimal_summary, solver_status

    options = OptimalOptions(time_limit=time_limit, workers=workers, seed=seed, movable=movable, objective=objective,
                             weights=weights)
    with solver_status(err) as update:
        result = solve_optimal(state, config, options, progress=update)
    if output is not None:
        unsched = {state.pods[p].key: m for p, m in result.unschedulable.items()}
        _write_placements(output, "optimal", result.placements(),
                          {"unschedulable": unsched, "certificate": result.certificate.to_dict(),
                           "explanations": [e.to_dict() for e in result.explanations]})
    render_optimal_summary(out, result)
    if result.violations:
        raise typer.Exit(1)


@app.command()
def compare(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.1, help="Seconds for optimal mode.")] = 60.0,
    seed: Annotated[int, typer.Option(help="Solver seed.")] = 0,
    workers: Annotated[int, typer.Option("--workers", min=1, help="CP-SAT workers.")] = 2,
    policies: Annotated[str, typer.Option("--policies", help="More greedy runs, comma-separated: MostAllocated, "
                                                             "LeastAllocated or KubeSchedulerConfiguration files.")] = "",
    report: Annotated[Path | None, typer.Option("--report", help="Write report.html, plots and CSVs here.")] = None,
    movable: Annotated[bool, typer.Option("--movable", help="Running pods may move in optimal mode.")] = False,
    objective: ObjectiveOpt = None,
    weights: Annotated[str | None, typer.Option("--weights", help="Optimal mode: one weighted objective instead of "
                                                "the tiers, e.g. placed=1000,disruption=1,score=1.")] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Greedy (kube-scheduler) vs optimal placement of one snapshot: side by side, per pod, with a report."""
    from .experiments.pipeline import CompareOptions, policy_config, run_comparison
    from .experiments.render import render_comparison
    from .render import progress_bar, solver_status

    names = tuple(p.strip() for p in policies.split(",") if p.strip())
    for name in names:
        policy_config(name)  # refuse a bad policy before the long runs
    from .optimal.solve import parse_weights
    from .optimal.user_objectives import check_objective

    check_objective(objective)
    parsed = parse_weights(weights)
    state, config = _load(cluster, profile, kubeconfig, context)
    options = CompareOptions(time_limit=time_limit, workers=workers, seed=seed, policies=names, movable=movable,
                             objective=objective, weights=parsed)
    with progress_bar(err, "greedy mode", len(state.pending)) as on_greedy, solver_status(err) as on_solver:
        comparison, optimal = run_comparison(state, config, options, on_greedy=on_greedy, on_solver=on_solver)
    render_comparison(out, comparison)
    if report is not None:
        from .report import write_report

        written = write_report(comparison, report)
        err.print(f"wrote {len(written)} files to {report}/ (open {report}/report.html)")
    if optimal.violations:
        raise typer.Exit(1)


@app.command()
def inspect(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Summarize a cluster: nodes, pods, requests vs allocatable, PDBs, the active profile."""
    from .inspect import summarize
    from .render import render_inspect

    state, config = _load(cluster, profile, kubeconfig, context)
    summary = summarize(state, config)
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    else:
        render_inspect(out, summary)


@app.command()
def explain(
    cluster: ClusterArg = None,
    pod: Annotated[str, typer.Option("--pod", help="namespace/name of a pending pod.")] = "",
    profile: ProfileOpt = None,
    no_requeue: Annotated[bool, typer.Option("--no-requeue")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Show one pod's scheduling cycle: every node, the plugin that rejected it and why, or its scores."""
    from .greedy.scheduler import GreedyOptions, GreedyScheduler
    from .render import render_explain

    if not pod:
        raise InputError("--pod namespace/name is required")
    state, config = _load(cluster, profile, kubeconfig, context)
    key = pod if "/" in pod else f"default/{pod}"
    if key not in state.pod_index:
        raise InputError(f"no pod {key!r} in the input", obj=f"Pod/{key}")
    row = state.pod_index[key]
    if row not in state.pending:
        raise InputError(f"pod {key!r} is already bound to {state.pods[row].spec.node_name}", obj=f"Pod/{key}")
    result = GreedyScheduler(state, config, GreedyOptions(requeue=not no_requeue)).run()
    cycles = [c for c in result.cycles if c.pod == row]
    if not cycles:
        raise InputError(f"pod {key!r} was not scheduled by any profile ({result.skipped.get(row, '')})")
    render_explain(out, result, cycles[-1])


@app.command()
def preempt(
    cluster: ClusterArg = None,
    pod: Annotated[str | None, typer.Option("--pod", help="Only this pending pod (namespace/name).")] = None,
    all_pending: Annotated[bool, typer.Option("--all-pending", help="Every pending pod (the default).")] = False,
    mode: Annotated[str, typer.Option("--mode", help="greedy (kube-scheduler's DefaultPreemption) | optimal "
                                      "(CP-SAT: minimal victims for --pod, the whole batch otherwise).")] = "greedy",
    cross_node: Annotated[bool, typer.Option("--cross-node", help="Optimal mode, one pod: victims may be on other "
                                             "nodes of the domain its anti-affinity or spread counts.")] = False,
    time_limit: Annotated[float, typer.Option("--time-limit", min=0.1, help="Seconds for optimal mode.")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", min=1, help="CP-SAT workers.")] = 2,
    seed: Annotated[int, typer.Option("--seed", help="CP-SAT random seed.")] = 0,
    profile: ProfileOpt = None,
    output: Annotated[Path | None, typer.Option(help="Write policy/v1 Eviction objects (YAML).")] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Show which pods preemption evicts for which preemptors, with priorities and PDBs."""
    import yaml

    if mode not in MODES:
        raise InputError(f"--mode: {mode!r} is not a mode; modes: {', '.join(MODES)}")
    if pod and all_pending:
        raise InputError("give --pod or --all-pending, not both")
    if cross_node and (mode != "optimal" or not pod):
        raise InputError("--cross-node applies to optimal mode for one pod (--mode optimal --pod NS/NAME)")
    state, config = _load(cluster, profile, kubeconfig, context)
    key = None
    if pod:
        key = pod if "/" in pod else f"default/{pod}"
        if key not in state.pod_index:
            raise InputError(f"no pod {key!r} in the input", obj=f"Pod/{key}")
        if state.pod_node[state.pod_index[key]] >= 0:
            raise InputError(f"pod {key!r} is already bound to {state.pods[state.pod_index[key]].spec.node_name}",
                             obj=f"Pod/{key}")
    if mode == "optimal":
        docs = _preempt_optimal(state, config, key, cross_node, time_limit, workers, seed)
    else:
        from .greedy.scheduler import GreedyOptions, GreedyScheduler
        from .preemption.plan import eviction_objects, preemptions
        from .render import render_preemptions

        sched = GreedyScheduler(state, config, GreedyOptions())
        result = sched.run()
        plan = preemptions(result, sched.pdbs, key)
        render_preemptions(out, plan)
        docs = eviction_objects(plan)
    if output is not None:
        with open(output, "w", encoding="utf-8") as f:
            yaml.safe_dump_all(docs, f, sort_keys=False, explicit_start=True)


def _preempt_optimal(state, config, key: str | None, cross_node: bool, time_limit: float,  # type: ignore[no-untyped-def]
                     workers: int, seed: int) -> list[dict]:
    from .render import solver_status

    if key is not None:
        from .preemption.minimal import minimal_victims
        from .preemption.plan import minimal_eviction_objects
        from .render import render_minimal_preemption

        with solver_status(err) as update:
            answer = minimal_victims(state, config, key, cross_node=cross_node, time_limit=time_limit,
                                     workers=workers, seed=seed, progress=update)
        render_minimal_preemption(out, [answer])
        if answer.violations:
            raise typer.Exit(1)
        return minimal_eviction_objects([answer])
    from .optimal.solve import OptimalOptions, solve_optimal
    from .preemption.plan import batch_eviction_objects, batch_preemptions
    from .render import render_batch_preemptions

    with solver_status(err) as update:
        result = solve_optimal(state, config, OptimalOptions(time_limit=time_limit, workers=workers, seed=seed),
                               progress=update)
    plan = batch_preemptions(result)
    render_batch_preemptions(out, plan, result)
    if result.violations:
        raise typer.Exit(1)
    return batch_eviction_objects(plan)


@app.command()
def generate(
    output: Annotated[Path, typer.Argument(help="Output file (.yaml or .json).")],
    nodes: Annotated[int, typer.Option(min=5, max=10_000)] = 20,
    pods: Annotated[int | None, typer.Option(help="Total pods (default 10 per node).")] = None,
    pending_fraction: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5,
    load: Annotated[float, typer.Option(min=0.01, help="Total cpu requested / allocatable (1.2 = overloaded).")] = 0.8,
    zones: Annotated[int, typer.Option(min=1)] = 3,
    gpu_fraction: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.1,
    seed: Annotated[int, typer.Option()] = 0,
    volumes: Annotated[bool, typer.Option(help="Give StatefulSets claims on zonal and local PVs "
                                               "(WaitForFirstConsumer classes, CSINode limits).")] = False,
    csi_limit: Annotated[int, typer.Option(min=0, help="With --volumes: CSI volumes each node attaches.")] = 25,
) -> None:
    """Write a seeded synthetic cluster (same seed, same bytes)."""
    from .datasets.generate import GenerateSpec, dump
    from .datasets.generate import generate as gen
    from .datasets.storage import VolumeSpec, add_volumes

    spec = GenerateSpec(nodes=nodes, pods=pods, pending_fraction=pending_fraction, load=load, zones=zones,
                        gpu_fraction=gpu_fraction, seed=seed)
    objs = gen(spec)
    if volumes:
        objs = add_volumes(objs, VolumeSpec(csi_limit=csi_limit), seed)
    fmt = "json" if output.suffix == ".json" else "yaml"
    with open(output, "w", encoding="utf-8") as f:
        dump(objs, f, fmt)
    err.print(f"wrote {len(objs)} objects to {output}")


def main() -> None:
    """Entry point: user errors print one line and exit 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except InputError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as e:
        code = getattr(e, "exit_code", getattr(e, "code", 0))
        sys.exit(code or 0)
    except typer.Abort:
        sys.exit(130)
    except Exception as e:  # click usage errors
        import click

        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise


if __name__ == "__main__":
    main()
