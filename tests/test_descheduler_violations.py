"""RemovePodsViolatingNodeTaints rows translated from kubernetes-sigs/descheduler v0.34.0
``pkg/framework/plugins/removepodsviolatingnodetaints/node_taint_test.go`` (TestDeletePodsViolatingNodeTaints),
and hand-built rows for RemovePodsViolatingNodeAffinity and RemovePodsViolatingInterPodAntiAffinity with
outcomes worked out from their upstream source."""
from __future__ import annotations

import pytest
from helpers.descheduler import critical, evicted, mirror, policy, tnode, tpod


def _tol(p, key: str, value: str, effect: str = "NoSchedule"):  # type: ignore[no-untyped-def]
    p["spec"]["tolerations"] = [{"key": key, "value": value, "operator": "Equal", "effect": effect}]
    return p


def _p(name: str, on: str, owner: str | None = "Pod"):  # type: ignore[no-untyped-def]
    return tpod(name, 100, on, owner)


def _n(name: str, *taints: tuple[str, str, str]):  # type: ignore[no-untyped-def]
    n = tnode(name, 2000, 3000, 10)
    for k, v, e in taints:
        n.taint(k, v, e)
    return n


T1, TESTING1 = ("testTaint1", "test1", "NoSchedule"), ("testingTaint1", "testing1", "NoSchedule")
P1, P2, P3 = _tol(_p("p1", "n1"), "testTaint1", "test1"), _p("p2", "n1"), _tol(_p("p3", "n1"), "testTaint1", "test1")
P4, P5, P6 = _tol(_p("p4", "n1"), "testTaintX1", "testX1"), _p("p5", "n1"), _p("p6", "n1")
P7 = critical(_p("p7", "n2"))
P8 = _p("p8", "n2", "DaemonSet")
P9 = _p("p9", "n2").set("spec.volumes", [{"name": "s", "hostPath": {"path": "somePath"}}])
P10, P11 = mirror(_p("p10", "n2")), _p("p11", "n2")
P13 = _tol(_p("p13", "n5"), "testTaint0", "test0", "PreferNoSchedule")
P14 = _tol(_p("p14", "n7"), "testTaint1", "test1")
N1, N2 = _n("n1", T1), _n("n2", TESTING1)
N5 = _n("n5", ("testTaint1", "test1", "PreferNoSchedule"))

TAINT_ROWS = [
    pytest.param([P1, P2, P3, N1], {}, {}, {}, 1, id="a pod not tolerating its node's taint is evicted"),
    pytest.param([P1, P3, P4, N1], {}, {}, {}, 1, id="a pod tolerating another taint is evicted"),
    pytest.param([P1, P5, P6, N1], {}, {}, {"maxNoOfPodsToEvictPerNode": 2, "maxNoOfPodsToEvictTotal": 1}, 1,
                 id="the total limit stops at one eviction"),
    pytest.param([P1, P5, P6, N1], {}, {}, {"maxNoOfPodsToEvictPerNode": 1}, 1,
                 id="the per-node limit stops at one eviction"),
    pytest.param([P1, P5, P6, N1], {}, {}, {"maxNoOfPodsToEvictPerNamespace": 1}, 1,
                 id="the per-namespace limit stops at one eviction"),
    pytest.param([P7, P8, P9, P10, N2], {}, {}, {}, 0,
                 id="critical, DaemonSet, local-storage and mirror pods stay"),
    pytest.param([P7, P8, P9, P10, N2], {}, {"evictLocalStoragePods": True}, {}, 1,
                 id="with evictLocalStoragePods the local-storage pod is evicted"),
    pytest.param([P7, P8, P10, P11, N2], {}, {}, {}, 1, id="only the non-critical pod is evicted"),
    pytest.param([P2, P7, P9, P10, N1, N2], {}, {"evictSystemCriticalPods": True}, {}, 2,
                 id="with evictSystemCriticalPods the critical pod is evicted too"),
    pytest.param([P1, P2, P3, N1, N2], {}, {"nodeFit": True}, {}, 0,
                 id="under nodeFit a pod that tolerates no other node stays"),
    pytest.param([P1, P2, P3, N1, tnode("n4", 2000, 3000, 10).unschedulable()], {}, {"nodeFit": True}, {}, 0,
                 id="under nodeFit a pod whose only other node is unschedulable stays"),
    pytest.param([P13, N5], {}, {}, {}, 0, id="PreferNoSchedule taints do not count by default"),
    pytest.param([P13, N5], {"includePreferNoSchedule": True}, {}, {}, 1,
                 id="PreferNoSchedule taints count when included"),
    pytest.param([P2, N1], {"excludedTaints": ["excludedTaint1", "testTaint1"]}, {}, {}, 0,
                 id="a taint excluded by key does not count"),
    pytest.param([P2, N1], {"excludedTaints": ["testTaint1=test1"]}, {}, {}, 0,
                 id="a taint excluded by key and value does not count"),
    pytest.param([P2, N1], {"excludedTaints": ["testTaint1=test2"]}, {}, {}, 1,
                 id="an exclusion with another value does not match"),
    pytest.param([P2, critical(_p("p7", "n2")), P9, P10, N1,
                  tnode("n6", 1, 1, 1).taint("testTaint1", "test1", "PreferNoSchedule")],
                 {}, {"evictSystemCriticalPods": True, "nodeFit": True}, {}, 0,
                 id="under nodeFit nothing moves to a node without resources"),
    pytest.param([P1.copy() | {"spec": {**P1["spec"], "nodeName": "n7"}}, _n("n7", T1, TESTING1)],
                 {"includedTaints": ["testTaint1=test1"]}, {}, {}, 0,
                 id="a pod tolerating the included taint stays despite other taints"),
    pytest.param([P1, P2, P4, N1], {"includedTaints": ["testTaint2=test2"]}, {}, {}, 0,
                 id="taints that are not included do not count"),
    pytest.param([P1, P2, P3, N1], {"includedTaints": ["testTaint1=test1"]}, {}, {}, 1,
                 id="only the pod not tolerating the included taint is evicted"),
]


@pytest.mark.parametrize(("objs", "args", "evictor", "top", "expected"), TAINT_ROWS)
def test_node_taints_upstream_rows(objs: list, args: dict, evictor: dict, top: dict, expected: int) -> None:
    pol = policy("RemovePodsViolatingNodeTaints", args, "deschedule", evictor, **top)
    assert len(evicted(objs, pol)) == expected


def test_the_pod_not_tolerating_is_the_one_evicted() -> None:
    assert evicted([P1, P2, P3, N1], policy("RemovePodsViolatingNodeTaints", point="deschedule")) == ["p2"]


REQ = {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}
AFF = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "test-node-type", "operator": "In", "values": ["dedicated"]}]}]}}}
DEDICATED = {"test-node-type": "dedicated"}


def _aff(name: str = "p1", on: str = "n1"):  # type: ignore[no-untyped-def]
    return tpod(name, 100, on).set("spec.affinity", AFF)


AFFINITY_ROWS = [
    pytest.param([_aff(), tnode("n1", 2000, 3000, 10).labels(DEDICATED), tnode("n2", 2000, 3000, 10)], {}, 0,
                 id="a pod on a matching node stays"),
    pytest.param([_aff(), tnode("n1", 2000, 3000, 10), tnode("n2", 2000, 3000, 10).labels(DEDICATED)], {}, 1,
                 id="a pod whose node no longer matches moves to a matching node"),
    pytest.param([_aff(), tnode("n1", 2000, 3000, 10), tnode("n2", 2000, 3000, 10)], {}, 0,
                 id="a pod with no matching node anywhere stays"),
    pytest.param([_aff(), tnode("n1", 2000, 3000, 10), tnode("n2", 50, 3000, 10).labels(DEDICATED)], {}, 0,
                 id="a pod whose matching node lacks room stays"),
    pytest.param([_aff(), tnode("n1", 2000, 3000, 10), tnode("n2", 2000, 3000, 10).labels(DEDICATED)],
                 {"maxNoOfPodsToEvictTotal": 0}, 0, id="a total limit of zero keeps it"),
    pytest.param([tpod("p1", 100, "n1").set("spec.nodeSelector", DEDICATED), tnode("n1", 2000, 3000, 10),
                  tnode("n2", 2000, 3000, 10).labels(DEDICATED)], {}, 1,
                 id="a nodeSelector counts as required affinity"),
]


@pytest.mark.parametrize(("objs", "top", "expected"), AFFINITY_ROWS)
def test_node_affinity_rows(objs: list, top: dict, expected: int) -> None:
    assert len(evicted(objs, policy("RemovePodsViolatingNodeAffinity", REQ, "deschedule", **top))) == expected


def _anti(name: str, on: str, prio: int = 0, key: str = "kubernetes.io/hostname"):  # type: ignore[no-untyped-def]
    p = tpod(name, 100, on).label(foo="bar").priority(prio)
    return p.set("spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"foo": "bar"}}, "topologyKey": key}]}})


ANTI_ROWS = [
    pytest.param([_anti("p1", "n1"), _anti("p2", "n1"), tnode("n1", 2000, 3000, 10)], ["p1"],
                 id="two pods repelling each other on one node, the first visited leaves"),
    pytest.param([_anti("p1", "n1", 100), _anti("p2", "n1", 10), tnode("n1", 2000, 3000, 10)], ["p2"],
                 id="the lower-priority pod leaves first"),
    pytest.param([_anti("p1", "n1"), _anti("p2", "n1"), _anti("p3", "n1"), tnode("n1", 2000, 3000, 10)],
                 ["p1", "p2"], id="three repelling pods, two leave and the last stays"),
    pytest.param([_anti("p1", "n1"), _anti("p2", "n2"), tnode("n1", 2000, 3000, 10), tnode("n2", 2000, 3000, 10)],
                 [], id="pods on different nodes do not violate"),
    pytest.param([_anti("p1", "n1", key="topology.kubernetes.io/zone"),
                  _anti("p2", "n2", key="topology.kubernetes.io/zone"),
                  tnode("n1", 2000, 3000, 10).zone("a"), tnode("n2", 2000, 3000, 10).zone("a")], ["p1"],
                 id="pods in one zone violate a zone anti-affinity"),
    pytest.param([_anti("p1", "n1"), tpod("p2", 100, "n1"), tnode("n1", 2000, 3000, 10)], [],
                 id="a pod not matching the selector does not violate"),
]


@pytest.mark.parametrize(("objs", "expected"), ANTI_ROWS)
def test_inter_pod_anti_affinity_rows(objs: list, expected: list[str]) -> None:
    assert evicted(objs, policy("RemovePodsViolatingInterPodAntiAffinity", point="deschedule")) == expected
