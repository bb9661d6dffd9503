"""Progress of long runs on stderr: a live bar or solver line on a terminal, else a plain line every few
seconds (a log file or a CI job otherwise sees nothing for minutes).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

__all__ = ["PLAIN_EVERY", "progress_bar", "solver_status"]

PLAIN_EVERY = 5.0  # seconds between two plain progress lines


class _PlainTicker:
    """Prints ``label: <latest status>, N s`` every ``PLAIN_EVERY`` seconds from a daemon thread, whether or
    not the run reported anything new (a solver can search a long time between two solutions)."""

    def __init__(self, console: Console, label: str) -> None:
        self.console, self.label = console, label
        self.status: str | None = None  # None: nothing to say (not started, or finished)
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(PLAIN_EVERY):
            if self.status is None:
                continue
            elapsed = time.monotonic() - self.start
            self.console.print(Text(f"{self.label}: {self.status}, {elapsed:.0f} s"), highlight=False,
                               soft_wrap=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def progress_bar(console: Console, label: str, total: int, unit: str = "pods",
                 every: int = 50) -> Iterator[Callable[[int, int], None]]:
    """Yields ``advance(done, total)``: a bar on a terminal (redrawn every ``every`` items), else a plain
    line every few seconds counting ``unit``."""
    if not console.is_terminal:
        with _PlainTicker(console, label) as ticker:
            ticker.status = f"0/{total} {unit}"

            def plain(done: int, of: int) -> None:
                ticker.status = f"{done}/{of} {unit}" if done < of else None

            yield plain
        return
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True) as prog:
        task = prog.add_task(label, total=total)
        last = [0]

        def advance(done: int, of: int) -> None:
            if done - last[0] >= every or done == of:
                prog.update(task, completed=done, total=max(of, done))
                last[0] = done

        yield advance


def _solver_text(name: str, incumbent: float | None, bound: float | None) -> str:
    """The tier (``solving NAME`` before its first solution), then incumbent and bound in the tier's unit,
    and the gap where the bound means something (as the certificate shows it)."""
    from ..optimal.tier_key import TierKey
    from ..optimal.tiers import relative_gap, tier_unit  # (CP-SAT is loaded only when optimal mode runs)

    if incumbent is None or bound is None:
        return name
    key = TierKey.parse(name)  # (the progress line carries the tier's name)
    scale = tier_unit(key)[1]
    gap = relative_gap(incumbent, bound)
    shown = f"gap {100 * gap:.2f}%" if gap < 1.0 or key.is_level else "no useful bound"
    return f"{name}: incumbent {incumbent / scale:,.0f}, bound {bound / scale:,.0f}, {shown}"


@contextmanager
def solver_status(console: Console) -> Iterator[Callable[[str, float | None, float | None, float], None]]:
    """While optimal mode runs: phase or tier, incumbent, bound, gap, elapsed; a live line on a terminal,
    else a plain line every few seconds."""
    if not console.is_terminal:
        with _PlainTicker(console, "optimal mode") as ticker:
            def plain(name: str, incumbent: float | None, bound: float | None, elapsed: float) -> None:
                ticker.status = _solver_text(name, incumbent, bound)

            yield plain
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(), console=console,
                  transient=True) as prog:
        task = prog.add_task("starting", total=None)

        def update(name: str, incumbent: float | None, bound: float | None, elapsed: float) -> None:
            prog.update(task, description=_solver_text(name, incumbent, bound))

        yield update
