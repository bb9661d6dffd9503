"""``optisched drain``: what `kubectl drain` would do to a set of nodes, and the largest set that drains."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from . import common
from .options import (
    ClusterArg,
    ContextOpt,
    FeatureGatesOpt,
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ProfileOpt,
    VersionOpt,
    time_limit_option,
)


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
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
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
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                   kubernetes_version, feature_gates)
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
