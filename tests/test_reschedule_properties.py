"""Property: on random clusters every emitted plan is scheduler-consistent wave by wave, keeps each
PodDisruptionBudget and per-workload budget within its limit at every wave, and leaves no running pod
without a node. The check replays the emitted waves afresh (greedy mode after each wave's evictions)."""
from __future__ import annotations

import numpy as np
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.plans.landing import predict_landing
from optisched.preemption.pdb import PDBLedger
from optisched.profile import default_config
from optisched.reschedule import Budgets, plan_reschedule
from optisched.reschedule.waves import state_at


@st.composite
def clusters(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 4))
    objs: list = [node(f"n{i}", cpu="4") for i in range(n)]
    if draw(st.booleans()):  # a taint added after the pods started: repair has something to move
        objs[0] = objs[0].taint("maintenance", effect="NoSchedule")
    free = [4000] * n
    for j in range(draw(st.integers(2, 8))):
        owner = draw(st.sampled_from(["web", "api", "db"]))
        cpu = draw(st.sampled_from([500, 1000, 1500]))
        b = pod(f"p{j}").req(cpu=f"{cpu}m").label(app=owner).set(
            "metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                          "uid": owner, "controller": True}])
        if owner == "db":  # replicas that must not share a node (drifted: they may already)
            b = b.apart("db")
        where = draw(st.one_of(st.just(-1), st.integers(0, n - 1), st.integers(0, n - 1)))
        if where >= 0 and free[where] >= cpu:
            free[where] -= cpu
            b = b.on(f"n{where}")
        objs.append(b)
    if draw(st.booleans()):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}})
    return state_of(*objs)


def _replay_waves(state, plan) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The emitted waves replayed from the input: each replacement must land on its target."""
    config = default_config()
    cordoned = frozenset(plan.staging.cordoned) | frozenset(plan.staging.held)  # held: cordoned during the plan
    current = state.pod_node.copy()
    for wave in plan.staging.waves:
        at = state_at(state, current, cordoned)
        node_of = np.array([current[state.pod_index[p.key]] for p in at.pods], dtype=np.int64)
        for m in wave.moves:
            node_of[at.pod_index[m.key]] = at.node_index[m.target]
        landing = predict_landing(at, config, node_of, [m.key for m in wave.moves])
        assert not landing.preempted
        for m in wave.moves:
            assert landing.landed[m.key] == m.target != m.source
        final = landing.replay.placements()
        current = np.array([state.node_index[final[p.key]] if final.get(p.key) else -1 for p in state.pods])
    return current


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(["consolidate", "fit-pending", "balance", "repair", "consolidate,balance"]),
       st.sampled_from([None, "1"]))
def test_every_plan_is_consistent_within_budgets_and_homes_every_running_pod(state, goal, per_workload):
    plan = plan_reschedule(state, default_config(), goal, Budgets(max_unavailable_per_workload=per_workload),
                           time_limit=1)
    ledger = PDBLedger(state, (state.pod_node >= 0).tolist())
    for wave in plan.staging.waves:
        for b, name in enumerate(ledger.names):
            assert sum(1 for m in wave.moves if b in ledger.budgets_of(m.pod)) <= ledger.allowed[b]
        if per_workload:
            owners = [state.pods[m.pod].metadata.labels["app"] for m in wave.moves]
            assert len(owners) == len(set(owners))
    assert plan.consistent
    current = _replay_waves(state, plan)
    running = state.pod_node >= 0
    assert (current[running] >= 0).all()
    assert all(plan.staging.final[state.pods[p].key] is not None for p in np.flatnonzero(running).tolist())
