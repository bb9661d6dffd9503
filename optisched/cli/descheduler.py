"""``optisched deschedule`` and ``optisched pressure``: what the descheduler's strategies and the kubelet's
node-pressure eviction take off nodes, and where kube-scheduler puts it back."""
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
)


def deschedule(
    cluster: ClusterArg = None,
    policy: Annotated[Path, typer.Option("--policy", help="DeschedulerPolicy file (descheduler/v1alpha2).")] = Path(),
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Run the descheduler's strategies once, replay kube-scheduler on the replacements, count a second cycle."""
    from ..descheduler import load_policy, run_descheduler
    from ..descheduler.render import render_outcome

    if policy == Path():
        raise InputError("--policy: give a DeschedulerPolicy file")
    pol = load_policy(policy)
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                   kubernetes_version, feature_gates)
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
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
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
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                   kubernetes_version, feature_gates)
    use = load_usage(usage, state) if usage else usage_from_annotations(state)
    only = [n.strip() for n in node.split(",") if n.strip()] if node else None
    outcome = run_pressure(state, config, use, th, only)
    if as_json:
        common.print_json(outcome.to_dict())
    else:
        render_pressure(common.out, outcome)
