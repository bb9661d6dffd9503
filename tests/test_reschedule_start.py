"""The goal tier's start and bound, balance by excess, and the accept step checking every goal.

Each cluster is small enough that its best plan (or what cluster-autoscaler's scale-down simulation
does) is worked out by hand in the docstring.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of

from optisched.optimal.classes import build_batch
from optisched.optimal.model import BatchModel
from optisched.optimal.user_objectives import check_objective, excess_name, pack_floor
from optisched.policy.eviction import EvictionPolicy
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule
from optisched.reschedule.accept import landing_check
from optisched.reschedule.goals import Goal
from optisched.reschedule.start import consolidation_start, repair_start
from optisched.reschedule.tier_start import goal_start
from optisched.reschedule.violations import violating


def owned(name: str, owner: str = "web", image: str = "app:1"):  # type: ignore[no-untyped-def]
    b = pod(name).set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                                    "uid": owner, "controller": True}]).label(app=owner)
    b["spec"]["containers"][0]["image"] = image
    return b


def _scale_down() -> list:
    """Four 4-cpu nodes. n1 holds a 2-cpu bare pod (it stays: n1 is no candidate, utilization 0.5);
    n2 and n3 each one 1-cpu pod (0.25); n4 one 2-cpu pod (0.5). cluster-autoscaler tries n2, n3 (least
    utilized, then by name), then n4: n2's pod fits n1 (most allocated), n3's pod fits n1 too (now
    full), n4's pod fits nowhere once n2 and n3 are no destinations. Emptied: n2, n3."""
    return [node(f"n{i}") for i in (1, 2, 3, 4)] + [
        pod("anchor").req(cpu="2").on("n1"), owned("a", "a").req(cpu="1").on("n2"),
        owned("b", "b").req(cpu="1").on("n3"), owned("c", "c").req(cpu="2").on("n4")]


def test_consolidation_start_empties_the_nodes_the_scale_down_simulation_does():
    state = state_of(*_scale_down())
    may_leave = EvictionPolicy().verdicts(state).may_leave
    start, emptied = consolidation_start(state, default_config(), may_leave)
    assert [state.node_names[n] for n in emptied] == ["n2", "n3"]
    names = {p.key: state.node_names[int(start[i])] for i, p in enumerate(state.pods)}
    assert names == {"default/anchor": "n1", "default/a": "n1", "default/b": "n1", "default/c": "n4"}


def test_the_plan_empties_at_least_the_nodes_the_simulation_empties():
    plan = plan_reschedule(state_of(*_scale_down()), default_config(), "consolidate", time_limit=10)
    assert {"n2", "n3"} <= set(plan.removable)
    assert plan.consistent
    assert any(n.startswith("start: cluster-autoscaler's scale-down simulation empties 2 node(s)")
               for n in plan.staging.notes)


def test_daemonset_pods_stay_and_do_not_keep_a_node_from_counting_as_emptied():
    ds = [pod(f"agent-{i}").req(cpu="100m").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "agent"}])
          .on(f"n{i}") for i in (1, 2, 3, 4)]
    state = state_of(*_scale_down(), *ds)
    may_leave = EvictionPolicy().verdicts(state).may_leave
    start, said = goal_start(state, default_config(), Goal.CONSOLIDATE, may_leave, state.pod_node, may_leave)
    assert said.startswith("start: cluster-autoscaler's scale-down simulation empties 2 node(s) (n2, n3)")
    assert all(start[state.pod_index[f"default/agent-{i}"]] == state.node_index[f"n{i}"] for i in (1, 2, 3, 4))


def test_a_pod_no_filter_lets_elsewhere_keeps_its_node_in_the_simulation():
    """b on n3 selects a zone only n3 is in: n3 is not emptied, b stays, and n3, still a destination,
    takes n4's 2-cpu pod (n1 is full once n2's pod is there), so n4 is emptied instead."""
    objs = _scale_down()
    objs[2] = objs[2].label(zone="z")
    objs[6] = objs[6].set("spec.nodeSelector", {"zone": "z"})
    state = state_of(*objs)
    start, emptied = consolidation_start(state, default_config(), EvictionPolicy().verdicts(state).may_leave)
    assert [state.node_names[n] for n in emptied] == ["n2", "n4"]
    assert start[state.pod_index["default/b"]] == state.node_index["n3"]
    assert start[state.pod_index["default/c"]] == state.node_index["n3"]


def _half_full(costs: tuple[str, ...] = ()) -> list:
    """Three 4-cpu nodes each with two 1-cpu pods: two nodes hold all six (the optimum is 2 nodes)."""
    objs = []
    for i in (1, 2, 3):
        n = node(f"n{i}")
        objs.append(n.label(**{"optisched.io/hourly-cost": costs[i - 1]}) if costs else n)
        objs += [owned(f"w{i}{j}", f"o{i}{j}").req(cpu="1").on(f"n{i}") for j in (1, 2)]
    return objs


def test_with_hourly_costs_the_simulation_empties_the_most_expensive_node_first():
    state = state_of(*_half_full(("0.1", "0.3", "0.2")))
    _, emptied = consolidation_start(state, default_config(), EvictionPolicy().verdicts(state).may_leave)
    assert [state.node_names[n] for n in emptied] == ["n2"]


@pytest.mark.parametrize("costs,floor", [((), 2), (("0.1", "0.2", "0.3"), 200)],
                         ids=["the capacity bound of three half-full nodes is the optimum, two nodes",
                              "with hourly costs the bound is the cheapest fractional cover (0.1 and half of 0.2)"])
def test_pack_floor_is_the_capacity_bound(costs, floor):
    state = state_of(*_half_full(costs))
    config = default_config()
    model = BatchModel(build_batch(state, config, movable=True), config)
    assert pack_floor(model, {0: 6}) == floor
    assert pack_floor(model, {0: 0}) == 0  # nothing has to be placed: nothing has to be in use


def test_the_pack_tier_reports_the_capacity_bound_and_stops_at_it():
    plan = plan_reschedule(state_of(*_half_full()), default_config(), "consolidate", time_limit=10)
    tier = next(t for t in plan.certificate.tiers if t.name == "objective:pack")
    assert (tier.objective, tier.bound, tier.status) == (2, 2, "OPTIMAL")


def _two_over() -> list:
    """n1 at 90 % cpu (three 1.2-cpu pods), n2 at 75 % (three 1-cpu pods), n3 and n4 empty: over a 60 %
    target both n1 and n2 are over. Each needs one pod off to get under it."""
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)]
    objs += [owned(f"a{j}", f"a{j}").req(cpu="1200m").on("n1") for j in range(3)]
    return objs + [owned(f"b{j}", f"b{j}").req(cpu="1").on("n2") for j in range(3)]


def test_balance_with_thresholds_brings_every_over_utilized_node_under_its_target():
    plan = plan_reschedule(state_of(*_two_over()), default_config(), "balance", time_limit=10,
                           thresholds=({"cpu": 20}, {"cpu": 60}))
    sources = sorted(m.source for w in plan.staging.waves for m in w.moves)
    assert sources == ["n1", "n2"]  # one pod off each, not only off the most utilized node
    assert plan.after.util_max["cpu"] <= 0.6
    tier = next(t for t in plan.certificate.tiers if t.name.startswith("objective:"))
    assert tier.name == "objective:excess[cpu=60]" and tier.objective == 0


def test_excess_names_round_trip_and_bad_ones_are_refused():
    assert excess_name({"cpu": 50, "memory": 60}) == "excess[cpu=50,memory=60]"
    check_objective("excess[cpu=50,memory=60]")
    with pytest.raises(Exception, match="is not one of"):
        check_objective("excess[cpu=fifty]")


def _duplicate_landing() -> tuple:
    """n1 (zone b) holds w1, a web replica whose node selector asks for zone a: repair moves it. n2
    and n3 are zone a; n3 already holds a web replica, w2. Put on n3, w1 would be a duplicate (two
    replicas, two nodes they could use: at most one per node)."""
    objs = [node("n1").label(zone="b"), node("n2").label(zone="a"), node("n3").label(zone="a"),
            owned("w1").req(cpu="500m").set("spec.nodeSelector", {"zone": "a"}).on("n1"),
            owned("w2").req(cpu="500m").set("spec.nodeSelector", {"zone": "a"}).on("n3")]
    return state_of(*objs), default_config()


def test_accept_refuses_a_landing_that_breaks_a_repaired_rule():
    state, config = _duplicate_landing()
    counted = EvictionPolicy().verdicts(state).may_leave
    target = state.pod_node.copy()
    w1, n2, n3 = state.pod_index["default/w1"], state.node_index["n2"], state.node_index["n3"]
    target[w1] = n2
    check = landing_check(state, config, [Goal.REPAIR], target, counted)
    landed = state.pod_node.copy()
    landed[w1] = n3
    assert "would break Duplicates" in check(w1, n3, state.pod_node, landed)
    landed[w1] = n2
    assert check(w1, n2, state.pod_node, landed) is None


def test_accept_keeps_consolidate_and_balance_goals_at_the_landing_node():
    state = state_of(*_two_over())
    config = default_config()
    counted = EvictionPolicy().verdicts(state).may_leave
    a0, n2, n3 = state.pod_index["default/a0"], state.node_index["n2"], state.node_index["n3"]
    target = state.pod_node.copy()
    target[a0] = n3
    check = landing_check(state, config, [Goal.BALANCE], target, counted, targets={"cpu": 60})
    landed = state.pod_node.copy()
    landed[a0] = n2  # n2 at 75 % + 30 %: over the target
    assert "over the target thresholds" in check(a0, n2, state.pod_node, landed)
    landed[a0] = n3
    assert check(a0, n3, state.pod_node, landed) is None


def test_repair_start_moves_each_violating_pod_where_it_breaks_nothing():
    state, config = _duplicate_landing()
    counted = EvictionPolicy().verdicts(state).may_leave
    bad = violating(state, config, state.pod_node, counted)
    assert bad == {state.pod_index["default/w1"]: "NodeAffinity"}
    start, said = goal_start(state, config, Goal.REPAIR, counted, state.pod_node, counted)
    assert start[state.pod_index["default/w1"]] == state.node_index["n2"]  # n3 would make it a duplicate
    assert said.startswith("start: 1 of 1 violating pod(s)")
    assert not violating(state, config, start, counted)
    # without the duplicate check the fuller n3 is taken
    plain = repair_start(state, config, bad, counted, lambda snap, p: False)
    assert plain[state.pod_index["default/w1"]] == state.node_index["n3"]
    assert np.array_equal(plain[state.pod_node >= 0] >= 0, np.ones(2, dtype=bool))
