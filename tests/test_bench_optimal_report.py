"""The optimal-mode benchmark's tier-1 gap: a run without any placement tier has no bound to report."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from optisched.optimal.tier_key import TierKey
from optisched.optimal.tiers import Tier

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_optimal import NO_BOUND, gap_text, tier1_gap


def placed(priority: int, objective: int, bound: int) -> Tier:
    return Tier(TierKey.placed(priority), "max", objective, bound, "FEASIBLE", 1.0, objective)


CASES = [
    pytest.param([], NO_BOUND, None, id="no tier solved reports no bound, not a zero gap"),
    pytest.param([Tier(TierKey.parse("disruption"), "min", 3, 0, "FEASIBLE", 1.0)], NO_BOUND, None,
                 id="only a non-placement tier still reports no bound"),
    pytest.param([placed(10, 5, 5), placed(0, 90, 100)], "placed[priority=0]", 0.1,
                 id="the first level not closed decides the gap"),
    pytest.param([placed(10, 5, 5), placed(0, 100, 100)], "all levels closed", 0.0,
                 id="every level closed is a zero gap"),
]


@pytest.mark.parametrize(("tiers", "name", "gap"), CASES)
def test_tier1_gap(tiers: list[Tier], name: str, gap: float | None) -> None:
    got_name, got_gap = tier1_gap(tiers)
    assert got_name == name
    assert got_gap == (None if gap is None else pytest.approx(gap))


def test_gap_text_says_there_is_no_bound() -> None:
    assert gap_text(NO_BOUND, None) == "no tier solved, no bound"
    assert gap_text("placed[priority=0]", 0.0123) == "1.23% (placed[priority=0])"
