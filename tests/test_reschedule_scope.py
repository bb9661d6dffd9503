"""The nodes a goal takes pods from (optisched/reschedule/scope.py): the target model is built over the
pods there only."""
from __future__ import annotations

import pytest
from builders import node, pod, state_of

from optisched.policy.eviction import EvictionPolicy
from optisched.reschedule.goals import Goal
from optisched.reschedule.scope import narrowed


def _owned(name: str, on: str, kind: str = "ReplicaSet"):  # type: ignore[no-untyped-def]
    return pod(name).req(cpu="100m").set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": kind, "name": "w", "uid": "w", "controller": True}]).on(on)


CLUSTER = [node("n1"), node("n2"), node("n3"), _owned("a", "n1"), pod("bare").req(cpu="100m").on("n1"),
           _owned("b", "n2"), _owned("ds", "n2", kind="DaemonSet"), _owned("c", "n3")]
CASES = [
    ("consolidate takes pods only from nodes it can empty: a bare pod pins n1, a DaemonSet pod pins nothing",
     [Goal.CONSOLIDATE], {}, {"n2", "n3"}),
    ("repair takes pods only from the nodes of the pods it repairs", [Goal.REPAIR], {5: "NodeAffinity"}, {"n2"}),
    ("repair with nothing to repair takes no pods", [Goal.REPAIR], {}, set()),
    ("balance takes pods from every node", [Goal.BALANCE], {}, None),
    ("fit-pending takes pods from every node, whatever goal follows", [Goal.FIT_PENDING, Goal.CONSOLIDATE], {}, None),
]


@pytest.mark.parametrize("goals,bad,nodes", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_goal_narrows_the_nodes_pods_leave(goals, bad, nodes):
    state = state_of(*CLUSTER)
    bad = {state.pod_index[f"default/{'b' if k == 5 else k}"]: v for k, v in bad.items()}
    got = narrowed(state, EvictionPolicy(), goals, bad).only_nodes
    assert (set(got) if got is not None else None) == nodes


def test_a_narrowed_goal_keeps_the_nodes_the_user_narrowed_to():
    state = state_of(*CLUSTER)
    policy = narrowed(state, EvictionPolicy(only_nodes=frozenset({"n3", "n1"})), [Goal.CONSOLIDATE], {})
    assert policy.only_nodes == {"n3"}
