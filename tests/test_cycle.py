"""The scheduling cycle's machinery: node order, feasible-node budget, rotation, host selection."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from helpers.replay import CASES, case_names, load_trace

from optisched.greedy.nodetree import node_tree_order, num_feasible_nodes_to_find
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak, heap_top, select_host
from optisched.model.loader import load_cluster
from optisched.profile import default_config, parse_config


@pytest.mark.parametrize("name", case_names())
def test_node_tree_order_matches_the_real_scheduler(name):
    cluster = load_cluster([str(CASES / f"{name}.yaml")])
    order = [cluster.nodes[i].metadata.name for i in node_tree_order(cluster.nodes)]
    assert order == load_trace(name)["nodeOrder"]


def test_zone_round_robin():
    nodes = [node(f"{z}{i}").zone(z) for z in "abc" for i in range(3)][:8]  # a0 a1 a2 b0 b1 b2 c0 c1
    state = state_of(*nodes, pod("p"))
    order = [state.node_names[i] for i in node_tree_order(state.nodes)]
    assert order == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2"]


@pytest.mark.parametrize("pct,n,want", [
    (0, 50, 50),        # below 100 nodes every node is a candidate
    (0, 1000, 420),     # adaptive: 50 - 1000/125 = 42 %
    (0, 5000, 500),     # adaptive: 50 - 40 = 10 %
    (0, 10000, 500),    # adaptive floor: 5 %
    (0, 150, 100),      # 150 * 48 % = 72, raised to the 100-node floor
    (30, 1000, 300),
    (100, 1000, 1000),
])
def test_num_feasible_nodes_to_find(pct, n, want):
    assert num_feasible_nodes_to_find(pct, n) == want


def test_search_stops_after_enough_feasible_nodes_and_rotates():
    """With 200 nodes and percentageOfNodesToScore 50, a cycle keeps the first 100 feasible nodes in
    order from nextStartNodeIndex; the next cycle starts where the last one stopped."""
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "percentageOfNodesToScore": 50})
    state = state_of(*[node(f"n{i:03d}") for i in range(200)], pod("a").req(cpu="100m"), pod("b").req(cpu="100m"))
    sched = GreedyScheduler(state, cfg, GreedyOptions(requeue=False))
    res = sched.run()
    first, second = res.cycles
    assert len(first.filters.feasible) == 100
    assert [state.node_names[i] for i in first.filters.feasible[:2]] == ["n000", "n001"]
    # the 101st feasible node cancelled the search: 100 nodes processed, the next cycle starts at n100
    assert state.node_names[second.filters.evaluated[0]] == "n100"
    assert state.node_names[int(first.chosen)].startswith("n0")


def test_heap_pick_is_upstreams_heap_top_on_every_recorded_cycle():
    checked = 0
    for name in case_names():
        for c in load_trace(name)["cycles"]:
            if c.get("scored") and c.get("heapPick"):
                feas = c["feasible"]
                assert feas[heap_top([c["scores"][n]["total"] for n in feas])] == c["heapPick"]
                checked += 1
    assert checked > 1000


def test_select_host_policies():
    found = np.array([5, 2, 7, 1])  # rows in filter order
    totals = np.array([90, 100, 100, 80])
    rank = np.array([0, 3, 1, 2, 4, 5, 6, 7])  # tree rank per row: row 2 comes before row 7? rank[2]=1, rank[7]=7
    assert select_host(found, totals, rank, TieBreak.FIRST) == 2
    import random

    picks = {select_host(found, totals, rank, TieBreak.RANDOM, random.Random(s)) for s in range(20)}
    assert picks == {2, 7}
    assert select_host(found, totals, rank, TieBreak.HEAP) in (2, 7)


def test_default_profile_runs_without_a_config():
    state = state_of(node("a"), pod("p"))
    res = GreedyScheduler(state, default_config()).run()
    assert res.placements()["default/p"] == "a"
