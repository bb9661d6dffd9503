"""Which PodDisruptionBudgets cover a pod in preemption (``filterPodsWithPDBViolation``)."""
from __future__ import annotations

import pytest
from builders import node, pod, state_of

from optisched.preemption.pdb import PDBLedger


def _pdb(name: str, selector: dict | None, namespace: str = "default", max_unavailable: int = 1) -> dict:
    spec: dict = {"maxUnavailable": max_unavailable}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


BUDGETS = [
    _pdb("by-label", {"matchLabels": {"app": "web"}}),
    _pdb("by-two-labels", {"matchLabels": {"app": "web", "tier": "front"}}),
    _pdb("by-expression", {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]}),
    _pdb("not-in", {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
    _pdb("empty-selector", {}),
    _pdb("nil-selector", None),
    _pdb("other-namespace", {"matchLabels": {"app": "web"}}, namespace="other"),
]


@pytest.mark.parametrize("labels,covered", [
    ({"app": "web", "tier": "front"}, ["by-label", "by-two-labels", "by-expression"]),
    ({"app": "web"}, ["by-label"]),
    ({"app": "db", "tier": "back"}, ["by-expression", "not-in"]),
    ({"team": "a"}, ["not-in"]),
    ({}, []),
], ids=["a pod every label and expression budget selects", "one label of two is not enough",
        "expressions alone select", "NotIn selects pods without the key", "a pod without labels is covered by none"])
def test_budgets_covering_a_pod(labels, covered):
    state = state_of(node("n"), pod("p").label(**labels).on("n"), *BUDGETS)
    ledger = PDBLedger(state, [True])
    assert [ledger.names[i].split("/")[1] for i in ledger.budgets_of(0)] == covered


def test_victims_violate_once_a_budget_has_no_disruption_left():
    """maxUnavailable 1 allows one eviction: the second pod the budget covers on the node violates it."""
    pods = [pod(f"w{i}").label(app="web").on("n") for i in range(3)]
    state = state_of(node("n"), *pods, _pdb("web", {"matchLabels": {"app": "web"}}))
    ledger = PDBLedger(state, [True, True, True])
    assert ledger.split_by_violation([0, 1, 2]) == ([1, 2], [0])
