"""Resource metrics on hand-computed cases: allocation, utilization distribution, nodes used, disruption."""
from __future__ import annotations

import math

import numpy as np
import pytest
from builders import node, pod, state_of

from optisched.metrics import (
    allocation_ratio,
    evicted,
    free_capacity,
    moved,
    nodes_used,
    pdb_violations,
    pods_per_node,
    requested_per_node,
    utilization,
    utilization_stats,
)

GI = 2**30


@pytest.fixture(scope="module")
def state():
    # n1 4 cpu / 8Gi, n2 2 cpu / 4Gi, n3 cordoned 8 cpu / 8Gi
    return state_of(
        node("n1", cpu="4", memory="8Gi"), node("n2", cpu="2", memory="4Gi"),
        node("n3", cpu="8", memory="8Gi").unschedulable(),
        pod("a").req(cpu="1", memory="2Gi").on("n1"),
        pod("b").req(cpu="1500m", memory="1Gi"),
        pod("c").req(cpu="1", memory="1Gi").on("n3"),
    )


def col(state, name):
    return state.resource_col(name)


def test_requested_and_free_capacity_sum_the_pods_on_each_node(state):
    node_of = np.array([0, 1, 2])
    req = requested_per_node(state, node_of)
    assert req[:, col(state, "cpu")].tolist() == [1000, 1500, 1000]
    assert req[:, col(state, "memory")].tolist() == [2 * GI, 1 * GI, 1 * GI]
    assert req[:, col(state, "pods")].tolist() == [1, 1, 1]
    free = free_capacity(state, node_of)
    assert free[:, col(state, "cpu")].tolist() == [3000, 500, 7000]
    assert pods_per_node(state, node_of).tolist() == [1, 1, 1]


def test_free_capacity_never_goes_below_zero():
    st = state_of(node("n1", cpu="1"), pod("big").req(cpu="2").on("n1"))
    assert free_capacity(st, np.array([0]))[0, st.resource_col("cpu")] == 0


@pytest.mark.parametrize("node_of, cpu, memory", [
    # (1000 + 1500) / (4000 + 2000); (2Gi + 1Gi) / 12Gi; the cordoned n3 is left out
    ([0, 1, 2], 2500 / 6000, 3 / 12),
    ([0, -1, 2], 1000 / 6000, 2 / 12),
], ids=["the placed pending pod counts", "an unplaced pod does not count"])
def test_allocation_ratio_is_over_schedulable_nodes(state, node_of, cpu, memory):
    ratio = allocation_ratio(state, np.array(node_of))
    assert ratio[col(state, "cpu")] == pytest.approx(cpu)
    assert ratio[col(state, "memory")] == pytest.approx(memory)
    assert math.isnan(ratio[col(state, "ephemeral-storage")])


@pytest.mark.parametrize("node_of, used", [
    ([0, 1, 2], 3), ([0, -1, 2], 2), ([0, 0, 0], 1), ([-1, -1, -1], 0),
], ids=["every node holds a pod", "one node left empty", "everything on one node", "nothing placed"])
def test_nodes_used_counts_nodes_with_a_pod(state, node_of, used):
    assert nodes_used(state, np.array(node_of)) == used


def test_utilization_per_node_and_its_distribution(state):
    node_of = np.array([0, 1, 2])
    util = utilization(state, node_of)
    assert util[:, col(state, "cpu")].tolist() == pytest.approx([0.25, 0.75, 0.125])
    assert np.isnan(util[:, col(state, "ephemeral-storage")]).all()
    stats = utilization_stats(state, node_of)
    c = col(state, "cpu")
    # schedulable nodes only: cpu 0.25 and 0.75 -> mean 0.5, max 0.75, population std 0.25
    assert (stats.mean[c], stats.max[c], stats.std[c], stats.nodes[c]) == pytest.approx((0.5, 0.75, 0.25, 2))
    m = col(state, "memory")
    # memory 2Gi/8Gi and 1Gi/4Gi: both 0.25
    assert (stats.mean[m], stats.max[m], stats.std[m]) == pytest.approx((0.25, 0.25, 0.0))
    assert math.isnan(stats.mean[col(state, "ephemeral-storage")])


def test_empty_nodes_pull_the_mean_down(state):
    stats = utilization_stats(state, np.array([0, -1, 2]))
    c = col(state, "cpu")
    # n1 0.25, n2 0 -> mean 0.125, std 0.125
    assert (stats.mean[c], stats.max[c], stats.std[c]) == pytest.approx((0.125, 0.25, 0.125))


def db_cluster():
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db", "namespace": "default"},
           "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}
    return state_of(node("n1"), node("n2"), *(pod(f"db-{i}").label(app="db").req(cpu="1").on("n1") for i in range(3)),
                    pod("web").label(app="web").req(cpu="1").on("n2"), pod("new").req(cpu="1"), pdb)


@pytest.mark.parametrize("node_of, n_evicted, n_moved, violated", [
    ([0, 0, 0, 1, 1], 0, 0, []),
    ([0, 0, -1, 1, 1], 1, 0, []),
    ([0, 1, -1, 1, 0], 1, 1, [("default/db", 2, 1, 1, 2)]),
    ([0, 0, 0, -1, -1], 1, 0, []),
], ids=["nothing disrupted", "one db pod evicted is within the budget's one allowed disruption",
        "an eviction and a move take two of one allowed, leaving one healthy of two desired",
        "evicting a pod no budget covers violates nothing"])
def test_evictions_moves_and_pdb_violations(node_of, n_evicted, n_moved, violated):
    st = db_cluster()
    no = np.array(node_of)
    assert int(evicted(st, no).sum()) == n_evicted
    assert int(moved(st, no).sum()) == n_moved
    got = [(v.pdb, v.disrupted, v.disruptions_allowed, v.healthy_after, v.desired_healthy)
           for v in pdb_violations(st, no)]
    assert got == violated


def test_a_pending_pod_left_unplaced_is_not_an_eviction():
    st = db_cluster()
    assert not evicted(st, np.array([0, 0, 0, 1, -1])).any()
