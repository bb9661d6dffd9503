"""Taint-based eviction: a NoExecute taint deletes the pods that do not tolerate it, at once or after their
tolerationSeconds, ignoring PodDisruptionBudgets; the replacements land elsewhere."""
from __future__ import annotations

import pytest
from builders import state_of
from helpers.descheduler import CFG, tnode, tpod

from optisched.errors import InputError
from optisched.whatif.taint import parse_taint, run_taint

TAINT = parse_taint("node.kubernetes.io/unreachable:NoExecute")


def _tol(p, seconds: int | None):  # type: ignore[no-untyped-def]
    t = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    p["spec"]["tolerations"] = [t]
    return p


def _cluster() -> list:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    return [tnode("n1", 4000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110), pdb,
            tpod("web-1", 100, "n1").label(app="web"), tpod("web-2", 100, "n1").label(app="web"),
            _tol(tpod("slow", 100, "n1"), 300), _tol(tpod("stays", 100, "n1"), None), tpod("other", 100, "n2")]


def test_timeline_landings_and_broken_budget() -> None:
    out = run_taint(state_of(*_cluster()), CFG, ["n1"], TAINT)
    assert out.timeline == {0: ["default/web-1", "default/web-2"], 300: ["default/slow"]}
    # slow's replacement tolerates the taint (for 300s), so kube-scheduler may put it back on n1, where it
    # will be deleted again after 300s; LeastAllocated prefers the emptier n1
    assert out.landed == {"default/web-1": "n2", "default/web-2": "n2", "default/slow": "n1"}
    assert out.broken_budgets == {"default/web": 1}


@pytest.mark.parametrize("text", ["k=v:NoSchedule", "k=v", ":NoExecute"],
                         ids=["another effect", "no effect", "no key"])
def test_bad_taints_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="is not key"):
        parse_taint(text)
