"""Tiers in a reader's words: ``placed[priority=1000]`` reads "placed at priority 1000", and what a tier
counts goes to a glossary beside the table instead of into every row.

The tier names themselves (``placed[priority=N]``, ``score``, ``disruption``, ``objective:NAME``,
``weighted:NAME``) stay as they are in JSON, where programs read them; a name read back from JSON is
parsed once here (:meth:`.tier_key.TierKey.parse`).
"""
from __future__ import annotations

from collections.abc import Iterable

from .tier_key import TierKey
from .tiers import tier_unit

__all__ = ["tier_glossary", "tier_label", "tier_term"]


def _key(tier: TierKey | str) -> TierKey:
    return tier if isinstance(tier, TierKey) else TierKey.parse(tier)


def tier_label(tier: TierKey | str) -> str:
    """``placed[priority=1000]`` -> ``placed at priority 1000``, ``objective:pack`` -> ``pack objective``,
    ``weighted:NAME`` -> the label of NAME, weighted; other names as they are."""
    key = _key(tier)
    if key.part is not None:
        return f"{tier_label(key.part)}, weighted"
    if key.level is not None:
        return f"placed at priority {key.level}"
    if key.objective is not None:
        return f"{key.objective} objective"
    return str(key)


def tier_term(tier: TierKey | str) -> str:
    """The glossary entry a tier belongs to: ``placed at priority N`` for every priority, else its label."""
    base = _key(tier).base
    return "placed at priority N" if base.is_level else tier_label(base)


def tier_glossary(tiers: Iterable[TierKey | str]) -> list[tuple[str, str]]:
    """(term, what it counts) once per term among the tiers ``tiers``, in their order."""
    out: dict[str, str] = {}
    for tier in tiers:
        key = _key(tier)
        out.setdefault(tier_term(key), tier_unit(key)[0])
    return list(out.items())
