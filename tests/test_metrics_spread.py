"""Topology-spread skew per workload constraint, on hand-computed cases."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of

from optisched.metrics import domain_counts, spread_constraints, spread_skew

ZONE = "topology.kubernetes.io/zone"


def web(name, *, min_domains=None, when="DoNotSchedule", namespace="default"):
    c = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": when,
         "labelSelector": {"matchLabels": {"app": "web"}}}
    if min_domains:
        c["minDomains"] = min_domains
    return (pod(name, namespace).label(app="web").req(cpu="100m")
            .set("spec.topologySpreadConstraints", [c]).set("spec.nodeSelector", {"pool": "web"}))


def cluster(min_domains=None):
    return state_of(
        node("a1").zone("a").label(pool="web"), node("a2").zone("a").label(pool="web"),
        node("b1").zone("b").label(pool="web"),
        node("c1").zone("c").label(pool="batch"),  # outside the pods' nodeSelector: not a domain (Honor)
        *(web(f"web-{i}", min_domains=min_domains) for i in range(3)),
        web("other-ns", namespace="team2"),  # same labels, other namespace: never counted
        pod("stray").label(app="web"),  # matches the selector, carries no constraint: counted
    )


def placed(st, placement):
    """node_of with the named pods ("ns/name", or "name" in default) on the named nodes, the rest unplaced."""
    node_of = np.full(len(st.pods), -1)
    for p, n in placement.items():
        node_of[st.pod_index[p if "/" in p else "default/" + p]] = st.node_index[n]
    return node_of


def test_one_constraint_per_workload_with_the_pods_that_carry_it():
    st = cluster()
    found = spread_constraints(st)
    assert [(sd.name, len(sd.pods)) for sd in found] == [
        ("default/app=web zone maxSkew=1 DoNotSchedule", 3), ("team2/app=web zone maxSkew=1 DoNotSchedule", 1)]


@pytest.mark.parametrize("placement, domains, counts, skew", [
    ({"web-0": "a1", "web-1": "a2", "web-2": "b1"}, ["a", "b"], [2, 1], 1),
    ({"web-0": "a1", "web-1": "a2", "web-2": "a1"}, ["a", "b"], [3, 0], 3),
    ({"web-0": "a1", "web-1": "b1", "web-2": "c1"}, ["a", "b"], [1, 1], 0),
    ({"web-0": "a1", "stray": "b1", "team2/other-ns": "b1"}, ["a", "b"], [1, 1], 0),
], ids=["two in zone a and one in b is a skew of one", "all in zone a leaves b empty: a skew of three",
        "a pod on a node outside the eligible domains does not count",
        "a matching pod without the constraint counts, one in another namespace does not"])
def test_skew_is_max_minus_min_over_eligible_domains(placement, domains, counts, skew):
    st = cluster()
    sd = spread_constraints(st)[0]
    node_of = placed(st, placement)
    got_domains, got_counts = domain_counts(st, node_of, sd)
    assert (got_domains, got_counts.tolist()) == (domains, counts)
    assert spread_skew(st, node_of, sd) == skew


def test_fewer_domains_than_min_domains_takes_the_minimum_as_zero():
    st = cluster(min_domains=3)
    sd = spread_constraints(st)[0]
    node_of = placed(st, {"web-0": "a1", "web-1": "a2", "web-2": "b1"})
    assert spread_skew(st, node_of, sd) == 2  # counts (2, 1), two domains < minDomains 3: 2 - 0


def test_schedule_anyway_constraints_are_reported_too():
    st = state_of(node("a1").zone("a"), web("w", when="ScheduleAnyway").set("spec.nodeSelector", {}))
    assert [sd.action for sd in spread_constraints(st)] == ["ScheduleAnyway"]


def test_pods_without_constraints_give_none():
    assert spread_constraints(state_of(node("n1"), pod("p"))) == []
