"""``optisched inspect``: what the input holds, summarized (:mod:`optisched.cli.inspect`)."""
from __future__ import annotations

from . import common
from .options import ClusterArg, ContextOpt, JsonOpt, KubeconfigOpt, MaxInputOpt, ProfileOpt, VersionOpt


def inspect(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
) -> None:
    """Summarize a cluster: nodes, pods, requests vs allocatable, PDBs, the active profile."""
    from .inspect import kubelet_minors, summarize, version_warning
    from .render import render_inspect

    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size, kubernetes_version)
    mismatch = version_warning(kubelet_minors(state), config.kubernetes_version)
    if mismatch:
        common.warn(mismatch)
    summary = summarize(state, config)
    if as_json:
        common.print_json(summary)
    else:
        render_inspect(common.out, summary)
