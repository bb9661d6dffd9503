"""RemovePodsViolatingTopologySpreadConstraint: rows in the shape of kubernetes-sigs/descheduler v0.34.0
``removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint_test.go`` (domain sizes before, pods
moved), with the counts worked out by hand from ``balanceDomains``."""
from __future__ import annotations

import pytest
from helpers.descheduler import evicted, policy, tnode, tpod

ZONE = "topology.kubernetes.io/zone"


def _spread(max_skew: int = 1, when: str = "DoNotSchedule") -> list[dict]:
    return [{"maxSkew": max_skew, "topologyKey": ZONE, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"foo": "bar"}}}]


def _cluster(sizes: list[int], max_skew: int = 1, when: str = "DoNotSchedule", **kw) -> list:  # type: ignore[no-untyped-def]
    """One node per zone (n1 in zone1, ...), sizes[k] spread pods on node k+1."""
    objs: list = [tnode(f"n{k + 1}", 4000, 8 << 30, 110).zone(f"zone{k + 1}") for k in range(len(sizes))]
    for k, size in enumerate(sizes):
        for i in range(size):
            p = tpod(f"pod-{k + 1}-{i}", 100, f"n{k + 1}").label(foo="bar")
            objs.append(p.set("spec.topologySpreadConstraints", _spread(max_skew, when)))
    return objs


ROWS = [
    pytest.param(_cluster([3, 1]), {}, 1, id="two domains 3 and 1 with maxSkew 1 move one pod"),
    pytest.param(_cluster([2, 0]), {}, 1, id="two domains 2 and 0 move one pod"),
    pytest.param(_cluster([4, 0]), {}, 2, id="two domains 4 and 0 move two pods"),
    pytest.param(_cluster([5, 2]), {}, 1, id="two domains 5 and 2 move one pod to 4 and 3"),
    pytest.param(_cluster([2, 1]), {}, 0, id="two domains within the skew move nothing"),
    pytest.param(_cluster([4, 0], max_skew=3), {}, 1, id="maxSkew 3 with 4 and 0 moves one pod"),
    pytest.param(_cluster([6, 0, 0]), {}, 4, id="three domains 6 0 0 move four pods to 2 2 2"),
    pytest.param(_cluster([5, 1, 0]), {}, 3, id="three domains 5 1 0 move three pods"),
    pytest.param(_cluster([3, 0], when="ScheduleAnyway"), {}, 0,
                 id="a ScheduleAnyway constraint is not balanced by default"),
    pytest.param(_cluster([3, 0], when="ScheduleAnyway"), {"constraints": ["ScheduleAnyway"]}, 1,
                 id="a ScheduleAnyway constraint is balanced when asked"),
]


@pytest.mark.parametrize(("objs", "args", "expected"), ROWS)
def test_topology_spread_rows(objs: list, args: dict, expected: int) -> None:
    assert len(evicted(objs, policy("RemovePodsViolatingTopologySpreadConstraint", args))) == expected


def test_pods_with_a_node_selector_stay_while_plain_ones_move() -> None:
    objs = _cluster([3, 0])
    objs[2]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}  # pod-1-0 may only run on n1 ...
    objs[2]["spec"]["topologySpreadConstraints"][0]["nodeAffinityPolicy"] = "Ignore"  # ... yet n2 still counts
    assert evicted(objs, policy("RemovePodsViolatingTopologySpreadConstraint")) == ["pod-1-2"]


def test_node_fit_keeps_a_pod_the_small_domain_cannot_hold() -> None:
    objs = _cluster([3, 0])
    objs[1]["status"]["allocatable"]["cpu"] = "50m"
    assert evicted(objs, policy("RemovePodsViolatingTopologySpreadConstraint")) == []
    assert len(evicted(objs, policy("RemovePodsViolatingTopologySpreadConstraint",
                                    {"topologyBalanceNodeFit": False}))) == 1
