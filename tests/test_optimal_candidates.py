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


def test_a_goal_start_keeps_the_nodes_it_moves_pods_to_as_candidates() -> None:
    """Twelve identical pods on n00 of 40 nodes, candidates limited to 8 per class: a start that moves
    one to n39 (no room advantage, not sampled by this seed) keeps n39 a candidate; a node the model does
    not allow for the class is not added."""
    from builders import node, pod, state_of

    from optisched.optimal.candidates import choose_candidates
    from optisched.optimal.classes import build_batch
    from optisched.profile import default_config

    objs = [node(f"n{i:02d}", cpu="8") for i in range(40)]
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "w", "uid": "w", "controller": True}]
    objs += [pod(f"p{i}").req(cpu="100m").set("metadata.ownerReferences", owner).on("n00") for i in range(12)]
    state = state_of(*objs)
    batch = build_batch(state, default_config(), movable=True)
    allowed = np.ones((len(batch.classes), state.num_nodes), dtype=bool)
    plain = choose_candidates(batch, allowed, state.pod_node, 8, 0, {})
    (c, nodes), = plain.items()
    far = next(n for n in range(state.num_nodes - 1, 0, -1) if n not in set(nodes.tolist()))
    start = state.pod_node.copy()
    start[0] = far
    kept = choose_candidates(batch, allowed, state.pod_node, 8, 0, {}, (start,))
    assert far in kept[c].tolist() and set(nodes.tolist()) <= set(kept[c].tolist())
    allowed[c, far] = False
    assert far not in choose_candidates(batch, allowed, state.pod_node, 8, 0, {}, (start,))[c].tolist()
