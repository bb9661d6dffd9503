"""Python's cyclic garbage collector, paused while a step builds many small objects.

Its full passes rescan every tracked object: loading a 5,000-node cluster creates hundreds of thousands
of them, and optimal mode's build millions more (variables, terms, snapshots' indexes), each pass
over all of them again (20 of 136 CPU seconds of a 5,000-node optimal run). What a paused step leaves in
reference cycles is collected once the collector is back on.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused(freeze: bool = False) -> Iterator[None]:
    """The collector off inside (unless it was off already); ``freeze``: what exists when the step ends
    lives as long as the run (a loaded cluster), so it is kept out of later collections (``gc.freeze``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if freeze:
                gc.freeze()
            gc.enable()
