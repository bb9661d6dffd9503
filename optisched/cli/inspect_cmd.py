"""``optisched inspect``: what the input holds, summarized (:mod:`optisched.cli.inspect`), or the effective
scheduler configuration the run follows (``--effective-profile``)."""
from __future__ import annotations

from . import common
from .options import (
    ClusterArg,
    ContextOpt,
    EffectiveProfileOpt,
    FeatureGatesOpt,
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ProfileOpt,
    VersionOpt,
)


def inspect(
    cluster: ClusterArg = None,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
    effective_profile: EffectiveProfileOpt = False,
) -> None:
    """Summarize a cluster: nodes, pods, requests vs allocatable, PDBs, the active profile."""
    from .inspect import kubelet_minors, summarize, version_warning
    from .render import render_inspect

    if effective_profile and not (cluster or kubeconfig or context):
        print_effective(common.config_only(profile, kubernetes_version, feature_gates), as_json)
        return
    state, config, _ = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                   kubernetes_version, feature_gates)
    if effective_profile:
        print_effective(config, as_json)
        return
    mismatch = version_warning(kubelet_minors(state), config.kubernetes_version)
    if mismatch:
        common.warn(mismatch)
    summary = summarize(state, config)
    if as_json:
        common.print_json(summary)
    else:
        render_inspect(common.out, summary)


def print_effective(config, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """The effective configuration as YAML (JSON with ``--json``), headed by the release it follows."""
    import sys

    import yaml

    from ..profile.effective import effective_document
    from ..profile.releases import release

    doc = effective_document(config)
    if as_json:
        common.print_json(doc)
        return
    patch = release(config.kubernetes_version).patch
    sys.stdout.write(f"# kube-scheduler {patch}: the effective configuration ({config.source})\n")
    gates = config.feature_gates
    sys.stdout.write(f"# feature gates the scheduler reads: {_gate_list(gates.scheduler_values())}\n")
    if gates.others():
        others = _gate_list(gates.others())
        sys.stdout.write(f"# feature gates set that the scheduler does not read: {others}\n")
    sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


def _gate_list(gates: dict[str, bool]) -> str:
    return ",".join(f"{name}={str(value).lower()}" for name, value in gates.items())
