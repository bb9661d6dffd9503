"""Cyclic moves (A must leave n1 for B while B must leave n2 for A): resolved by eviction order, by a
detour through a third node, or dropped and reported; each on a hand-built cluster whose outcome is known."""
from __future__ import annotations

import json

import pytest
from builders import node, pod, state_of

from optisched.optimal.solve import Certificate
from optisched.profile import default_config
from optisched.reschedule import ReschedulePlan, stage
from optisched.reschedule.cycles import find_cycle
from optisched.reschedule.goals import metrics
from optisched.reschedule.waves import Move

PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}}


def owned(name: str):  # type: ignore[no-untyped-def]
    return pod(name).label(app="web").set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "web", "controller": True}])


def needs(key: str, value: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}}}


def _swap_by_order() -> list:
    """a (on n2, free to go anywhere) and b (on n1, needs n2) swap. Evicted in name order, a's replacement
    goes first and takes the emptier n2, and b's finds no node; b first, then a, lands both."""
    return [node("n1", cpu="2"), node("n2", cpu="2").label(pool="b"),
            owned("b").req(cpu="1500m").set("spec.affinity", needs("pool", "b")).on("n1"),
            owned("a").req(cpu="1500m").on("n2"), pod("x").req(cpu="250m").on("n1")]


def _swap_by_detour(third_cpu: str) -> list:
    """a (1500m on n1, needs pool=a: n2 or n3) and b (2 cpu on n2, needs n1) swap under a budget of one
    disruption, so they cannot leave together. n3, empty, has ``third_cpu`` of room, and the target
    leaves it empty (a replacement may stop there on the way only); n2, the larger, is where kube puts
    a once both n2 and n3 are free."""
    return [node("n1", cpu="2").label(pool="b"), node("n2", cpu="3").label(pool="a"),
            node("n3", cpu=third_cpu).label(pool="a"),
            owned("a").req(cpu="1500m").set("spec.affinity", needs("pool", "a")).on("n1"),
            owned("b").req(cpu="2").set("spec.affinity", needs("pool", "b")).on("n2"), PDB]


def _swapped(state):  # type: ignore[no-untyped-def]
    """The target that swaps the web pods of n1 and n2."""
    target = state.pod_node.copy()
    n1, n2 = state.node_index["n1"], state.node_index["n2"]
    for key in ("default/a", "default/b"):
        p = state.pod_index[key]
        target[p] = n2 if state.pod_node[p] == n1 else n1
    return target


def _legs(staging) -> list[list[tuple[str, str, str]]]:  # type: ignore[no-untyped-def]
    return [[(m.key[8:], m.source, m.target) for m in w.moves] for w in staging.waves]


def test_a_swap_that_name_order_cannot_land_is_evicted_together_in_the_order_that_does():
    state = state_of(*_swap_by_order())
    staging = stage(state, default_config(), _swapped(state), {})
    assert _legs(staging) == [[("b", "n1", "n2"), ("a", "n2", "n1")]]
    assert all(m.predicted == m.target for m in staging.waves[0].moves)
    assert [(c.pods, c.outcome) for c in staging.cycles] == [(["default/a", "default/b"], "order")]
    assert staging.dropped == []


def _not_on(state, name: str):  # type: ignore[no-untyped-def]
    """An accept step that refuses a replacement staying on ``name`` (a goal wants it free at the end)."""
    return lambda p, n, before, after: f"lands on {name}" if n == state.node_index[name] else None


def test_a_swap_the_budget_keeps_apart_goes_through_a_third_node_in_two_counted_moves():
    state = state_of(*_swap_by_detour(third_cpu="2"))
    staging = stage(state, default_config(), _swapped(state), {}, accept=_not_on(state, "n3"))
    assert _legs(staging) == [[("a", "n1", "n3")], [("b", "n2", "n1")], [("a", "n3", "n2")]]
    assert all(m.predicted == m.target for w in staging.waves for m in w.moves)
    assert [c.outcome for c in staging.cycles] == ["detour"]
    assert "detour via n3 (1 of 2)" in staging.waves[0].moves[0].reason
    assert "detour via n3 (2 of 2)" in staging.waves[2].moves[0].reason
    assert staging.final["default/a"] == "n2" and staging.final["default/b"] == "n1"


def test_a_swap_with_no_order_and_no_room_elsewhere_is_dropped_and_reported():
    state = state_of(*_swap_by_detour(third_cpu="1"))
    staging = stage(state, default_config(), _swapped(state), {}, accept=_not_on(state, "n3"))
    assert staging.waves == []
    assert [c.outcome for c in staging.cycles] == ["dropped"]
    (first, why), *_ = staging.dropped
    assert first.key == "default/a" and why.startswith("cycle with default/b: no eviction order or detour")
    plan = ReschedulePlan([], {}, staging, metrics(state, state.pod_node, []), metrics(state, state.pod_node, []),
                          Certificate("OPTIMAL", [], 0.0, "solver", False))
    body = json.loads(json.dumps(plan.to_dict()))
    assert body["cycles"] == [{"pods": ["default/a", "default/b"], "outcome": "dropped", "detail": why}]
    assert body["dropped"][0]["why"] == why
    assert f"cycle default/a -> default/b: dropped ({why})" in plan.summary()


def test_no_detour_stops_on_an_empty_node_a_consolidation_keeps_cordoned():
    state = state_of(*_swap_by_detour(third_cpu="2"))
    staging = stage(state, default_config(), _swapped(state), {}, idle=frozenset({"n3"}))
    assert staging.held == ["n3"] and staging.waves == []
    assert [c.outcome for c in staging.cycles] == ["dropped"]
    assert "n3" not in staging.final.values()


@pytest.mark.parametrize("moves,cycle", [
    ([("a", "n1", "n2"), ("b", "n2", "n1")], ["a", "b"]),
    ([("a", "n1", "n2"), ("b", "n2", "n3"), ("c", "n3", "n1")], ["a", "b", "c"]),
    ([("a", "n1", "n2"), ("b", "n2", "n3")], None),
    ([("a", "n1", None), ("b", "n2", "n1")], None),
], ids=["two moves into each other's nodes are a cycle", "three moves round three nodes are a cycle",
        "a chain that does not come back is no cycle", "a move without a target closes no cycle"])
def test_find_cycle(moves, cycle):
    ms = [Move(i, k, s, t, "") for i, (k, s, t) in enumerate(moves)]
    found = find_cycle(ms[0], ms)
    assert (None if found is None else [m.key for m in found]) == cycle


def test_find_cycle_stays_cheap_with_many_moves_between_two_nodes():
    """Two thousand moves back and forth between n1 and n2: the search reaches each node once."""
    ms = [Move(i, f"p{i}", "n1" if i % 2 else "n2", "n2" if i % 2 else "n1", "") for i in range(2000)]
    assert [m.key for m in find_cycle(ms[0], ms)] == ["p0", "p1"]


def test_find_cycle_finds_a_ring_of_four_and_not_of_five():
    ring = [Move(i, f"p{i}", f"n{i}", f"n{i + 1}", "") for i in range(10)]
    assert [m.key for m in find_cycle(ring[0], ring + [Move(99, "back", "n3", "n0", "")])] == ["p0", "p1", "p2", "back"]
    assert find_cycle(ring[0], ring + [Move(99, "back", "n4", "n0", "")]) is None


def test_past_the_deadline_a_move_taken_out_of_a_wave_is_dropped_not_tried_again():
    """The swap that eviction order resolves when there is time (one wave, both on target); past the
    staging's deadline no cycle is resolved: each move is dropped with why its replay refused it."""
    state = state_of(*_swap_by_order())
    staging = stage(state, default_config(), _swapped(state), {}, deadline=0.0)
    assert staging.cycles == [] and staging.waves == []
    late = "; not tried again: the time limit was reached"
    assert sorted((m.key, why) for m, why in staging.dropped) == [
        ("default/a", "loop: lands back on n2" + late), ("default/b", "replacement predicted to stay pending" + late)]
    assert staging.final == {p.key: state.node_names[int(n)] for p, n in zip(state.pods, state.pod_node)}
