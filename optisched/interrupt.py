"""Ctrl-C as a request to stop: a long run ends early and prints the best answer it has.

The first Ctrl-C (SIGINT) during a run that honours it (:func:`catching`: optimal mode, greedy mode,
preemption, compare, reschedule) sets :func:`requested`: every active CP-SAT solve is stopped
(``StopSearch``), every clock reads as past its deadline (:meth:`optisched.optimal.clock.Clock.past`),
the greedy queue stops between two cycles, and the command prints what it has, marked interrupted, and
exits 130. A second Ctrl-C exits at once with 130, as a Python program does.

CP-SAT's solve runs in C++ with the GIL released, and Python runs a signal handler only in the main
thread between two bytecodes, that is after the solve returns. So the C-level handler writes to a pipe
(``signal.set_wakeup_fd``) and a thread reading it stops the solvers while they run; CP-SAT's own
SIGINT handler (``catch_sigint_signal``, which ends only the current solve) is turned off in every solve
(:func:`optisched.cpsat.solve`).
"""
from __future__ import annotations

import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

__all__ = ["catching", "requested", "reset", "stoppable", "temporary"]

EXIT_INTERRUPTED = 130
_TICK = 0.05  # seconds between two stops of the active solvers once requested (one may be starting)

_requested = threading.Event()
_lock = threading.Lock()
_active: set[Callable[[], Any]] = set()  # how to stop each solver running now
_temporary: set[Path] = set()  # files being written: removed on a hard exit


def requested() -> bool:
    """Whether Ctrl-C asked the run to stop."""
    return _requested.is_set()


def reset() -> None:
    """Forget a request (a new run starts), and give Ctrl-C back to Python if a stopped run left it to
    :func:`_hard_exit`."""
    _requested.clear()
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _press_again:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _press_again(signum: int, frame: Any) -> None:
    """Ctrl-C after a stopped run's block ended, while it prints its answer: the second press."""
    _hard_exit()


@contextmanager
def stoppable(stop: Callable[[], Any]) -> Iterator[None]:
    """While the block runs a solver, Ctrl-C calls ``stop`` (CP-SAT's ``stop_search``, GLOP's
    ``InterruptSolve``; both solvers release the GIL while they run, so the call lands during the solve)."""
    with _lock:
        _active.add(stop)
    try:
        yield
    finally:
        with _lock:
            _active.discard(stop)


@contextmanager
def temporary(path: Path) -> Iterator[Path]:
    """``path`` is a file being written; a hard exit (the second Ctrl-C) removes it."""
    with _lock:
        _temporary.add(path)
    try:
        yield path
    finally:
        with _lock:
            _temporary.discard(path)


def _stop_all() -> None:
    with _lock:
        stops = list(_active)
    for stop in stops:
        stop()


def _hard_exit() -> None:
    """The second Ctrl-C: remove half-written files, show the cursor again, exit 130 at once."""
    with _lock:
        for path in _temporary:
            with suppress(OSError):
                path.unlink()
    with suppress(OSError):
        os.write(2, (b"\x1b[?25h" if sys.stderr.isatty() else b"") + b"\ninterrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _watch(fd: int, done: threading.Event) -> None:
    """Read the signals the C-level handler writes to ``fd``; once a stop is requested, stop the active
    solvers every :data:`_TICK` (a solve starting just then is stopped at the next tick)."""
    while not done.is_set():
        ready, _, _ = select.select([fd], [], [], _TICK if _requested.is_set() else 0.5)
        if ready:
            try:
                data = os.read(fd, 64)
            except BlockingIOError:
                data = b"1"
            for signum in data:
                if signum != signal.SIGINT:
                    continue
                if _requested.is_set():
                    _hard_exit()
                _requested.set()
        if _requested.is_set():
            _stop_all()


@contextmanager
def catching() -> Iterator[None]:
    """While the block runs, Ctrl-C requests a stop (see the module docstring) instead of raising
    KeyboardInterrupt. Outside the main thread nothing changes (signals reach the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reset()
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    os.set_blocking(rfd, False)
    # the watcher counts the presses (the wakeup byte comes whether or not this handler has run yet)
    old_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)
    old_fd = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(rfd, done), name="optisched-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        # once stopped, the command prints what it has and exits 130: a press meanwhile is the second one
        signal.signal(signal.SIGINT, _press_again if _requested.is_set() else old_handler)
        done.set()
        watcher.join()
        os.close(rfd)
        os.close(wfd)
