"""A pod preempted while a kept wave is replayed (optisched/reschedule/live.py ``preempted``): kube-scheduler
v1.35.4 deletes the victim (``pkg/scheduler/framework/preemption/preemption.go``), so a bare victim is
gone and an owned one comes back as a new pod its controller creates then, queued by PrioritySort
(priority, then the time queued: ``plugins/queuesort/priority_sort.go``) after the replacements created
before it. Both replay paths, kept live and built afresh, agree."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from test_reschedule_live import owned

from optisched.profile import default_config
from optisched.reschedule import stage
from optisched.reschedule.live import LiveCluster
from optisched.reschedule.replays import Replays
from optisched.reschedule.waves import Move

CFG = default_config()
PATHS = pytest.mark.parametrize("incremental", [True, False], ids=["kept live", "built afresh"])


def _at(b, minute: int):  # type: ignore[no-untyped-def]
    return b.set("metadata.creationTimestamp", f"2026-01-01T00:{minute:02d}:00Z")


def _cluster(victim, moved: bool = False) -> tuple:  # type: ignore[no-untyped-def]
    """n1 holds m1, m2 (1 CPU each, one PodDisruptionBudget of one disruption: two waves to n2) and the
    victim v (2 CPU, the youngest); h (priority 100, 2 CPU, pending) may only run on n1, so wave 1's
    replay preempts v there. n3 holds z (1.5 CPU). ``moved``: v is in the budget too and moves to n3."""
    v = _at(victim.req(cpu="2"), 2)
    if moved:
        v = v.label(app="web")
    state = state_of(
        node("n1"), node("n2"), node("n3"),
        _at(owned("m1", "web").req(cpu="1"), 0).on("n1"), _at(owned("m2", "web").req(cpu="1"), 1).on("n1"),
        v.on("n1"), _at(pod("z").req(cpu="1500m"), 0).on("n3"),
        _at(pod("h").req(cpu="2").priority(100).set("spec.nodeSelector", {"kubernetes.io/hostname": "n1"}), 5),
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}})
    target = state.pod_node.copy()
    target[[state.pod_index["default/m1"], state.pod_index["default/m2"]]] = state.node_index["n2"]
    target[state.pod_index["default/h"]] = state.node_index["n1"]
    if moved:
        target[state.pod_index["default/v"]] = state.node_index["n3"]
    return state, target


def _two_waves(state, incremental: bool):  # type: ignore[no-untyped-def]
    """Wave 1 evicts m2 (h preempts v on arrival) and is kept; wave 2 evicts m1. Returns both replays and
    the live cluster (None when built afresh)."""
    live = LiveCluster(state, CFG) if incremental else None
    m1, m2 = (Move(state.pod_index[k], k, "n1", "n2", "") for k in ("default/m1", "default/m2"))
    first = Replays(state, CFG, state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool), {}, live)
    wave1 = first([m2])
    first.keep([m2])
    wave2 = Replays(state, CFG, wave1.after, wave1.gone, {}, live, wave1.requeued)([m1])
    return wave1, wave2, live


@PATHS
def test_an_owned_victim_comes_back_as_a_new_pod_queued_after_older_replacements(incremental):
    """v's replacement is unbound and created when h preempted v, after m2's replacement and before m1's:
    in wave 2 it goes first and takes n2 (LeastAllocated: the emptiest node with room), so m1's
    replacement lands on n3. As its original object (bound by name to n1) it went back to n1."""
    state, target = _cluster(owned("v", "rv"))
    v = state.pod_index["default/v"]
    wave1, wave2, live = _two_waves(state, incremental)
    assert wave1.preempts == {"default/h": "default/v"} and wave1.after[v] < 0
    assert wave1.requeued == (v,) and not wave1.gone[v]
    assert wave2.landed == {"default/v": "n2", "default/m1": "n3"}
    assert wave2.requeued == ()
    if live is not None:
        made = [live.state.pods[state.pod_index[k]] for k in ("default/m2", "default/v", "default/m1")]
        assert all(p is not state.pods[state.pod_index[p.key]] and p.spec.node_name is None for p in made)
        stamps = [p.metadata.creation_timestamp for p in made]
        assert stamps == sorted(stamps) and len(set(stamps)) == 3
    staging = stage(state, CFG, target, {}, incremental=incremental)
    assert [[(m.key, m.target, m.predicted) for m in w.moves] for w in staging.waves] == [
        [("default/m2", "n2", "n2")], [("default/m1", "n3", "n3")]]
    assert staging.final["default/v"] == "n2" and staging.final["default/h"] == "n1"


@PATHS
def test_a_bare_victim_is_gone_for_good(incremental):
    """Nothing re-creates v: wave 2 neither queues it nor lets it back onto n1, where m1's eviction makes
    room (its original object, bound by name to n1, went back there)."""
    state, target = _cluster(pod("v"))
    v = state.pod_index["default/v"]
    wave1, wave2, _ = _two_waves(state, incremental)
    assert wave1.preempts == {"default/h": "default/v"}
    assert wave1.gone[v] and wave1.requeued == ()
    assert wave2.gone[v] and wave2.after[v] < 0 and "default/v" not in wave2.landed
    staging = stage(state, CFG, target, {}, incremental=incremental)
    assert len(staging.waves) == 2 and staging.final["default/v"] is None
    assert staging.final["default/h"] == "n1"


@PATHS
def test_a_move_of_a_pod_preempted_by_an_earlier_wave_is_dropped(incremental):
    """Three moves in one budget of one disruption: m2 leaves in wave 1, when h preempts m1 (the budget
    then allows one more disruption, which m1, the more important, takes; v, beyond it, is reprieved
    first), so m1's move has nothing left to evict: it is dropped, and m1's replacement, a new pod, is
    placed by wave 2's replay (kept live, evicting m1 again raised)."""
    state, target = _cluster(owned("v", "rv"), moved=True)
    staging = stage(state, CFG, target, {}, incremental=incremental)
    assert [[m.key for m in w.moves] for w in staging.waves] == [["default/m2"], ["default/v"]]
    assert [(m.key, why) for m, why in staging.dropped] == [
        ("default/m1", "preempted on arrival of a pod in wave 1; re-created by its controller")]
    assert staging.final["default/m1"] == "n2" and staging.final["default/v"] == "n3"


@PATHS
@pytest.mark.parametrize("moved,bare,final,replays", [
    (("default/m2",), False, "n2", 2),
    (("default/m2",), True, None, 1),
    ((), False, "n2", 2),
    ((), True, None, 1),
], ids=["an owned victim of the last wave is placed after it, where a new pod goes",
        "a bare victim of the last wave is gone at the end",
        "with no wave at all, an owned victim of the pending pods is placed as a new pod",
        "with no wave at all, a bare victim of the pending pods is gone"])
def test_what_the_last_replay_preempts_is_placed_or_gone_at_the_end(incremental, moved, bare, final, replays):
    """After the waves kube-scheduler goes on: the replacement of a pod preempted by the last replay is
    scheduled like any new pod by one more replay (n2, the emptiest with room). Without it an owned
    victim was left pending and, with no wave, any victim left on the node it was preempted from."""
    state, target = _cluster(pod("v") if bare else owned("v", "rv"))
    for key in {"default/m1", "default/m2"} - set(moved):
        target[state.pod_index[key]] = state.node_index["n1"]
    staging = stage(state, CFG, target, {}, incremental=incremental)
    assert [[m.key for m in w.moves] for w in staging.waves] == ([list(moved)] if moved else [])
    assert staging.final["default/v"] == final and staging.final["default/h"] == "n1"
    assert staging.replays == replays
