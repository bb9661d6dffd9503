"""The repair accept step: a replacement kube-scheduler lands elsewhere than its target is kept only when
its landing creates no violation anywhere, counted as the summary counts them.

kube-scheduler's filters check the arriving pod's own rules (and existing pods' required anti-affinity
on the node's own domain); what they do not see is another pod's DoNotSchedule spread pushed over
maxSkew by the arrival, or another pod's anti-affinity term matched anywhere in its topology domain.
One hand-built cluster per rule, then a property: the landing's violations, looked for only in the
topology domains of the landing node, are the difference of the whole summary's counts with the pod
there and without it.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reschedule_violations_classes import clusters

from optisched.policy.eviction import EvictionPolicy
from optisched.profile import default_config
from optisched.reschedule.accept import landing_check
from optisched.reschedule.goals import Goal
from optisched.reschedule.violations import (
    _among,
    _filter_violations,
    daemon_only,
    landing_violations,
    placed_snapshot,
)

ZONE = "topology.kubernetes.io/zone"


def web(name: str):  # type: ignore[no-untyped-def]
    return pod(name).req(cpu="100m").label(app="web")


def zone_spread():  # type: ignore[no-untyped-def]
    return [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}}]


def _spread_cluster() -> list:
    """Zone a (n1) holds q1, which spreads the web pods over zones at maxSkew 1, and r1; zone b (n2)
    holds q2, spread as q1. p (a web pod with no constraint of its own, so kube-scheduler's filters let
    it go anywhere) runs on n3, outside both zones; elsewhere, on n4, x breaks its node selector already.
    p landing in zone a makes it 3 web pods against 1: q1, taken out and put back last, sees 2 against
    1 plus itself, a skew of 2. In zone b it is 2 against 2."""
    return [node("n1").zone("a"), node("n2").zone("b"), node("n3"), node("n4"),
            web("q1").set("spec.topologySpreadConstraints", zone_spread()).on("n1"), web("r1").on("n1"),
            web("q2").set("spec.topologySpreadConstraints", zone_spread()).on("n2"), web("p").on("n3"),
            pod("x").req(cpu="100m").set("spec.nodeSelector", {"disk": "ssd"}).on("n4")]


def anti_zone() -> dict:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}]}}


def _anti_cluster() -> list:
    """q on n1 (zone a) keeps web pods out of its zone; n2 is zone a too, n3 zone b. p (a web pod
    without anti-affinity) runs on n4. Landing on n2 puts p in q's zone: q's term matches it (a
    different node, so a check of the landing node's own pods misses it); on n3 nothing breaks."""
    return [node("n1").zone("a"), node("n2").zone("a"), node("n3").zone("b"), node("n4"),
            pod("q").req(cpu="100m").set("spec.affinity", anti_zone()).on("n1"), web("p").on("n4")]


def _check(objs: list, landing: str):  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    p, n = state.pod_index["default/p"], state.node_index[landing]
    target = state.pod_node.copy()  # (the target is not what the repair check reads)
    check = landing_check(state, default_config(), [Goal.REPAIR], target, EvictionPolicy().verdicts(state).may_leave)
    after = state.pod_node.copy()
    after[p] = n
    return check(p, n, state.pod_node, after)


@pytest.mark.parametrize("objs,landing,refusal", [
    (_spread_cluster(), "n1", "lands on n1, where default/q1 would break PodTopologySpread"),
    (_spread_cluster(), "n2", None),
    (_anti_cluster(), "n2", "lands on n2, where default/q would break InterPodAntiAffinity"),
    (_anti_cluster(), "n3", None),
], ids=["a landing that pushes another pod's zone spread over maxSkew is refused",
        "a landing that keeps every spread within maxSkew is kept, though a pod elsewhere breaks its node selector",
        "a landing in the zone of another pod's required anti-affinity is refused, on another node of that zone",
        "a landing outside that zone is kept"])
def test_accept_refuses_a_landing_that_creates_a_violation_anywhere(objs, landing, refusal):
    assert _check(objs, landing) == refusal


def test_the_landing_pod_breaking_a_rule_itself_is_named_first():
    """p with q1's zone spread of its own lands in zone a, where q1 is pushed over too: the refusal
    names p."""
    objs = _spread_cluster()
    objs[7] = web("p").set("spec.topologySpreadConstraints", zone_spread()).on("n3")
    assert _check(objs, "n1") == "lands on n1, where it would break PodTopologySpread"


def _whole(state, config, node_of, soft):  # type: ignore[no-untyped-def]
    """The summary's counting over every pod (Duplicates aside)."""
    rows = np.flatnonzero((node_of >= 0) & ~daemon_only(state))
    return _among(state, _filter_violations(state, config, node_of, soft), rows, node_of, soft)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans(), st.integers(0, 50))
def test_a_landings_violations_are_the_whole_counts_difference(case, soft, pick):
    state, other = case
    config = default_config()
    node_of = np.where(other >= 0, other, state.pod_node)
    placed = np.flatnonzero((node_of >= 0) & ~daemon_only(state))
    if not len(placed):
        return
    p = int(placed[pick % len(placed)])
    without = node_of.copy()
    without[p] = -1
    with_p, rest = _whole(state, config, node_of, soft), _whole(state, config, without, soft)
    snapshot, frameworks = placed_snapshot(state, config, node_of, True)
    assert landing_violations(state, config, snapshot, frameworks, p, soft) == \
        {q: rule for q, rule in with_p.items() if q not in rest}
    assert np.array_equal(snapshot.node_of, node_of)  # the pod is back where it was
