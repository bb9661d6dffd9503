"""fit-pending's start where kube-scheduler's preemption cannot make room: pods of any priority that may
leave are moved (defragmentation), each to another node the filters pass, never a pinned pod, never a
pod that has no other node; a pod nothing makes room for stays pending.

Each cluster is worked out by hand in its docstring. GPU nodes g1, g2, g3 have 4 GPUs and 4 cpu; the
1-GPU pods are of priority 100, each its own ReplicaSet; ``big`` asks for the GPUs a node frees.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.optimal.check import check_placement
from optisched.optimal.tier_key import TierKey
from optisched.policy.eviction import EvictionPolicy
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule
from optisched.reschedule.goals import Goal
from optisched.reschedule.start_pending import fit_pending_start, start_breaks
from optisched.reschedule.tier_start import GoalStarts

GPU = "nvidia.com/gpu"


def owned(name: str, priority: int = 100, gpus: int = 1):  # type: ignore[no-untyped-def]
    return pod(name).set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                                                       "uid": name, "controller": True}]) \
        .label(app=name).priority(priority).req(cpu="100m", **{GPU: str(gpus)})


def gpu_nodes(*held: int) -> list:
    """A GPU node per count, g1 first, holding that many 1-GPU pods h<node><j>."""
    objs: list = [node(f"g{i}").alloc(**{GPU: "4"}).label(slot=f"g{i}") for i in range(1, len(held) + 1)]
    return objs + [owned(f"h{i}{j}").on(f"g{i}") for i, k in enumerate(held, 1) for j in range(k)]


def big(gpus: int = 4, priority: int = 0):  # type: ignore[no-untyped-def]
    return owned("big", priority, gpus)


def _start(state) -> tuple[np.ndarray, list[int]]:  # type: ignore[no-untyped-def]
    may_leave = EvictionPolicy().verdicts(state).may_leave & (state.pod_node >= 0)
    pending = np.flatnonzero(state.pod_node < 0).tolist()
    return fit_pending_start(state, default_config(), may_leave, state.pod_node, pending)


def _moves(state, out: np.ndarray) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    return {state.pods[p].metadata.name: (state.node_names[int(out[p])] if out[p] >= 0 else None)
            for p in np.flatnonzero(out != state.pod_node).tolist()}


def test_two_higher_priority_pods_move_for_a_low_priority_four_gpu_pod():
    """g1 holds two 1-GPU pods, g2 and g3 three each: 4 GPUs free, none of them together. Preemption
    finds nothing (every pod outranks big). Fewest moves by capacity: g1 (two), g2 and g3 (three): g1's
    pods go one each to g2 and g3, the only free GPUs, and big takes g1."""
    state = state_of(*gpu_nodes(2, 3, 3), big())
    out, defragmented = _start(state)
    assert _moves(state, out) == {"big": "g1", "h10": "g2", "h11": "g3"}
    assert defragmented == [state.pod_index["default/big"]]
    assert not check_placement(state, default_config(), out)
    again, _ = _start(state)
    assert np.array_equal(out, again)


def test_the_tier_is_offered_the_defragmentation_and_says_so():
    state = state_of(*gpu_nodes(2, 3, 3), big())
    starts = GoalStarts(state, default_config(), [Goal.FIT_PENDING], EvictionPolicy(),
                        EvictionPolicy().verdicts(state).may_leave)
    start = starts.start(TierKey.parse("placed[priority=0]"), state.pod_node, np.ones(len(state.pods), dtype=bool))
    assert start is not None and _moves(state, start) == {"big": "g1", "h10": "g2", "h11": "g3"}
    assert starts.lines() == [("start of fit-pending: 1 of 1 unplaced pod(s) of priority 0 placed, kube-scheduler's "
                               "preemption and defragmentation (1 pod(s) placed by moving pods of any priority) "
                               "making room by 2 move(s)")]


def _pinned() -> list:
    """h10 is a bare pod (no controller: the policy keeps it): g1 can free one GPU, too few. g2 and g3
    (three movable pods each, all three to move) tie; g2 comes first: h20 goes to the most allocated
    node with a free GPU, g3, then h21 and h22 to g1."""
    objs = gpu_nodes(2, 3, 3)
    objs[3] = pod("h10").priority(100).req(cpu="100m", **{GPU: "1"}).on("g1")
    return [*objs, big()]


def _stuck() -> list:
    """big (2 GPUs, priority 50) on g1 would preempt h10 (priority 0), which its node selector keeps on
    g1: preemption finds no victim that can move. Defragmentation chooses on g1 the least important pod
    first, h10, which cannot move; chosen again without it, h12 (kept last of the two of priority 100)
    moves to g2's free GPU."""
    objs = gpu_nodes(3, 3)
    objs[2] = owned("h10", 0).set("spec.nodeSelector", {"slot": "g1"}).on("g1")
    return [*objs, big(2, 50)]


def _gpu_heavy() -> list:
    """g1 is full: c (2 GPUs, listed first), a and b (1 GPU each), all alike but for the GPUs; g2 has 4
    GPUs free but too little cpu for big (2 GPUs, 2 cpu). Put back smaller first (GPUs counted), a and
    b stay and c alone moves to g2; by cpu and memory alone the three tie and c, first, would stay,
    moving a and b."""
    return [node("g1").alloc(**{GPU: "4"}), node("g2").alloc(**{GPU: "4"}), owned("c", gpus=2).on("g1"),
            owned("a").on("g1"), owned("b").on("g1"), pod("anchor").req(cpu="3800m").on("g2"),
            owned("big", 0, 2).req(cpu="2", **{GPU: "2"})]


@pytest.mark.parametrize("objs,moves,stays", [
    (_pinned(), {"big": "g2", "h20": "g3", "h21": "g1", "h22": "g1"}, "h10"),
    (_stuck(), {"big": "g1", "h12": "g2"}, "h10"),
    (_gpu_heavy(), {"big": "g1", "c": "g2"}, "a"),
], ids=["a pod the policy keeps is never moved: three pods of another node move instead",
        "a pod with no other node to go to is not chosen: a more important one moves instead",
        "one 2-GPU pod moves rather than two 1-GPU pods"])
def test_defragmentation_moves_only_pods_that_may_leave_and_have_somewhere_to_go(objs, moves, stays):
    state = state_of(*objs)
    out, _ = _start(state)
    assert _moves(state, out) == moves and stays not in _moves(state, out)
    assert not check_placement(state, default_config(), out)


def _selectors() -> list:
    """4 GPUs free (2 + 1 + 1), but every pod's node selector keeps it on its node."""
    objs = gpu_nodes(2, 3, 3)
    return [o.set("spec.nodeSelector", {"slot": o["spec"]["nodeName"]}) if o.get("kind") == "Pod" else o
            for o in objs] + [big()]


@pytest.mark.parametrize("objs", [
    [*gpu_nodes(2, 3, 4), big()],
    _selectors(),
    [*gpu_nodes(2, 3, 3), big(5)],
], ids=["three GPUs free in the whole cluster leave a 4-GPU pod pending",
        "pods that could make room but have no other node to go to leave it pending",
        "a pod larger than any node stays pending"])
def test_nothing_moves_when_nothing_can_make_room(objs):
    state = state_of(*objs)
    out, defragmented = _start(state)
    assert np.array_equal(out, state.pod_node) and defragmented == []
    starts = GoalStarts(state, default_config(), [Goal.FIT_PENDING], EvictionPolicy(),
                        EvictionPolicy().verdicts(state).may_leave)
    assert starts.start(TierKey.parse("placed[priority=0]"), state.pod_node, np.ones(len(state.pods), dtype=bool)) is None


def replica(k: int):  # type: ignore[no-untyped-def]
    """A replica of one 4-GPU ReplicaSet of priority 0 (identical pods but for the name)."""
    return pod(f"big-{k}").set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                             "name": "big", "uid": "big", "controller": True}]) \
        .label(app="big").priority(0).req(cpu="100m", **{GPU: "4"})


@pytest.mark.parametrize("held,placed,moves", [
    ((1, 1, 3, 3), {"big-0": "g1", "big-1": "g2"}, {"h10": "g3", "h20": "g4"}),
    ((2, 3, 3, 3), {"big-0": "g1"}, {"h10": "g2", "h11": "g3"}),
], ids=["two replicas each get a node emptied of its one pod", "the second replica stays pending once no room is left"])
def test_replicas_are_placed_one_by_one_while_moves_make_room(held, placed, moves):
    state = state_of(*gpu_nodes(*held), replica(0), replica(1))
    out, defragmented = _start(state)
    assert _moves(state, out) == {**placed, **moves}  # a replica left pending is not listed
    assert len(defragmented) == len(placed)


def test_a_start_that_leaves_a_pod_homeless_or_breaks_a_filter_is_not_offered():
    state = state_of(*gpu_nodes(2, 3, 3), big())
    g1, big_row = state.node_index["g1"], state.pod_index["default/big"]
    homeless = state.pod_node.copy()
    homeless[big_row], homeless[state.pod_index["default/h10"]] = g1, -1
    assert start_breaks(state, default_config(), state.pod_node, homeless) == "default/h10 left without a node"
    crowded = state.pod_node.copy()
    crowded[big_row] = g1  # beside h10 and h11: six GPUs on a 4-GPU node
    assert "default/big on g1: NodeResourcesFit" in (start_breaks(state, default_config(), state.pod_node, crowded) or "")
    out, _ = _start(state)
    assert start_breaks(state, default_config(), state.pod_node, out) is None


def test_a_fit_pending_plan_places_the_pod_with_two_moves_each_predicted_on_its_target():
    """As above, with a 3-cpu bare pod pinning g1: once h10 and h11 leave it, g1 is still the most
    allocated node, so kube-scheduler's LeastAllocated sends their replacements (queued before big,
    which they outrank) to g2 and g3, not back to g1."""
    state = state_of(*gpu_nodes(2, 3, 3), pod("anchor").req(cpu="3").on("g1"), big())
    plan = plan_reschedule(state, default_config(), "fit-pending", time_limit=10)
    assert plan.before.pending_placed == 0 and plan.after.pending_placed == 1
    assert plan.staging.final["default/big"] == "g1"
    moves = [m for w in plan.staging.waves for m in w.moves]
    assert sorted(m.key for m in moves) == ["default/h10", "default/h11"] and plan.moves == 2
    assert all(m.source == "g1" and m.predicted == m.target != m.source for m in moves) and plan.consistent
    assert sorted(m.target for m in moves) == ["g2", "g3"]
    assert any("defragmentation (1 pod(s) placed" in n for n in plan.staging.notes)


@st.composite
def gpu_clusters(draw):  # type: ignore[no-untyped-def]
    """2-4 GPU nodes each holding 1-3 GPUs' worth of 1- and 2-GPU pods, mostly of priority 100 (some
    bare, kept by the policy; some pinned to their node by a selector), and one to three pending pods
    of 4 GPUs, mostly of priority 0: every node holds a little, so preemption often finds no victim
    and the start defragments (about half the examples)."""
    n = draw(st.integers(2, 4))
    objs: list = [node(f"g{i}").alloc(**{GPU: "4"}).label(slot=f"g{i}") for i in range(n)]
    j = 0
    for where in range(n):
        used, target = 0, draw(st.integers(1, 3))
        while used < target:
            gpus = min(draw(st.sampled_from([1, 1, 2])), target - used)
            used, j = used + gpus, j + 1
            b = owned(f"r{j}", draw(st.sampled_from([0, 100, 100])), gpus) if draw(st.integers(0, 4)) else \
                pod(f"r{j}").req(cpu="100m", **{GPU: str(gpus)})
            if not draw(st.integers(0, 4)):
                b = b.set("spec.nodeSelector", {"slot": f"g{where}"})
            objs.append(b.on(f"g{where}"))
    for k in range(draw(st.integers(1, 3))):
        objs.append(owned(f"q{k}", draw(st.sampled_from([0, 0, 50])), 4))
    return state_of(*objs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_clusters())
def test_the_start_moves_only_pods_that_may_leave_leaves_none_homeless_and_passes_every_filter(state):
    out, _ = _start(state)
    may_leave = EvictionPolicy().verdicts(state).may_leave
    running = state.pod_node >= 0
    assert (out[running] >= 0).all()
    assert not (running & ~may_leave & (out != state.pod_node)).any()
    assert not check_placement(state, default_config(), out)
    assert np.array_equal(out, _start(state)[0])
