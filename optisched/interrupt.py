"""Ctrl-C and SIGTERM as a request to stop: a long run ends early and prints the best answer it has.

The first Ctrl-C (SIGINT) or SIGTERM (what ``kubectl delete``, systemd and CI send) during a run that
honours it (:func:`catching`: optimal mode, greedy mode, preemption, compare, reschedule) sets
:func:`requested`: every active CP-SAT solve is stopped (``StopSearch``), every clock reads as past its
deadline (:meth:`optisched.optimal.clock.Clock.past`), the greedy queue stops between two cycles, and the
command prints what it has, marked interrupted, and exits :func:`exit_status`: 130 after SIGINT, 143
after SIGTERM (128 + the signal's number, as a shell reports a process the signal ended). A second
signal of either kind exits at once, with that signal's status.

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

__all__ = ["SIGNALS", "catching", "cause", "exit_status", "follow", "request", "requested", "reset",
           "stoppable", "temporary"]

EXIT_INTERRUPTED = 130
SIGNALS = (signal.SIGINT, signal.SIGTERM)  # the signals that ask a run to stop
_DEFAULT: dict[int, Callable[[int, Any], Any] | int] = {signal.SIGINT: signal.default_int_handler,
                                                        signal.SIGTERM: signal.SIG_DFL}
_TICK = 0.05  # seconds between two stops of the active solvers once requested (one may be starting)

_requested = threading.Event()
_signal: list[int] = []  # the signal that requested the stop (one at most)
_lock = threading.Lock()
_active: set[Callable[[], Any]] = set()  # how to stop each solver running now
_temporary: set[Path] = set()  # files being written: removed on a hard exit
_following = threading.Event()  # a worker process: its parent catches the signals (:func:`follow`)


def requested() -> bool:
    """Whether Ctrl-C or SIGTERM asked the run to stop."""
    return _requested.is_set()


def exit_status() -> int:
    """The exit status of a stopped run: 128 + the number of the signal that stopped it (130 for SIGINT,
    143 for SIGTERM); 130 when the stop was requested otherwise (:func:`request`)."""
    return 128 + (_signal[0] if _signal else signal.SIGINT)


def cause() -> str:
    """How the user asked the run to stop, for the lines that say so: ``Ctrl-C`` or ``SIGTERM``."""
    return "SIGTERM" if _signal and _signal[0] == signal.SIGTERM else "Ctrl-C"


def request(signum: int = signal.SIGINT) -> None:
    """Ask the run to stop as signal ``signum`` would (the first one; later ones do not change the cause):
    for a process that learns of the signal otherwise, e.g. a worker its parent tells."""
    with _lock:
        if not _signal:
            _signal.append(int(signum))
    _requested.set()


def reset() -> None:
    """Forget a request (a new run starts), and give the signals back to Python if a stopped run left them
    to :func:`_hard_exit`."""
    _requested.clear()
    _signal.clear()
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        if signal.getsignal(signum) is _press_again:
            signal.signal(signum, _DEFAULT[signum])


def _press_again(signum: int, frame: Any) -> None:
    """Ctrl-C or SIGTERM after a stopped run's block ended, while it prints its answer: the second signal."""
    _hard_exit(signum)


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


def _hard_exit(signum: int = signal.SIGINT, quiet: bool = False) -> None:
    """The second signal: remove half-written files, show the cursor again, exit at once with 128 + its
    number; ``quiet``: without a word (a worker whose parent has ended and said so)."""
    with _lock:
        for path in _temporary:
            with suppress(OSError):
                path.unlink()
    if not quiet:
        with suppress(OSError):
            os.write(2, (b"\x1b[?25h" if sys.stderr.isatty() else b"") + b"\ninterrupted\n")
    os._exit(128 + int(signum))


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
            if not data:  # (only a worker's pipe closes: its parent has ended, at once)
                _hard_exit(signal.SIGTERM, quiet=True)
            for signum in data:
                if signum not in SIGNALS:
                    continue
                if _requested.is_set():
                    _hard_exit(signum)
                request(signum)
        if _requested.is_set():
            _stop_all()


def follow(fd: int) -> None:
    """In a worker process whose parent catches the signals (:mod:`optisched.worker`): each signal number
    the parent writes to ``fd`` counts as that signal did here (the first requests a stop, a second one
    exits at once), and ``fd`` closing (the parent has ended) exits at once. :func:`catching` then changes
    nothing for the rest of the process."""
    _following.set()
    threading.Thread(target=_watch, args=(fd, threading.Event()), name="optisched-follow", daemon=True).start()


@contextmanager
def catching() -> Iterator[None]:
    """While the block runs, Ctrl-C or SIGTERM requests a stop (see the module docstring) instead of raising
    KeyboardInterrupt or ending the process. Outside the main thread nothing changes (signals reach the
    main thread only), nor in a worker, whose parent catches them (:func:`follow`)."""
    if threading.current_thread() is not threading.main_thread() or _following.is_set():
        yield
        return
    reset()
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    os.set_blocking(rfd, False)
    # the watcher counts the signals (the wakeup byte comes whether or not this handler has run yet)
    old_handlers = {signum: signal.signal(signum, lambda signum, frame: None) for signum in SIGNALS}
    old_fd = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(rfd, done), name="optisched-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        # once stopped, the command prints what it has and exits: a signal meanwhile is the second one
        for signum, old in old_handlers.items():
            signal.signal(signum, _press_again if _requested.is_set() else old)
        done.set()
        watcher.join()
        os.close(rfd)
        os.close(wfd)
