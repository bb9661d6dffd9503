"""A long solve in a forked worker process, so that a native crash (OR-Tools' ``abort()``) costs the user the
solve, not the answer.

:func:`guarded` forks; the worker runs the command's work (solve, write, print) and exits with its status.
If the worker is ended by a signal it did not ask for (SIGABRT, SIGSEGV, ...), the parent prints one line
saying so and runs the rescue instead (kube-scheduler's placement: greedy mode, run again in the parent,
each of its pods checked by kube-scheduler's filters as it lands), whose status is 1.

Ctrl-C and SIGTERM reach the parent (a terminal's Ctrl-C reaches both; the worker ignores them): the parent
writes the signal's number to a pipe the worker reads (:func:`optisched.interrupt.follow`), so the worker
stops as the signal would stop it in-process and exits 130 or 143; a second signal ends the parent at once,
and the worker, seeing the pipe close, ends too (removing its half-written files). Linux only (fork); other
systems, and callers that redirected ``sys.stdout`` or ``sys.stderr``, run the work in-process. ``OPTISCHED_TEST_WORKER_ABORT=S`` (tests only) makes the worker call
``os.abort()`` after ``S`` seconds.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from . import interrupt

__all__ = ["ABORT_ENV", "Crash", "forks", "guarded"]

ABORT_ENV = "OPTISCHED_TEST_WORKER_ABORT"


@dataclass(frozen=True)
class Crash:
    """How the worker died: the signal's name (``SIGABRT``) and the seconds it had run."""

    signal: str
    seconds: float

    def line(self, rescue: str) -> str:
        return f"the CP-SAT solver crashed ({self.signal}) after {self.seconds:.1f} s; showing the best answer " \
               f"found before it: {rescue}"


def forks() -> bool:
    """Whether :func:`guarded` runs its work in a worker: on Linux (fork is safe before any thread starts),
    when the output goes to the process's own streams (a caller that replaced ``sys.stdout``, e.g. to
    capture it, would not see what a worker prints)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and sys.stdout is sys.__stdout__ and \
        sys.stderr is sys.__stderr__


def guarded(work: Callable[[], int], rescue: Callable[[Crash], int]) -> int:
    """``work()``'s exit status, run in a forked worker; when the worker dies by a signal, ``rescue(crash)``'s,
    run here. Call it before any thread starts (no progress display, no :func:`interrupt.catching` yet)."""
    if not forks():
        return work()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    rfd, wfd = os.pipe()
    start = time.perf_counter()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, interrupt.SIGNALS)  # none lands between fork and setup
    pid = os.fork()
    if pid == 0:
        os.close(wfd)
        _worker(work, rfd, blocked)
    os.close(rfd)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    status = _wait(pid, wfd)
    if os.WIFSIGNALED(status):
        return rescue(Crash(signal.Signals(os.WTERMSIG(status)).name, time.perf_counter() - start))
    return os.waitstatus_to_exitcode(status)


def _wait(pid: int, wfd: int) -> int:
    """Wait for the worker, passing the first stop on to it."""
    told = threading.Event()

    def tell() -> None:
        if not told.is_set():
            told.set()
            with suppress(OSError):
                os.write(wfd, bytes([interrupt.exit_status() - 128]))

    try:
        with interrupt.catching(), interrupt.stoppable(tell):
            _, status = os.waitpid(pid, 0)
    finally:
        os.close(wfd)
    return status


def _worker(work: Callable[[], int], rfd: int, blocked: set[int]) -> None:
    """The forked worker: Ctrl-C and SIGTERM only through the parent's pipe; exits with ``work()``'s status."""
    code = 1
    try:
        for signum in interrupt.SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        interrupt.follow(rfd)
        _abort_for_tests()
        code = work()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    except BaseException:  # noqa: BLE001 - the work's own error: shown as Python shows it, exit 1
        traceback.print_exc()
    finally:
        with suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _abort_for_tests() -> None:
    after = os.environ.get(ABORT_ENV)
    if after:
        threading.Timer(float(after), os.abort).start()
