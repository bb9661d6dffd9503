"""The options several commands take, each defined and checked once.

Aliases (``ClusterArg``, ``ProfileOpt``, ...) are used as they are; an option whose help differs from
command to command is made by a function here (``time_limit_option(help)``), so its name, callback and
message stay the same everywhere. The numeric checks are here, as typer callbacks, against the ranges
:mod:`optisched.options` gives (the engine does not import typer)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InputError
from ..options import INT32, MAX_WORKERS, MIN_SECONDS, check_range

MODES = ("greedy", "optimal")


def _name(param: typer.CallbackParam, default: str) -> str:
    opts = getattr(param, "opts", None)
    return opts[0] if opts else default


def check_seconds(param: typer.CallbackParam, value: float | None) -> float | None:
    """``--time-limit``: finite and at least :data:`optisched.options.MIN_SECONDS` (``0``, ``nan``,
    ``inf`` and negatives are refused)."""
    if value is not None and (not math.isfinite(value) or value < MIN_SECONDS):
        raise InputError(f"{value!r} is not a number of seconds of at least {MIN_SECONDS}",
                         source=_name(param, "--time-limit"))
    return value


def check_int32(param: typer.CallbackParam, value: int | None) -> int | None:
    """An option stored in an int32 field (``--seed``, CP-SAT's ``random_seed``)."""
    return None if value is None else check_range(value, INT32, "int32", _name(param, "--seed"))


def check_workers(param: typer.CallbackParam, value: int | None) -> int | None:
    """``--workers``: CP-SAT's ``num_workers``, from 1 to :data:`optisched.options.MAX_WORKERS`."""
    if value is not None and not 1 <= value <= MAX_WORKERS:
        raise InputError(f"{value} is not a number of workers from 1 to {MAX_WORKERS}",
                         source=_name(param, "--workers"))
    return value


def check_mode(param: typer.CallbackParam, value: str) -> str:
    """``--mode``: one of :data:`MODES`."""
    if value not in MODES:
        raise InputError(f"{value!r} is not one of {', '.join(MODES)}", source="--mode")
    return value


def check_version(param: typer.CallbackParam, value: str | None) -> str | None:
    """``--kubernetes-version``: a minor release optisched reproduces (:mod:`optisched.profile.releases`)."""
    from ..profile.releases import parse_version

    if value is None:
        return None
    try:
        return parse_version(value)
    except ValueError as e:
        raise InputError(str(e), source="--kubernetes-version") from None


def feature_gates(value: str | None) -> dict[str, bool] | None:
    """``--feature-gates`` parsed: kube-scheduler's syntax (``A=true,B=false``); each name is checked
    against the release the run follows when the configuration loads
    (:func:`optisched.profile.gates.resolve_gates`)."""
    from ..profile.gates import parse_feature_gates

    if value is None:
        return None
    try:
        return parse_feature_gates(value)
    except ValueError as e:
        raise InputError(str(e), source="--feature-gates") from None


def check_feature_gates(param: typer.CallbackParam, value: str | None) -> str | None:
    """``--feature-gates``: its syntax, checked before any work (:func:`feature_gates`)."""
    feature_gates(value)
    return value


def mode_option(help: str) -> Any:
    return typer.Option("--mode", callback=check_mode, help=help)


def time_limit_option(help: str) -> Any:
    """``--time-limit``: seconds, finite and at least 0.1 (:func:`check_seconds`)."""
    return typer.Option("--time-limit", callback=check_seconds, help=help)


def seed_option(help: str | None = None) -> Any:
    """``--seed``: within int32, CP-SAT's ``random_seed`` (:func:`check_int32`)."""
    return typer.Option("--seed", callback=check_int32, help=help)


def workers_option(help: str) -> Any:
    return typer.Option("--workers", callback=check_workers, help=help)


ClusterArg = Annotated[list[str] | None, typer.Argument(
    help="Files, folders or - (stdin): YAML/JSON objects or List dumps. Omit with --kubeconfig/--context.")]
ProfileOpt = Annotated[Path | None, typer.Option("--profile", help="KubeSchedulerConfiguration file.")]
KubeconfigOpt = Annotated[str | None, typer.Option(
    "--kubeconfig", help="Read a live cluster (read-only; only reschedule --apply and --undo-cordons write to it).")]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context of the live cluster.")]
EvictOpt = Annotated[str | None, typer.Option("--evict", help="Optimal mode: protected kinds that may leave their node, "
                                              "comma-separated: protected, local-storage, bare-pods, system-critical.")]
MaxInputOpt = Annotated[str, typer.Option("--max-input-size", help="Largest input file read, e.g. 1Gi.")]
VersionOpt = Annotated[str | None, typer.Option(
    "--kubernetes-version", callback=check_version,
    help="The kube-scheduler release whose rules to follow: 1.35, 1.36 or 1.37 (1.37 from its release notes, "
         "not verified; default 1.35; docs/fidelity.md).")]
FeatureGatesOpt = Annotated[str | None, typer.Option(
    "--feature-gates", callback=check_feature_gates,
    help="Feature gates as kube-scheduler's flag takes them, e.g. "
         "NodeDeclaredFeatures=true,DRAPrioritizedList=false (default: the release's; docs/fidelity.md lists "
         "the ones optisched follows).")]
EffectiveProfileOpt = Annotated[bool, typer.Option(
    "--effective-profile",
    help="Print the effective KubeSchedulerConfiguration of the release the run follows (every default "
         "applied, plugins per extension point with weights, each plugin's args) as YAML instead of the "
         "summary; CLUSTER is optional.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the summary as JSON (the table's numbers, in "
                                                     "scheduler units: millicores, bytes).")]
ObjectiveOpt = Annotated[str | None, typer.Option(
    "--objective", help="Optimal mode: pack | spread | balance, solved before the profile's score.")]
WeightsOpt = Annotated[str | None, typer.Option("--weights", help="Optimal mode: one weighted objective instead of "
                                                "the tiers, e.g. placed=1000,disruption=1,score=1.")]
NondeterministicOpt = Annotated[bool, typer.Option(
    "--nondeterministic", help="Optimal mode: budgets by the wall clock (uses the whole limit on a loaded machine; "
    "two runs may differ). Default: deterministic budgets, the same answer every run.")]
StopAfterOpt = Annotated[str | None, typer.Option(
    "--stop-after", help="Optimal mode: 'placed' ends after the placement tiers (no disruption, objective, score).")]
