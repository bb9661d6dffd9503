"""RemoveDuplicates, rows translated from kubernetes-sigs/descheduler v0.34.0
``pkg/framework/plugins/removeduplicates/removeduplicates_test.go`` (TestFindDuplicatePods,
TestRemoveDuplicatesUniformly): inputs and the expected number of evictions."""
from __future__ import annotations

import pytest
from helpers.descheduler import critical, evicted, mirror, policy, tnode, tpod


def _p(name: str, ns: str = "dev", image: str | None = None, extra_image: str | None = None, on: str = "n1",
       owner: str | None = "ReplicaSet", cpu: int = 100):  # type: ignore[no-untyped-def]
    p = tpod(name, cpu, on, owner, ns=ns)
    if image:
        p["spec"]["containers"][0]["image"] = image
    if extra_image:
        p.container(image=extra_image)
    return p


N1, N2 = tnode("n1", 2000, 3000, 10), tnode("n2", 2000, 3000, 10)
N3 = tnode("n3", 2000, 3000, 10).taint("hardware", "gpu")
N4 = tnode("n4", 2000, 3000, 10).labels({"datacenter": "east"})
N5 = tnode("n5", 2000, 3000, 10).unschedulable()
N6 = tnode("n6", 200, 200, 10)
DEV = [_p("p1"), _p("p2"), _p("p3")]
TEST = [_p("p8", "test"), _p("p9", "test"), _p("p10", "test")]
KEPT = [_p("p4", "default", owner="DaemonSet"),
        _p("p5", "default", owner="Pod").set("spec.volumes", [{"name": "s", "hostPath": {"path": "somePath"}}]),
        mirror(_p("p6", "default", owner=None)), critical(_p("p7", "default", owner=None))]
FIT = [_p(n, "node-fit").set("spec.nodeSelector", {"datacenter": "west"}) for n in ("p15", "not1", "not2")]
EATER = tpod("cpu-eater", 150, "n6", None, ns="test")
SAVER = tpod("cpu-saver", 100, "n6", None, ns="test")

ROWS = [
    pytest.param(DEV + [N1, N2], {}, False, 1, id="three replicas on one of two nodes, one is evicted"),
    pytest.param(DEV + [N1, N2], {"excludeOwnerKinds": ["ReplicaSet"]}, False, 0,
                 id="an excluded owner kind is left alone"),
    pytest.param(TEST + [N1, N2], {}, False, 1, id="three replicas in another namespace, one is evicted"),
    pytest.param(DEV + TEST + [N1, N2], {}, False, 2, id="same owner name in two namespaces counts twice"),
    pytest.param(KEPT + [N1, N2], {}, False, 0, id="DaemonSet, local-storage, mirror and critical pods stay"),
    pytest.param(DEV + KEPT + TEST + [N1, N2], {}, False, 2, id="all pods together, two are evicted"),
    pytest.param([_p("p11", "different-images", "foo"), _p("p12", "different-images", "bar"), N1, N2], {}, False, 0,
                 id="same owner but different images are not duplicates"),
    pytest.param([_p("p13", "different-images", extra_image="foo"), N1, N2], {}, False, 0,
                 id="a pod with several containers does not match itself"),
    pytest.param([_p("p11", "different-images", "foo"), _p("p13", "different-images", extra_image="foo"), N1, N2],
                 {}, False, 0, id="matching owners with not all images matching are not duplicates"),
    pytest.param(DEV + [N1, N3], {}, True, 0, id="the only other node is tainted, nothing is evicted"),
    pytest.param(FIT + [N1, N4], {}, True, 0, id="the only other node has the wrong label, nothing is evicted"),
    pytest.param(DEV + [N1, N5], {}, True, 0, id="the only other node is unschedulable, nothing is evicted"),
    pytest.param(DEV + [EATER, N1, N6], {}, True, 0, id="the only other node lacks cpu under nodeFit"),
    pytest.param(DEV + [SAVER, N1, N6], {}, True, 1, id="the only other node has room under nodeFit"),
    pytest.param([_p(f"p{i}", "default", on=f"n{n}") for i, n in enumerate("111112223", 1)] +
                 [tnode(f"n{i}", 2000, 3000, 10) for i in (1, 2, 3)], {}, False, 2,
                 id="five three one spread to three three three with two evictions"),
]


@pytest.mark.parametrize(("objs", "args", "node_fit", "expected"), ROWS)
def test_remove_duplicates_upstream_rows(objs: list, args: dict, node_fit: bool, expected: int) -> None:
    assert len(evicted(objs, policy("RemoveDuplicates", args, evictor={"nodeFit": node_fit}))) == expected


def test_the_later_duplicates_are_the_ones_evicted() -> None:
    assert evicted(DEV + [N1, N2], policy("RemoveDuplicates")) == ["p3"]
