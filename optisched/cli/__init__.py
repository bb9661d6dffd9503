"""The ``optisched`` command line: parse, load, call the public API, render. Each command is a module of
this package (``schedule.py``, ``compare.py``, ...); the options they share are defined and checked once in
:mod:`.options`, the consoles, loading and exits are :mod:`.common`'s."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from ..errors import InputError
from ..version import KUBE_VERSION, __version__
from . import common, compare, explain, generate, inspect_cmd, preempt, reschedule, schedule, snapshot
from .common import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE
from .options import (
    ClusterArg,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ProfileOpt,
    time_limit_option,
)

EXPERIMENT_CONTEXT = {"help_option_names": ["-h", "--help"]}


def experiment(
    target: Annotated[str, typer.Argument(help="SPEC.yaml, 'fgd' (part of the FGD grid) or 'plot'.")],
    results: Annotated[Path | None, typer.Argument(help="plot: the RESULTS.parquet to draw.")] = None,
    workloads: Annotated[str | None, typer.Option(help="fgd: comma-separated pod lists (default: the paper's 17).")] = None,
    policies: Annotated[str | None, typer.Option(help="fgd: comma-separated policies (default: the paper's 6).")] = None,
    seeds: Annotated[str, typer.Option(help="fgd: seeds, e.g. 42-51 or 42,45.")] = "42-51",
    data: Annotated[Path | None, typer.Option(help="fgd: the openb trace folder with csv/ (default: $OPENB_DIR).")] = None,
    ties: Annotated[str, typer.Option(
        help="fgd: equal scores go to a per-run node order | random | first; simulator: the authors' draws.")] = "order",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Parquet results (plot: figure folder).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(help="ray: address of a running cluster.")] = None,
    jobs: Annotated[int | None, typer.Option(help="local: worker processes (default: one per core); "
                                              "optimum: solver threads (default 4).")] = None,
    points: Annotated[str, typer.Option(help="optimum: arrived-workload points, % of GPU capacity.")] = "100",
    time_limit: Annotated[float, time_limit_option("optimum: solver seconds per point.")] = 300.0,
) -> None:
    """Seeded sweeps of the FGD paper's protocol on the openb trace, and its offline optimum ('optimum')
    (see docs/experiments.md)."""
    from ..experiments.fgd_report import plot_results
    from ..experiments.sweep import FGD_POLICIES, FGD_WORKLOADS, SweepSpec, load_spec, parse_seeds, run_sweep

    if target == "plot":
        if results is None:
            raise InputError("experiment plot needs RESULTS.parquet")
        for path in plot_results(results, output):
            common.err.print(f"wrote {path}")
        return
    if target == "optimum":
        _experiment_optimum(data, workloads, seeds, points, time_limit, jobs, output)
        return
    if executor not in ("local", "ray"):
        raise InputError(f"--executor must be local or ray, not {executor!r}")
    if target == "fgd":
        folder = str(Path(_openb(data, "experiment fgd")))
        spec = SweepSpec(folder, tuple(workloads.split(",")) if workloads else FGD_WORKLOADS,
                         tuple(policies.split(",")) if policies else FGD_POLICIES, tuple(parse_seeds(seeds)),
                         ties=ties, name="fgd-cli")
        spec.check("--data/--workloads/--policies")
        out_path = output or Path("fgd_results.parquet")
    else:
        spec = load_spec(target)
        out_path = output or Path(target).with_suffix(".parquet")
    inputs = {Path(spec.data).resolve(), Path(target).resolve()}
    if out_path.resolve() in inputs or Path(spec.data).resolve() in out_path.resolve().parents:
        raise InputError(f"{out_path}: the output must not be an input or lie inside the data folder")
    from .progress import progress_bar

    with progress_bar(common.err, "experiment", len(spec.cells()), unit="cells", every=1) as advance:
        df = run_sweep(spec, out_path, executor, jobs, address, progress=advance)
    common.err.print(f"wrote {len(df)} rows ({len(spec.cells())} cells) to {out_path}")


def _openb(data: Path | None, what: str) -> str:
    """The openb folder: ``--data``, else ``$OPENB_DIR``."""
    import os

    folder = str(data or os.environ.get("OPENB_DIR", ""))
    if not folder:
        raise InputError(f"{what} needs --data DIR or OPENB_DIR (the openb folder with csv/)")
    return folder


def _experiment_optimum(data: Path | None, workloads: str | None, seeds: str, points: str, time_limit: float,
                        jobs: int | None, output: Path | None) -> None:
    """``experiment optimum``: the offline optimum beside FGD at the given arrived points (one Parquet row each)."""
    from ..experiments.fgd_optimum import OPTIMUM_WORKLOADS, run_optimum
    from ..experiments.sweep import SweepSpec, parse_seeds

    folder = _openb(data, "experiment optimum")
    names = tuple(workloads.split(",")) if workloads else OPTIMUM_WORKLOADS
    spec = SweepSpec(folder, names, ("FGD",), tuple(parse_seeds(seeds)))
    spec.check("--data/--workloads")
    try:
        at = [float(p) for p in points.split(",")]
    except ValueError:
        at = []
    if not at or not all(0 < p <= 1000 for p in at):
        raise InputError(f"{points!r} is not a list of percentages like 90,100", source="--points")
    out_path = output or Path("optimum.parquet")
    if Path(folder).resolve() in out_path.resolve().parents:
        raise InputError(f"{out_path}: the output must not lie inside the data folder")
    from .progress import progress_bar

    total = len(names) * len(spec.seeds) * len(at)
    with progress_bar(common.err, "optimum", total, unit="points", every=1) as advance:
        done = iter(range(1, total + 1))
        df = run_optimum(folder, names, spec.seeds, at, time_limit, jobs or 4,
                         progress=lambda: advance(next(done), total))
    df.to_parquet(out_path, index=False)
    common.err.print(f"wrote {len(df)} rows to {out_path}")


def deschedule(
    cluster: ClusterArg = None,
    policy: Annotated[Path, typer.Option("--policy", help="DeschedulerPolicy file (descheduler/v1alpha2).")] = Path(),
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
) -> None:
    """Run the descheduler's strategies once, replay kube-scheduler on the replacements, count a second cycle."""
    from ..descheduler import load_policy, run_descheduler
    from ..descheduler.render import render_outcome

    if policy == Path():
        raise InputError("--policy: give a DeschedulerPolicy file")
    pol = load_policy(policy)
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size)
    outcome = run_descheduler(state, config, pol)
    if as_json:
        common.print_json(outcome.to_dict())
    else:
        render_outcome(common.out, outcome)


def pressure(
    cluster: ClusterArg = None,
    usage: Annotated[Path | None, typer.Option("--usage", help="Pods' usage: `kubectl top pods -A` output or a CSV "
                                               "(namespace,name,cpu,memory,ephemeral-storage); default: the "
                                               "optisched.io/usage-* annotations.")] = None,
    kubelet_config: Annotated[Path | None, typer.Option("--kubelet-config", help="KubeletConfiguration, or a file of "
                                                        "--eviction-hard/-soft/-minimum-reclaim flags; default: the "
                                                        "kubelet's default thresholds.")] = None,
    node: Annotated[str | None, typer.Option("--node", help="Only these nodes (comma-separated).")] = None,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
) -> None:
    """Which pods the kubelet evicts from nodes under memory or disk pressure, and where they land."""
    from ..whatif import (
        load_kubelet_config,
        load_usage,
        parse_thresholds,
        run_pressure,
        usage_from_annotations,
    )
    from ..whatif.render import render_pressure

    th = load_kubelet_config(kubelet_config) if kubelet_config else \
        parse_thresholds({"kind": "KubeletConfiguration"}, "<defaults>")
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size)
    use = load_usage(usage, state) if usage else usage_from_annotations(state)
    only = [n.strip() for n in node.split(",") if n.strip()] if node else None
    outcome = run_pressure(state, config, use, th, only)
    if as_json:
        common.print_json(outcome.to_dict())
    else:
        render_pressure(common.out, outcome)


def drain(
    cluster: ClusterArg = None,
    node: Annotated[str, typer.Option("--node", help="Nodes to drain together (comma-separated).")] = "",
    pool: Annotated[str, typer.Option("--pool", help="Or every node with this label, LABEL=VALUE (a node "
                                      "pool); the largest set of it that drains is found.")] = "",
    ignore_daemonsets: Annotated[bool, typer.Option("--ignore-daemonsets", help="As kubectl: skip DaemonSet "
                                                    "pods instead of refusing the drain.")] = False,
    delete_emptydir_data: Annotated[bool, typer.Option("--delete-emptydir-data", help="As kubectl: evict pods "
                                                       "with emptyDir storage.")] = False,
    force: Annotated[bool, typer.Option("--force", help="As kubectl: evict pods without a controller.")] = False,
    time_limit: Annotated[float, time_limit_option("Seconds per optimal solve.")] = 10.0,
    output: Annotated[Path | None, typer.Option("--output", help="Write plan.json.")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write report.html and plan.json here.")] = None,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
) -> None:
    """What `kubectl drain` would do: refused pods, eviction waves under PDBs, where the pods land (and
    optisched's best placement), and the largest set of the nodes that drains together."""
    from ..whatif.drain import DrainFlags, pool_nodes, run_drain
    from ..whatif.drainable import annotate
    from ..whatif.render import render_drain

    names = [n.strip() for n in node.split(",") if n.strip()]
    if bool(names) == bool(pool):
        raise InputError("--node: give the nodes to drain (--node worker-1,worker-2) or a --pool LABEL=VALUE")
    if output is not None and output.suffix != ".json":
        raise InputError(f"--output: {output} must end in .json")
    common.check_outputs({"--output": output, "--report": report}, cluster, profile, folders=("--report",))
    if report is not None:
        from ..whatif.drain_report import check_drain_report

        check_drain_report(report)
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size)
    names = names or pool_nodes(state, pool)
    flags = DrainFlags(ignore_daemonsets, delete_emptydir_data, force)
    outcome = run_drain(state, config, names, flags)
    annotate(outcome, state, config, flags, time_limit)
    common.print_json(outcome.to_dict()) if as_json else render_drain(common.out, outcome)
    if output is not None:
        common.write_json(output, outcome.to_dict())
    if report is not None:
        from ..whatif.drain_report import write_drain_report

        common.wrote_folder(write_drain_report(outcome, state, report), report)


def what_if(
    cluster: ClusterArg = None,
    taint: Annotated[str, typer.Option("--taint", help="A NoExecute taint, key[=value]:NoExecute.")] = "",
    node: Annotated[str, typer.Option("--node", help="Nodes that get the taint, or fail with --fail "
                                      "(comma-separated).")] = "",
    fail: Annotated[bool, typer.Option("--fail", help="The --node nodes fail (unreachable).")] = False,
    fail_zone: Annotated[str, typer.Option("--fail-zone", help="Every node of this zone fails.")] = "",
    zone_key: Annotated[str, typer.Option("--zone-key", help="The label naming a node's zone.")] =
    "topology.kubernetes.io/zone",
    optimal: Annotated[bool, typer.Option("--optimal", help="Also optimal mode's best re-placement.")] = False,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
) -> None:
    """Taint-based eviction or node failure: which pods go and when, broken PDBs, where pods land."""
    from ..whatif.render import render_taint
    from ..whatif.taint import parse_taint, run_taint

    names = [n.strip() for n in node.split(",") if n.strip()]
    load = lambda: common.load(cluster, profile, kubeconfig, context, max_input_size)
    if fail or fail_zone:
        return _what_if_failure(load, names, fail_zone, zone_key, optimal, as_json)
    if not taint:
        raise InputError("give --taint KEY[=VALUE]:NoExecute --node N, --fail --node N, or --fail-zone ZONE")
    t = parse_taint(taint)
    if not names:
        raise InputError("--node: give the nodes that get the taint")
    state, config, _ = load()
    outcome = run_taint(state, config, names, t, optimal)
    if as_json:
        common.print_json(outcome.to_dict())
    else:
        render_taint(common.out, outcome)


def _what_if_failure(load, names: list[str], zone: str, zone_key: str, optimal: bool,  # type: ignore[no-untyped-def]
                     as_json: bool) -> None:
    from ..whatif.failure import run_failure, zone_nodes
    from ..whatif.render import render_failure

    if bool(zone) == bool(names):
        raise InputError("give either --fail-zone ZONE or --fail --node N[,N...]")
    state, config, _ = load()
    outcome = run_failure(state, config, zone_nodes(state, zone, zone_key) if zone else names, optimal)
    common.print_json(outcome.to_dict()) if as_json else render_failure(common.out, outcome)


EXIT_HELP = ("Exit status: 0 done; 1 a check failed (an answer failed the independent re-check by the greedy "
             "filters, --fail-on-pending and pods stayed pending, or --fail-on-unreached and a reschedule plan "
             "does not reach its target), or the solver crashed (the best answer found before it is shown); "
             "2 bad input or usage; 130 interrupted (Ctrl-C: schedule, compare, preempt and reschedule stop and "
             "print the best answer so far, marked interrupted; a second Ctrl-C exits at once); 143 the same "
             "after SIGTERM.")

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, epilog=EXIT_HELP,
                  help="Placement optimizer for Kubernetes: reproduce kube-scheduler cycle by cycle, then beat it.")
app.command()(schedule.schedule)
app.command()(compare.compare)
app.command()(inspect_cmd.inspect)
app.command()(explain.explain)
app.command()(preempt.preempt)
app.command()(reschedule.reschedule)
app.command()(snapshot.snapshot)
app.command()(generate.generate)
app.command(context_settings=EXPERIMENT_CONTEXT)(experiment)
app.command()(deschedule)
app.command()(pressure)
app.command()(drain)
app.command("what-if")(what_if)


def _version(value: bool) -> None:
    if value:
        common.out.print(f"optisched {__version__} (kube-scheduler {KUBE_VERSION})", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Placement optimizer for Kubernetes: reproduce kube-scheduler cycle by cycle, then beat it."""


def main() -> None:
    """Entry point: usage and input errors print one line and exit 2, never a traceback; exit statuses are
    those of :data:`EXIT_HELP`."""
    try:
        code = app(standalone_mode=False)  # a command's typer.Exit(n), Ctrl-C as 130, come back as the value
    except InputError as e:
        common.fail(str(e))
    except (typer.Exit, SystemExit) as e:
        code = getattr(e, "exit_code", getattr(e, "code", 0))
        if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
            _exit_interrupted(code)
        sys.exit(code or 0)
    except (typer.Abort, KeyboardInterrupt):
        _exit_interrupted()
    except typer.TyperException as e:  # the parser's usage errors (typer >= 0.26 vendors click)
        if type(e).__name__ == "NoArgsIsHelpError":  # no command: the help (printed as it was built), as kubectl
            sys.stdout.write(e.format_message())
            sys.exit(EXIT_OK)
        common.fail(e.format_message(), getattr(e, "exit_code", EXIT_USAGE))
    code = code if isinstance(code, int) else EXIT_OK
    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        _exit_interrupted(code)
    sys.exit(code)


def _exit_interrupted(code: int = EXIT_INTERRUPTED) -> NoReturn:
    """Exit 130 (Ctrl-C) or 143 (SIGTERM). A further signal is ignored from here: Python's shutdown gives
    SIGINT back to the system default, so a press landing during it would end the process by the signal
    instead of with the status."""
    import signal

    common.err.print("interrupted" if code == EXIT_INTERRUPTED else "interrupted (SIGTERM)", highlight=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)
