"""The fewest waves under several budgets at once (optisched/reschedule/wave_pack.py): hand-built
plans where first-fit in queue order takes more waves than needed, and properties of the packing."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.preemption.pdb import PDBLedger
from optisched.profile import default_config
from optisched.reschedule import Budgets, stage
from optisched.reschedule.wave_pack import Flows, fewest_waves, first_fit

CFG = default_config()


def _pdb(name: str, key: str) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {key: "1"}}, "maxUnavailable": 1}}


def _mover(name: str, owner: str, prio: int, **labels: str):  # type: ignore[no-untyped-def]
    return pod(name).req(cpu="500m").priority(prio).label(**labels).set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]).on("n1")


# a, d first in the queue (priority 10); each neighbour pair on the path a-b-c-d shares a budget of one
CHAINS = [
    ("three budgets of one disruption over a-b, b-c and c-d take two waves, not three",
     [_mover("a", "ra", 10, x="1"), _mover("b", "rb", 0, x="1", y="1"), _mover("c", "rc", 0, y="1", z="1"),
      _mover("d", "rd", 10, z="1"), _pdb("x", "x"), _pdb("y", "y"), _pdb("z", "z")], None),
    ("a workload cap over a-b and c-d and a budget over b-c take two waves, not three",
     [_mover("a", "o1", 10), _mover("b", "o1", 0, y="1"), _mover("c", "o2", 0, y="1"), _mover("d", "o2", 10),
      _pdb("y", "y")], "1"),
]


@pytest.mark.parametrize("objs,per_workload", [c[1:] for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_several_budgets_pack_into_the_fewest_waves(objs, per_workload):
    """Four pods leave n1 (cordoned) for n2. First-fit in queue order takes {a, d}, then {b}, then {c};
    the packing takes {a, c}, {b, d}, proves two minimal, and both keep every budget in every wave."""
    state = state_of(node("n1"), node("n2"), *objs)
    target = np.full(len(state.pods), state.node_index["n2"])
    budgets = Budgets(max_unavailable_per_workload=per_workload)
    old = stage(state, CFG, target, {}, budgets, frozenset({"n1"}), pack=False)
    new = stage(state, CFG, target, {}, budgets, frozenset({"n1"}))
    assert [sorted(m.key[-1] for m in w.moves) for w in old.waves] == [["a", "d"], ["b"], ["c"]]
    assert sorted(sorted(m.key[-1] for m in w.moves) for w in new.waves) == [["a", "c"], ["b", "d"]]
    assert new.minimal is True and old.minimal is False
    assert all(m.predicted == "n2" for w in new.waves for m in w.moves)
    _assert_within_budgets(state, new, budgets)


def _assert_within_budgets(state, staging, budgets):  # type: ignore[no-untyped-def]
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    for w in staging.waves:
        for b in range(len(ledger.names)):
            assert sum(1 for m in w.moves if b in ledger.budgets_of(m.pod)) <= ledger.allowed[b]
        if budgets.max_unavailable_per_workload == "1":
            owners = [state.pods[m.pod].metadata.owner_references[0].name for m in w.moves]
            assert len(owners) == len(set(owners))


def _flows(n: int, source=None, target=None, req=None, room=None) -> Flows:  # type: ignore[no-untyped-def]
    return Flows(np.asarray(source if source is not None else [0] * n), np.asarray(target if target is not None else [1] * n),
                 np.asarray(req if req is not None else [[1]] * n), np.asarray(room if room is not None else [[0], [100]]))


def test_a_swap_between_two_full_nodes_goes_in_one_wave():
    """x leaves n0 for n1 and y leaves n1 for n0, both full: each needs the other's room, so only one
    wave for both lands them (a wave's evictions free room for its own replacements)."""
    flows = Flows(np.array([0, 1]), np.array([1, 0]), np.array([[2], [2]]), np.array([[0], [0]]))
    # a budget per move keeps first-fit at one wave too; the capacity rule must not split them
    schedule = fewest_waves([[0], [1]], [1, 1], flows)
    assert schedule.wave_of == [0, 0] and schedule.proven


def test_capacity_orders_a_move_after_the_one_that_makes_room():
    """Two moves share a budget of one: p goes n0 -> n1, which has room only once q has left n1 for n2.
    First-fit in queue order (p first) needs a replay to find that; the packing puts q first."""
    flows = Flows(np.array([0, 1]), np.array([1, 2]), np.array([[2], [2]]), np.array([[0], [0], [4]]))
    schedule = fewest_waves([[0], [0]], [1], flows)
    assert schedule.wave_of == [1, 0] and schedule.proven


@st.composite
def _budgeted(draw):  # type: ignore[no-untyped-def]
    moves = draw(st.integers(1, 12))
    budgets = draw(st.integers(1, 4))
    limits = draw(st.lists(st.integers(0, 3), min_size=budgets, max_size=budgets))
    groups = [sorted(set(draw(st.lists(st.integers(0, budgets - 1), max_size=3)))) for _ in range(moves)]
    return groups, limits


@settings(max_examples=60, deadline=None)
@given(_budgeted())
def test_packed_waves_keep_every_budget_and_are_never_more_than_first_fit(case):
    groups, limits = case
    flows = Flows(np.zeros(len(groups), dtype=np.int64), np.ones(len(groups), dtype=np.int64),
                  np.ones((len(groups), 1), dtype=np.int64), np.array([[0], [100]]))
    packed = fewest_waves(groups, limits, flows, seconds=2)
    old = first_fit(groups, limits, len(groups))
    possible = [m for m, gs in enumerate(groups) if all(limits[g] > 0 for g in gs)]
    waves = {packed.wave_of[m] for m in possible}
    assert max(waves, default=-1) <= max([old[m] for m in possible], default=-1)
    for w in waves:
        for g, limit in enumerate(limits):
            assert sum(1 for m in possible if packed.wave_of[m] == w and g in groups[m]) <= limit


@st.composite
def _drifted(draw):  # type: ignore[no-untyped-def]
    """Two to four nodes, pods of three workloads, one to three PodDisruptionBudgets of one disruption
    that overlap (a pod may be covered by several), and a target that moves some pods to other nodes."""
    n = draw(st.integers(2, 4))
    objs: list = [node(f"n{i}", cpu="4") for i in range(n)]
    for j in range(draw(st.integers(2, 9))):
        owner = draw(st.sampled_from(["web", "api", "db"]))
        labels = {k: "1" for k in draw(st.lists(st.sampled_from(["x", "y", "z"]), max_size=2))}
        objs.append(pod(f"p{j}").req(cpu="500m").priority(draw(st.sampled_from([0, 10]))).label(app=owner, **labels)
                    .set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                                       "uid": owner, "controller": True}]).on(f"n{draw(st.integers(0, n - 1))}"))
    objs += [_pdb(k, k) for k in draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3, unique=True))]
    state = state_of(*objs)
    target = np.array([draw(st.integers(0, n - 1)) if draw(st.booleans()) else int(t) for t in state.pod_node])
    return state, target


@settings(max_examples=25, deadline=None)
@given(_drifted(), st.sampled_from([None, "1"]))
def test_staged_waves_keep_every_budget_and_are_never_more_than_first_fit(case, per_workload):
    """On random plans, the packed staging keeps every budget in every wave, every replacement it
    emits is predicted on its target, and for the same moves it takes no more waves than first-fit
    staging (ordering moves by the room they make may keep a move first-fit has to drop)."""
    state, target = case
    budgets = Budgets(max_unavailable_per_workload=per_workload)
    old = stage(state, CFG, target, {}, budgets, pack=False)
    new = stage(state, CFG, target, {}, budgets)
    _assert_within_budgets(state, new, budgets)
    assert all(m.predicted == m.target for w in new.waves for m in w.moves)
    if {m.key for w in new.waves for m in w.moves} == {m.key for w in old.waves for m in w.moves}:
        assert len(new.waves) <= len(old.waves)
