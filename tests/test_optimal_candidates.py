"""Candidate nodes: the nodes with the most room are the first of a stable descending sort."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from optisched.optimal.candidates import _best


@given(st.lists(st.integers(0, 6), min_size=1, max_size=60), st.integers(1, 70))
def test_best_is_the_head_of_a_stable_descending_sort(values: list[int], k: int) -> None:
    room = np.array(values, dtype=np.int64)
    expected = np.argsort(-room, kind="stable")[:k]
    assert sorted(_best(room, k).tolist()) == sorted(expected.tolist())


def test_best_breaks_ties_towards_the_lower_position() -> None:
    assert sorted(_best(np.array([1, 3, 3, 3, 0]), 2).tolist()) == [1, 2]
