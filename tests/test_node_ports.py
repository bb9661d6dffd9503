"""NodePorts against kube-scheduler v1.35's ``TestNodePorts`` table
(``pkg/scheduler/framework/plugins/nodeports/node_ports_test.go``), row by row, plus sidecar init
containers on the node and greedy/CP-SAT agreement on them."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of, state_of
from test_optimal_exact import greedy_allowed, model_allowed, only

from optisched.framework import Code, CycleState
from optisched.profile import default_config
from optisched.registry import instantiate

CONFLICT = "Unschedulable:node(s) didn't have free ports for the requested pod ports"
PROFILE = default_config().profiles[0]


def ports(*infos: str) -> list[dict]:
    """Upstream's ``newPod`` port strings, ``PROTOCOL/hostIP/hostPort``."""
    out = []
    for info in infos:
        proto, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": proto})
    return out


def with_ports(name: str, *infos: str) -> dict:
    return pod(name).set("spec.containers", [{"name": "c", "image": "x", "ports": ports(*infos)}])


def with_init_ports(name: str, sidecar: bool, *infos: str) -> dict:
    """Upstream's ``InitContainerPort(sidecar, ports)``: an init container holding the ports."""
    init = {"name": "init", "image": "x", "ports": ports(*infos), **({"restartPolicy": "Always"} if sidecar else {})}
    return pod(name).set("spec.initContainers", [init])


def verdict(incoming: dict, *on_node: dict) -> str:
    """``skip`` when PreFilter skips, else the Filter verdict on node m1 holding ``on_node``."""
    snap = snapshot_of(node("m1"), *[p.on("m1") for p in on_node], incoming)
    filters, _ = instantiate(snap, PROFILE)
    rule = filters["NodePorts"]
    cycle = CycleState(snap.state.pod_index[f"default/{incoming['metadata']['name']}"], snap, PROFILE)
    if rule.pre_filter(cycle).code == Code.SKIP:
        return "skip"
    res = rule.filter(cycle, np.arange(1))
    return "pass" if res.code[0] == 0 else f"{Code(int(res.code[0])).label}:{'|'.join(res.reasons_of(0))}"


# (upstream row name, incoming pod, pods on the node, want)
ROWS = [
    ("skip filter", pod("p"), [], "skip"),
    ("other port", with_ports("p", "UDP/127.0.0.1/8080"), [with_ports("q", "UDP/127.0.0.1/9090")], "pass"),
    ("same udp port", with_ports("p", "UDP/127.0.0.1/8080"), [with_ports("q", "UDP/127.0.0.1/8080")], CONFLICT),
    ("same tcp port", with_ports("p", "TCP/127.0.0.1/8080"), [with_ports("q", "TCP/127.0.0.1/8080")], CONFLICT),
    ("different host ip", with_ports("p", "TCP/127.0.0.1/8080"), [with_ports("q", "TCP/127.0.0.2/8080")], "pass"),
    ("different protocol", with_ports("p", "UDP/127.0.0.1/8080"), [with_ports("q", "TCP/127.0.0.1/8080")], "pass"),
    ("second udp port conflict", with_ports("p", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
     [with_ports("q", "UDP/127.0.0.1/8080")], CONFLICT),
    ("first tcp port conflict", with_ports("p", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     [with_ports("q", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")], CONFLICT),
    ("first tcp port conflict due to 0.0.0.0 hostIP", with_ports("p", "TCP/0.0.0.0/8001"),
     [with_ports("q", "TCP/127.0.0.1/8001")], CONFLICT),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", with_ports("p", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
     [with_ports("q", "TCP/127.0.0.1/8001")], CONFLICT),
    ("second tcp port conflict to 0.0.0.0 hostIP", with_ports("p", "TCP/127.0.0.1/8001"),
     [with_ports("q", "TCP/0.0.0.0/8001")], CONFLICT),
    ("second different protocol", with_ports("p", "UDP/127.0.0.1/8001"), [with_ports("q", "TCP/0.0.0.0/8001")],
     "pass"),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", with_ports("p", "UDP/127.0.0.1/8001"),
     [with_ports("q", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")], CONFLICT),
    ("non-sidecar initContainer using hostPort", with_init_ports("p", False, "TCP/0.0.0.0/8001"),
     [with_ports("q", "TCP/0.0.0.0/8001")], "skip"),
    ("TCP hostPort conflict from sidecar initContainer", with_init_ports("p", True, "TCP/0.0.0.0/8001"),
     [with_ports("q", "TCP/0.0.0.0/8001")], CONFLICT),
    # beyond upstream's table: the node's pods are read the same way (NodeInfo.AddPod -> GetHostPorts)
    ("a sidecar of a pod on the node holds its host port", with_ports("p", "TCP/0.0.0.0/8001"),
     [with_init_ports("q", True, "TCP/0.0.0.0/8001")], CONFLICT),
    ("a plain init container of a pod on the node holds no port", with_ports("p", "TCP/0.0.0.0/8001"),
     [with_init_ports("q", False, "TCP/0.0.0.0/8001")], "pass"),
    ("a container port without a host port makes PreFilter skip",
     pod("p").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}]),
     [with_ports("q", "TCP/0.0.0.0/8001")], "skip"),
]


@pytest.mark.parametrize("incoming,on_node,want", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_upstream_rows(incoming, on_node, want):
    assert verdict(incoming, *on_node) == want


@pytest.mark.parametrize("incoming,holder", [
    (with_init_ports("p", True, "TCP/0.0.0.0/8001"), with_ports("q", "TCP/0.0.0.0/8001")),
    (with_ports("p", "TCP/0.0.0.0/8001"), with_init_ports("q", True, "TCP/0.0.0.0/8001")),
], ids=["the incoming pod's sidecar port", "a bound pod's sidecar port"])
def test_cp_sat_domain_equals_the_greedy_verdict_with_sidecar_ports(incoming, holder):
    state = state_of(node("m1"), node("m2"), holder.on("m1"), incoming)
    config = only("NodePorts")
    pod_row = state.pending[0]
    assert model_allowed(state, config, pod_row) == greedy_allowed(state, config, pod_row) == {1}
