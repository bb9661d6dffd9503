"""The ``optisched`` command line: parse, load, call the public API, render. Each command is a module of
this package (``schedule.py``, ``compare.py``, ...); the options they share are defined and checked once in
:mod:`.options`, the consoles, loading and exits are :mod:`.common`'s."""
from __future__ import annotations

import sys
from typing import Annotated, NoReturn

import typer

from ..errors import InputError
from ..version import KUBE_VERSION, __version__
from . import (
    common,
    compare,
    descheduler,
    drain,
    experiment,
    explain,
    generate,
    inspect_cmd,
    preempt,
    reschedule,
    schedule,
    snapshot,
    what_if,
)
from .common import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE

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
app.command(context_settings=experiment.EXPERIMENT_CONTEXT)(experiment.experiment)
app.command()(descheduler.deschedule)
app.command()(descheduler.pressure)
app.command()(drain.drain)
app.command("what-if")(what_if.what_if)


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
