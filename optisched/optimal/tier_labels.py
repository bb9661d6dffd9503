"""Tiers in a reader's words: ``placed[priority=1000]`` reads "placed at priority 1000", and what a tier
counts goes to a glossary beside the table instead of into every row.

The tier names themselves (``placed[priority=N]``, ``score``, ``disruption``, ``objective:NAME``,
``weighted:NAME``) stay as they are in JSON, where programs read them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from .tiers import tier_unit

__all__ = ["tier_glossary", "tier_label", "tier_term"]

_PLACED = re.compile(r"placed\[priority=(-?\d+)\]")


def tier_label(name: str) -> str:
    """``placed[priority=1000]`` -> ``placed at priority 1000``, ``objective:pack`` -> ``pack objective``,
    ``weighted:NAME`` -> the label of NAME, weighted; other names as they are."""
    if name.startswith("weighted:"):
        return f"{tier_label(name.split(':', 1)[1])}, weighted"
    if (m := _PLACED.fullmatch(name)) is not None:
        return f"placed at priority {m.group(1)}"
    if name.startswith("objective:"):
        return f"{name.split(':', 1)[1]} objective"
    return name


def tier_term(name: str) -> str:
    """The glossary entry a tier belongs to: ``placed at priority N`` for every priority, else its label."""
    base = name.split(":", 1)[1] if name.startswith("weighted:") else name
    return "placed at priority N" if _PLACED.fullmatch(base) else tier_label(base)


def tier_glossary(names: Iterable[str]) -> list[tuple[str, str]]:
    """(term, what it counts) once per term among the tiers ``names``, in their order."""
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(tier_term(name), tier_unit(name)[0])
    return list(out.items())
