"""LowNodeUtilization and HighNodeUtilization, rows translated from kubernetes-sigs/descheduler v0.34.0
``pkg/framework/plugins/nodeutilization/lownodeutilization_test.go`` (TestLowNodeUtilization,
TestLowNodeUtilizationWithTaints) and ``highnodeutilization_test.go``: inputs and expected evictions."""
from __future__ import annotations

import pytest
from helpers.descheduler import critical, evicted, mirror, policy, tnode, tpod

NF = {"nodeFit": True}  # the upstream tests build their DefaultEvictor with NodeFit: true


def _base(n3_unschedulable: bool = True, n2_labels: dict | None = None) -> list:
    """The shared fixture: n1 holds p1..p8 (p6 DaemonSet, p7 mirror, p8 critical), n2 holds p9."""
    n2 = tnode("n2", 4000, 3000, 10)
    if n2_labels:
        n2.labels(n2_labels)
    nodes = [tnode("n1", 4000, 3000, 9), n2]
    if n3_unschedulable:
        nodes.append(tnode("n3", 4000, 3000, 10).unschedulable())
    return nodes + [tpod("p6", 400, "n1", "DaemonSet"), mirror(tpod("p7", 400, "n1", "Node")),
                    critical(tpod("p8", 400, "n1", None)), tpod("p9", 400, "n2")]


CPU_PODS = {"thresholds": {"cpu": 30, "pods": 30}, "targetThresholds": {"cpu": 50, "pods": 50}}
WEST = {"nodeSelector": {"datacenter": "west"}}
WEST_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "datacenter", "operator": "In", "values": ["west"]}]}]}}}


def _five(**kw) -> list:  # type: ignore[no-untyped-def]
    return [tpod(f"p{i}", 400, "n1", **kw) for i in range(1, 6)]


def _best_effort() -> list:
    pods = []
    for i in range(1, 6):
        p = tpod(f"p{i}", 400, "n1")
        if i != 3:
            p["spec"]["containers"][0].pop("resources")
        pods.append(p)
    return pods


def _ext_nodes(n2_has: bool) -> list:
    n1, n2 = tnode("n1", 4000, 3000, 9).alloc(**{"example.com/foo": "8"}), tnode("n2", 4000, 3000, 10)
    if n2_has:
        n2.alloc(**{"example.com/foo": "8"})
    return [n1, n2, tnode("n3", 4000, 3000, 10).unschedulable()]


def _ext(name: str, on: str, owner: str | None = "ReplicaSet"):  # type: ignore[no-untyped-def]
    p = tpod(name, 0, on, owner)
    p["spec"]["containers"][0]["resources"]["requests"]["example.com/foo"] = "1"
    return p


EXT = {"thresholds": {"pods": 30, "example.com/foo": 30}, "targetThresholds": {"pods": 50, "example.com/foo": 50}}
LOW_ROWS = [
    pytest.param(_base()[:3] + [tpod("p1", 400, "n1", "DaemonSet"), tpod("p9", 400, "n2")], CPU_PODS, 0,
                 id="no evictable pods, nothing is evicted"),
    pytest.param(_base() + _five(), CPU_PODS, 4, id="without priorities four pods leave until n2 is at its target"),
    pytest.param(_base() + _five(ns="namespace1"), {**CPU_PODS, "evictableNamespaces": {"exclude": ["namespace1"]}},
                 0, id="excluded namespaces are not evicted"),
    pytest.param(_base() + [tpod("p1", 400, "n1").priority(10000), tpod("p2", 400, "n1").priority(10000),
                            tpod("p3", 400, "n1").priority(10000), tpod("p4", 400, "n1").priority(10000),
                            tpod("p5", 400, "n1").priority(1000)], CPU_PODS, 4,
                 id="with priorities four pods leave, the low-priority one included"),
    pytest.param(_base() + _best_effort(), CPU_PODS, 4, id="best-effort pods leave before burstable ones"),
    pytest.param(_ext_nodes(True) + [_ext(f"p{i}", "n1") for i in range(1, 6)] + [_ext("p6", "n1"),
                 mirror(_ext("p7", "n1", "Node")), critical(_ext("p8", "n1", None)), _ext("p9", "n2")], EXT, 3, id="an extended resource runs out after three evictions"),
    pytest.param(_ext_nodes(False) + [_ext("p1", "n1"), tpod("p9", 0, "n2")], EXT, 0,
                 id="no eviction when the underutilized node lacks the extended resource"),
    pytest.param([tnode("n1", 4000, 3000, 9), tnode("n2", 4000, 3000, 10).unschedulable()] + _five() +
                 [tpod("p6", 400, "n1", "DaemonSet")], CPU_PODS, 0,
                 id="the only other node is unschedulable, nothing is evicted"),
    pytest.param(_base(False, {"datacenter": "east"}) + _five()[:3] +
                 [tpod("p4", 400, "n1").set("spec.nodeSelector", WEST["nodeSelector"]),
                  tpod("p5", 400, "n1").set("spec.nodeSelector", WEST["nodeSelector"])], CPU_PODS, 3,
                 id="pods whose node selector excludes the other node stay"),
    pytest.param(_base(False, {"datacenter": "east"}) + _five()[:3] +
                 [tpod("p4", 400, "n1").set("spec.affinity", WEST_AFFINITY),
                  tpod("p5", 400, "n1").set("spec.affinity", WEST_AFFINITY)], CPU_PODS, 3,
                 id="pods whose node affinity excludes the other node stay"),
    pytest.param(_base() + _five(), {"thresholds": {"cpu": 5, "pods": 5}, "targetThresholds": {"cpu": 5, "pods": 5},
                                     "useDeviationThresholds": True}, 2,
                 id="deviation thresholds evict two pods around the mean"),
]


@pytest.mark.parametrize(("objs", "args", "expected"), LOW_ROWS)
def test_low_node_utilization_upstream_rows(objs: list, args: dict, expected: int) -> None:
    assert len(evicted(objs, policy("LowNodeUtilization", args, evictor=NF))) == expected


def test_best_effort_pods_are_the_ones_evicted() -> None:
    assert evicted(_base() + _best_effort(), policy("LowNodeUtilization", CPU_PODS, evictor=NF)) == \
        ["p1", "p2", "p4", "p5"]


def _taint_case(nodes: list, last) -> list:  # type: ignore[no-untyped-def]
    return nodes + [tpod(f"pod-{i}", 200, "n1") for i in range(1, 8)] + [last]


N1, N2, N3 = tnode("n1", 2000, 3000, 10), tnode("n2", 1000, 3000, 10), tnode("n3", 1000, 3000, 10)
N3T = tnode("n3", 1000, 3000, 10).taint("key", "value")
TOL = tpod("tolerate-pod", 200, "n1")
TOL["spec"]["tolerations"] = [{"key": "key", "value": "value", "operator": "Equal"}]
TAINT_ROWS = [
    pytest.param(_taint_case([N1, N2, N3], tpod("pod-8", 200, "n1")) + [tpod("pod-9", 200, "n2")], {}, 1,
                 id="no taints, one eviction under a per-node limit of one"),
    pytest.param(_taint_case([N1, N3T], tpod("pod-8", 200, "n1")) + [tpod("pod-9", 200, "n3")], {}, 0,
                 id="no pod tolerates the underutilized node's taint"),
    pytest.param(_taint_case([N1, N3T], TOL) + [tpod("pod-9", 200, "n3")], {}, 1,
                 id="the pod that tolerates the taint is evicted"),
    pytest.param(_taint_case([N1, N3T], TOL) + [tpod("pod-9", 200, "n3")], {"maxNoOfPodsToEvictTotal": 0}, 0,
                 id="a total limit of zero evicts nothing"),
]


@pytest.mark.parametrize(("objs", "top", "expected"), TAINT_ROWS)
def test_low_node_utilization_with_taints(objs: list, top: dict, expected: int) -> None:
    pol = policy("LowNodeUtilization", {"thresholds": {"pods": 20}, "targetThresholds": {"pods": 70}}, evictor=NF,
                 maxNoOfPodsToEvictPerNode=1, **top)
    assert len(evicted(objs, pol)) == expected
