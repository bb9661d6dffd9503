"""``optisched explain``: one pending pod's scheduling cycles in greedy mode, node by node."""
from __future__ import annotations

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
)


def explain(
    cluster: ClusterArg = None,
    pod: Annotated[str, typer.Option("--pod", help="namespace/name of a pending pod.")] = "",
    profile: ProfileOpt = None,
    no_requeue: Annotated[bool, typer.Option("--no-requeue")] = False,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Show one pod's scheduling cycles: every node, the plugin that rejected it and why, or its scores; a
    preemptor's attempt that evicted victims, then the attempt that placed it."""
    from ..greedy.explain import explain_pod
    from ..greedy.scheduler import GreedyOptions, GreedyScheduler
    from .progress import progress_bar
    from .render import render_explain

    if not pod:
        raise InputError("--pod namespace/name is required")
    state, config, warnings = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                          kubernetes_version, feature_gates)
    row = common.pending_row(state, pod)
    with progress_bar(common.err, "greedy mode", len(state.pending)) as advance:
        result = GreedyScheduler(state, config, GreedyOptions(requeue=not no_requeue)).run(progress=advance)
    if not any(c.pod == row for c in result.cycles):
        raise InputError(f"pod {state.pods[row].key!r} was not scheduled by any profile ({result.skipped.get(row, '')})")
    ex = explain_pod(result, row)
    if as_json:
        common.print_json({**ex, "warnings": warnings})
    else:
        render_explain(common.out, ex)
