"""Hypothesis strategies for small random clusters that exercise every filter rule.

Nodes in two zones (one sometimes without a zone), taints, a cordoned node, ``disk=ssd`` labels; bound
pods with labels, host ports and anti-affinity; pending pods with requests, tolerations, node selectors,
host ports, topology spread, required anti-affinity and required affinity.
"""
from __future__ import annotations

from builders import node, pod
from hypothesis import strategies as st

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


@st.composite
def nodes(draw, lo: int = 2, hi: int = 4) -> list[dict]:  # type: ignore[no-untyped-def]
    out = []
    for i in range(draw(st.integers(lo, hi))):
        n = node(f"n{i}", cpu=str(draw(st.sampled_from([2, 3, 4]))), memory="8Gi", pods="110")
        if draw(st.integers(0, 5)) > 0:
            n.zone(f"z{i % 2}")
        if draw(st.booleans()):
            n.label(disk="ssd")
        if draw(st.integers(0, 4)) == 0:
            n.taint("dedicated", "x")
        if draw(st.integers(0, 7)) == 0:
            n.unschedulable()
        out.append(n.build())
    return out


def _term(key: str, app: str) -> dict:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}


@st.composite
def pod_spec(draw, name: str, pending: bool = True) -> dict:  # type: ignore[no-untyped-def]
    p = pod(name).req(cpu=draw(st.sampled_from(["500m", "1", "2"])), memory="1Gi")
    p.label(app=draw(st.sampled_from(["a", "b"])))
    if draw(st.integers(0, 3)) == 0:
        p.tolerate("dedicated", "x")
    if pending and draw(st.integers(0, 4)) == 0:
        p.set("spec.nodeSelector", {"disk": "ssd"})
    if draw(st.integers(0, 4)) == 0:
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]
    affinity: dict = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(draw(st.sampled_from([HOST, ZONE])), draw(st.sampled_from(["a", "b"])))]}
    if pending and draw(st.integers(0, 4)) == 0:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            _term(ZONE, draw(st.sampled_from(["a", "b"])))]}
    if affinity:
        p.set("spec.affinity", affinity)
    if pending and draw(st.integers(0, 2)) == 0:
        c = {"maxSkew": 1, "topologyKey": draw(st.sampled_from([HOST, ZONE])), "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": p["metadata"]["labels"]["app"]}}}
        if draw(st.integers(0, 3)) == 0:
            c["minDomains"] = 3
        p.set("spec.topologySpreadConstraints", [c])
    return p


@st.composite
def clusters(draw, max_pending: int = 3, max_nodes: int = 4, max_bound: int = 3) -> list[dict]:  # type: ignore[no-untyped-def]
    """Objects of a random cluster: nodes, bound pods (that fit), pending pods; every pod priority 0."""
    ns = draw(nodes(2, max_nodes))
    objs: list[dict] = list(ns)
    free = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) * 1000 for n in ns}
    for i in range(draw(st.integers(0, max_bound))):
        p = draw(pod_spec(f"b{i}", pending=False))
        target = ns[draw(st.integers(0, len(ns) - 1))]["metadata"]["name"]
        cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        milli = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
        if milli <= free[target]:
            free[target] -= milli
            objs.append(p.on(target).build())
    for i in range(draw(st.integers(1, max_pending))):
        objs.append(draw(pod_spec(f"p{i}")).build())
    return objs
