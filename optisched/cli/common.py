"""What every command shares: the consoles, the exit statuses, loading the input, writing outputs, exiting.

``out`` (stdout) and ``err`` (stderr) are the one pair of consoles; commands reach them as ``common.out``
and ``common.err`` so that a test can swap them here."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sized
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ..errors import InputError
from ..textsafe import plain, safe, safe_console

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143

out = safe_console()
err = safe_console(stderr=True)


def load(paths: list[str] | None, profile: Path | None, kubeconfig: str | None = None,  # type: ignore[no-untyped-def]
         context: str | None = None, max_input_size: str = "4Gi", kubernetes_version: str | None = None,
         feature_gates: str | None = None):
    """Load, compile and print the input's warnings on stderr (the same lines in every command); the
    configuration follows ``kubernetes_version`` (default :data:`optisched.profile.releases.DEFAULT_VERSION`)
    with ``feature_gates`` (``--feature-gates``)."""
    from ..api import load as load_files
    from ..model.state import compile_cluster
    from ..profile import default_config, for_version, load_config
    from ..profile.releases import chosen_version, notice
    from .input_warnings import input_warnings
    from .options import feature_gates as parse_gates

    if kubeconfig or context:
        if paths:
            raise InputError("give either CLUSTER files or --kubeconfig/--context, not both")
        from ..model.live import load_live

        cluster = load_live(kubeconfig, context)
    elif not paths:
        raise InputError("no input: give CLUSTER files or folders, - for stdin, or --kubeconfig/--context")
    else:
        cluster = load_files(paths, max_input_size=max_input_size)
    version, note = chosen_version(kubernetes_version, cluster.kubernetes_version)
    gates = parse_gates(feature_gates) or {}
    config = load_config(profile, version, gates) if profile else (cluster.config or default_config())
    config = for_version(config, version, gates)
    state = compile_cluster(cluster, config.requests_key)
    unverified = notice(config.kubernetes_version)
    warnings = input_warnings(state, config) + [line for line in (note, unverified) if line]
    for w in warnings:
        warn(w)
    return state, config, warnings


def config_only(profile: Path | None, kubernetes_version: str | None,  # type: ignore[no-untyped-def]
                feature_gates: str | None = None):
    """The configuration a run without input follows: ``profile`` (else the defaults) decoded for
    ``kubernetes_version`` (else :data:`optisched.profile.releases.DEFAULT_VERSION`) and ``feature_gates``."""
    from ..profile import default_config, load_config
    from ..profile.releases import chosen_version, notice
    from .options import feature_gates as parse_gates

    version = chosen_version(kubernetes_version, None)[0]
    if (unverified := notice(version)) is not None:
        warn(unverified)
    gates = parse_gates(feature_gates)
    return load_config(profile, version, gates) if profile else default_config(version, gates)


def warn(line: str) -> None:
    """One ``warning:`` line on stderr."""
    err.print(Text.assemble(("warning: ", "yellow"), plain(line)), highlight=False, soft_wrap=True)


def print_json(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")


def print_lines(lines: list[str]) -> None:
    """A plan's or an action's text lines on stdout, as they are (no markup, no wrapping)."""
    for line in lines:
        out.print(Text(line), highlight=False, soft_wrap=True)


def write_json(path: Path, doc: dict) -> None:
    from ..outputs import write_text

    write_text(path, json.dumps(doc, indent=1) + "\n")


def write_placements(path: Path, mode: str, state, node_of, not_handled: dict,  # type: ignore[no-untyped-def]
                     extra: dict, not_attempted: list[int] | tuple[()] = ()) -> None:
    """``--output``: FILE.csv (pod,node,status) or JSON; the shapes are in docs/cli.md; ``-``: stdout."""
    from ..outputs import write_text
    from .summaries import placements_text

    write_text(path, placements_text("csv" if path.suffix == ".csv" else "json", mode, state, node_of, not_handled,
                                     extra, not_attempted))


def wrote_folder(written: Sized, folder: Path) -> None:
    """The one line a ``--report`` folder gets on stderr once it is written."""
    err.print(f"wrote {len(written)} files to {safe(folder)}/ (open {safe(folder)}/report.html)")


def stop_if_interrupted() -> None:
    """After an interrupted run printed its answer: exit 130 after Ctrl-C, 143 after SIGTERM (docs/cli.md)."""
    from .. import interrupt

    if interrupt.requested():
        raise typer.Exit(interrupt.exit_status())


def check_outputs(outputs: dict[str, Path | None], *inputs: list[str] | tuple[str, ...] | Path | None,
                  folders: tuple[str, ...] = ()) -> None:
    """Refuse unwritable output paths, and outputs that are (or lie inside) inputs, before any work."""
    from ..outputs import check_outputs as check
    from ..outputs import input_paths

    check(outputs, input_paths(*inputs), folders=folders)


def solver_choices(objective: str | None, weights: str | None, evict: str | None):  # type: ignore[no-untyped-def]
    """``--objective``, ``--weights`` and ``--evict`` checked and parsed: (weights, eviction policy)."""
    from ..optimal.options import parse_weights
    from ..optimal.user_objectives import check_objective
    from ..policy.eviction import EvictionPolicy

    check_objective(objective)
    return parse_weights(weights), EvictionPolicy.parse(evict)


def pending_row(state, pod: str) -> int:  # type: ignore[no-untyped-def]
    """The row of pending pod ``pod`` (``ns/name``, or ``name`` in ``default``)."""
    key = pod if "/" in pod else f"default/{pod}"
    if key not in state.pod_index:
        raise InputError(f"no pod {key!r} in the input", obj=f"Pod/{key}")
    row = state.pod_index[key]
    if state.pod_node[row] >= 0:
        raise InputError(f"pod {key!r} is already bound to {state.pods[row].spec.node_name}", obj=f"Pod/{key}")
    return row


def guarded(work: Callable[[], Any], rescue: Callable[[Any], Any]) -> None:
    """``work()`` in a worker process (:mod:`optisched.worker`): when the worker crashes, ``rescue(crash)``
    here, and exit 1; else exit as the work did."""
    from ..worker import guarded as in_worker

    def status(fn) -> int:  # type: ignore[no-untyped-def]
        try:
            fn()
        except typer.Exit as e:
            return e.exit_code
        except InputError as e:
            fail(str(e))
        return EXIT_OK

    def rescued(crash) -> int:  # type: ignore[no-untyped-def]
        status(lambda: rescue(crash))
        return EXIT_CHECK_FAILED

    code = in_worker(lambda: status(work), rescued)
    if code:
        raise typer.Exit(code)


def error(message: str) -> None:
    text = Text("error: ", style="bold red")
    text.append(" ".join(plain(message).split()))
    err.print(text, highlight=False, soft_wrap=True)


def fail(message: str, code: int = EXIT_USAGE) -> None:
    error(message)
    sys.exit(code)
