"""``optisched.compare(cluster, placements=...)``: a user's own placement measured beside greedy and optimal."""
from __future__ import annotations

from pathlib import Path

import pytest

import optisched
from optisched.comparison import placement_run
from optisched.errors import InputError
from optisched.model.state import compile_cluster

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "preemption.yaml"


@pytest.fixture(scope="module")
def state():
    return compile_cluster(optisched.load([str(EXAMPLE)]))


def test_pods_not_named_keep_their_input_node(state):
    run = placement_run(state, "mine", {"default/preemptor": "n1", "default/low-a": None})
    node = {p.key: (state.node_names[n] if n >= 0 else None) for p, n in zip(state.pods, run.node_of)}
    assert node["default/preemptor"] == "n1" and node["default/low-a"] is None
    assert node["default/low-b"] == "n1" and node["default/mid"] == "n3"
    assert run.name == "mine" and run.mode == "given"


@pytest.mark.parametrize(("placements", "message"), [
    ({"preemptor": "n1"}, "pod 'preemptor' is not in the cluster"),
    ({"default/preemptor": "n9"}, "node 'n9' is not in the cluster"),
], ids=["a pod named without its namespace is refused", "an unknown node is refused"])
def test_unknown_names_are_input_errors(state, placements, message):
    with pytest.raises(InputError, match=message) as err:
        placement_run(state, "mine", placements)
    assert "placements['mine']" in str(err.value)


def test_compare_counts_an_eviction_in_the_given_run():
    cluster = optisched.load([str(EXAMPLE)])
    cmp = optisched.compare(cluster, time_limit=10, placements={
        "evict-one": {"default/preemptor": "n1", "default/low-a": None, "default/low-b": None}})
    assert cmp.summary.loc["evictions", "evict-one"] == 2
    assert cmp.summary.loc["placed (of 1 pending)", "evict-one"] == 1
