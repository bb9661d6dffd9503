"""``optisched what-if``: a NoExecute taint on nodes, or nodes and zones failing: which pods go, when, where."""
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
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Taint-based eviction or node failure: which pods go and when, broken PDBs, where pods land."""
    from ..whatif.render import render_taint
    from ..whatif.taint import parse_taint, run_taint

    names = [n.strip() for n in node.split(",") if n.strip()]
    load = lambda: common.load(cluster, profile, kubeconfig, context, max_input_size,
                               kubernetes_version, feature_gates)
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
