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


# ---------------------------------------------------------------- kube's set of used ports, in the batch model
def _holder(name: str, priority: int, cpu: str = "1", ip: str = "0.0.0.0") -> dict:
    return with_ports(name, f"TCP/{ip}/8080").priority(priority).req(cpu=cpu).on("n1")


def _free(name: str, priority: int) -> dict:
    """A pod without requests or ports: it fits wherever a preemption made room for nothing."""
    return pod(name).priority(priority)


def _batch_admits(state, node_of: np.ndarray) -> bool:  # type: ignore[no-untyped-def]
    from optisched.optimal.classes import build_batch
    from optisched.optimal.decode import counts_of, variable_values
    from optisched.optimal.eviction.batch import encode_eviction_rules
    from optisched.optimal.hint import accepts
    from optisched.optimal.model import BatchModel

    model = BatchModel(build_batch(state, default_config()), default_config())
    encode_eviction_rules(model)
    arrivals, _ = counts_of(model.batch, node_of)
    if any(set(arrivals[c.index]) - set(model.vars[c.index].arr_nodes.tolist()) for c in model.classes):
        return False  # a pod on a node the model ruled out for its class
    return accepts(model, variable_values(model, node_of)) is not None


def _run_greedy(state) -> np.ndarray:  # type: ignore[no-untyped-def]
    from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler

    return GreedyScheduler(state, default_config(), GreedyOptions(record=False)).run().snapshot.node_of


def _placement(state, where: dict[str, int]) -> np.ndarray:  # type: ignore[no-untyped-def]
    node_of = state.pod_node.copy()
    for name, n in where.items():
        node_of[state.pod_index[f"default/{name}"]] = n
    return node_of


SHARED = [
    ("a pod takes the port a preempted holder freed while another holder keeps it: kube's set",
     [node("n1", cpu="2"), _holder("low", 0), _holder("nb", 10),
      with_ports("p", "TCP/0.0.0.0/8080").priority(10).req(cpu="1")], {"low": -1, "p": 0}, True),
    ("nothing left the node: the port stays held",
     [node("n1", cpu="4"), _holder("low", 0), _holder("nb", 10),
      with_ports("p", "TCP/0.0.0.0/8080").priority(10).req(cpu="1")], {"p": 0}, False),
    ("the holder that left held another IP: the 0.0.0.0 holder that stays still conflicts",
     [node("n1", cpu="2"), _holder("low", 0, ip="10.0.0.1"), _holder("nb", 10),
      with_ports("p", "TCP/10.0.0.1/8080").priority(10).req(cpu="1")], {"low": -1, "p": 0}, False),
]


@pytest.mark.parametrize("objs,where,admitted", [c[1:] for c in SHARED], ids=[c[0] for c in SHARED])
def test_a_port_two_pods_already_hold_is_freed_when_one_leaves(objs, where, admitted) -> None:  # type: ignore[no-untyped-def]
    """Two running pods hold port 8080 on n1 (an input the kubelet would not have admitted; generated
    clusters have them): kube-scheduler's NodeInfo keeps used ports as a set, so the port is free once
    either leaves. The batch model and the checker agree on each placement."""
    from optisched.optimal.check import check_placement

    state = state_of(*objs)
    node_of = _placement(state, where)
    if admitted:
        assert np.array_equal(_run_greedy(state), node_of)  # kube-scheduler reaches it
    assert _batch_admits(state, node_of) == admitted
    assert (check_placement(state, default_config(), node_of) == []) == admitted


def test_two_pods_taking_one_port_in_turn_is_admitted_only_as_kube_schedulers_own_run() -> None:
    """Three pods hold port 8080 on n1. x1 evicts h1 (the port is free), y1 takes it; x2 evicts h2 (free
    again), y2 takes it. The model removes the pods that leave before any arrives, so it frees the port
    once and refuses y1 and y2 together; only the literal for greedy mode's own run admits it
    (docs/optimal_trust.md, "Never below kube-scheduler")."""
    from optisched.optimal.classes import build_batch
    from optisched.optimal.clock import Clock
    from optisched.optimal.decode import variable_values
    from optisched.optimal.eviction.batch import encode_eviction_rules
    from optisched.optimal.hint import accept_reached
    from optisched.optimal.model import BatchModel

    objs = [node("n1", cpu="3"), _holder("h1", 0), _holder("h2", 10), _holder("h3", 100),
            pod("x1").priority(50).req(cpu="1"), with_ports("y1", "TCP/0.0.0.0/8080").priority(40),
            pod("x2").priority(30).req(cpu="1"), with_ports("y2", "TCP/0.0.0.0/8080").priority(20)]
    state = state_of(*objs)
    node_of = _run_greedy(state)
    assert np.array_equal(node_of, _placement(state, {"h1": -1, "h2": -1, "x1": 0, "y1": 0, "x2": 0, "y2": 0}))
    assert not _batch_admits(state, node_of)
    model = BatchModel(build_batch(state, default_config()), default_config(), arrival_order=True)
    encode_eviction_rules(model)
    assert accept_reached(model, variable_values(model, node_of), Clock.wall(), 5.0) is not None


def test_a_host_port_two_bound_pods_hold_is_named_in_the_input_warnings() -> None:
    from optisched.cli.input_warnings import input_warnings

    shared = state_of(node("n1"), node("n2"), _holder("low", 0), _holder("nb", 10),
                      with_ports("other", "TCP/0.0.0.0/8080").on("n2"))
    [line] = [w for w in input_warnings(shared, default_config()) if "host port" in w]
    assert line.startswith("1 node(s) where two bound pods hold one host port") and "Node/n1 (TCP/0.0.0.0:8080)" in line
    alone = state_of(node("n1"), _holder("low", 0), with_ports("p", "TCP/10.0.0.1/8080").on("n1"))
    assert not [w for w in input_warnings(alone, default_config()) if "host port" in w]


def host_network(name: str, port: dict) -> dict:
    container = {"name": "c", "image": "x", "ports": [port]}
    return pod(name).set("spec.hostNetwork", True).set("spec.containers", [container])


@pytest.mark.parametrize("incoming,holder,want", [
    (host_network("p", {"containerPort": 8080}), with_ports("q", "TCP/0.0.0.0/8080"), CONFLICT),
    (with_ports("p", "TCP/0.0.0.0/8080"), host_network("q", {"containerPort": 8080}), CONFLICT),
    (host_network("p", {"containerPort": 8080}), with_ports("q", "TCP/0.0.0.0/8081"), "pass"),
    (host_network("p", {"containerPort": 8080, "protocol": "UDP"}), with_ports("q", "TCP/0.0.0.0/8080"),
     "pass"),
], ids=["a host network pod's container port is its host port", "on the node too", "another port",
        "another protocol"])
def test_a_host_network_pods_ports_default_their_host_port(incoming, holder, want):
    """``SetDefaults_Pod`` (v1.36.2 ``pkg/apis/core/v1/defaults.go``): the API server gives each port of a
    host network pod its containerPort as hostPort, so NodePorts counts it."""
    assert verdict(incoming, holder) == want


def test_a_host_network_pod_whose_host_port_differs_from_its_container_port_is_refused():
    from optisched.errors import InputError
    from optisched.model.loader import cluster_from_objects

    with pytest.raises(InputError, match=r"Pod/default/p .spec: containers\[0\].ports\[0\].hostPort: "
                                         r"Invalid value: 9090: must match `containerPort` when `hostNetwork` "
                                         r"is true"):
        cluster_from_objects([host_network("p", {"containerPort": 8080, "hostPort": 9090})])
