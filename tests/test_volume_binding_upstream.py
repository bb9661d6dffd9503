"""VolumeBinding beyond the PV matching: CSIStorageCapacity (``TestCapacity`` of v1.35
``volumebinding/binder_test.go``, every scenario with the driver opted in and not), claims pre-bound by
``volumeName``, claims being deleted, the selected-node annotation, and the CP-SAT side against greedy."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of
from storage_builders import claims, pv, pvc, storage_class
from test_optimal_exact import greedy_allowed, model_allowed, only
from test_rules import PROFILE, UNRES, run_filter

from optisched.framework import CycleState
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.registry import instantiate

NODE_KEY = "nodekey"
PROVISIONER = "test-provisioner"
SPACE = f"{UNRES}:node(s) did not have enough free storage"
BIND = f"{UNRES}:node(s) didn't find available persistent volumes to bind"
IMMEDIATE = "prefilter:pod has unbound immediate PersistentVolumeClaims"


def capacity(name: str, cls: str, node_name: str | None, size: str = "", max_size: str = "",
             topology: bool = True) -> dict:
    """``makeCapacity``: an empty ``nodeTopology`` (every node) unless a node is named."""
    obj: dict = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                 "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": cls}
    if topology:
        obj["nodeTopology"] = {"matchLabels": {NODE_KEY: node_name}} if node_name else {}
    if size:
        obj["capacity"] = size
    if max_size:
        obj["maximumVolumeSize"] = max_size
    return obj


def driver(opt_in: bool | None, name: str = PROVISIONER) -> dict:
    spec = {} if opt_in is None else {"storageCapacity": opt_in}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


WAIT_PROV = storage_class("wait-with-provisioner", provisioner=PROVISIONER)
WAIT = storage_class("wait-class", provisioner="kubernetes.io/no-provisioner")
NET = capacity("net", "wait-with-provisioner", None, "1Gi")
NODE1, NODE2 = capacity("node1", "wait-with-provisioner", "node1", "1Gi"), capacity("node2", "wait-with-provisioner", "node2", "1Gi")

CAPACITY = [  # TestCapacity: (scenario, capacities, not enough space when the driver opts in)
    ("network-attached", [NET], False),
    ("local-storage", [NODE1], False),
    ("multiple", [NET, NODE2, NODE1], False),
    ("no-storage", [], True),
    ("wrong-node", [capacity("net", "wait-with-provisioner", "node2", "1Gi")], True),
    ("wrong-storage-class", [capacity("net", "wait-class", "node1", "1Gi")], True),
    ("insufficient-storage", [capacity("net", "wait-with-provisioner", "node1", "1Mi")], True),
    ("insufficient-volume-size", [capacity("net", "wait-with-provisioner", "node1", "1Gi", "1Mi")], True),
    ("zero-storage", [capacity("net", "wait-with-provisioner", "node1", "0Mi")], True),
    ("zero-volume-size", [capacity("net", "wait-with-provisioner", "node1", "", "0Mi")], True),
    ("nil-storage", [capacity("net", "wait-with-provisioner", "node1")], True),
]


def _capacity_world(caps: list[dict], opt_in: bool) -> list:
    return [node("node1").label(**{NODE_KEY: "node1"}), WAIT_PROV, WAIT, driver(opt_in), *caps,
            pvc("provisioned-pvc", "1Gi").cls("wait-with-provisioner"), claims(pod("p"), "provisioned-pvc")]


@pytest.mark.parametrize("opt_in", [True, False], ids=["CSIDriver.StorageCapacity=true", "CSIDriver.StorageCapacity=false"])
@pytest.mark.parametrize("caps,short", [c[1:] for c in CAPACITY], ids=[c[0] for c in CAPACITY])
def test_capacity(caps: list[dict], short: bool, opt_in: bool) -> None:
    want = SPACE if short and opt_in else "pass"
    assert run_filter("VolumeBinding", _capacity_world(caps, opt_in))["node1"] == want


CASES = [
    ("a driver without a CSIDriver object is not capacity-checked",
     [node("node1"), WAIT_PROV, pvc("c", "1Gi").cls("wait-with-provisioner"), claims(pod("p"), "c")], "pass"),
    ("a driver that leaves storageCapacity unset is not capacity-checked",
     [node("node1"), WAIT_PROV, driver(None), pvc("c", "1Gi").cls("wait-with-provisioner"), claims(pod("p"), "c")],
     "pass"),
    ("a claim without a storage request is not capacity-checked",
     [node("node1"), WAIT_PROV, driver(True), {**pvc("c").cls("wait-with-provisioner"),
                                              "spec": {"storageClassName": "wait-with-provisioner"}},
      claims(pod("p"), "c")], "pass"),
    ("a capacity without nodeTopology offers nothing",
     [node("node1"), WAIT_PROV, driver(True), capacity("net", "wait-with-provisioner", None, "1Gi", topology=False),
      pvc("c", "1Gi").cls("wait-with-provisioner"), claims(pod("p"), "c")], SPACE),
    ("a class whose topology excludes the node fails on topology before capacity",
     [node("node1").zone("b"), storage_class("zonal", provisioner=PROVISIONER, zones=("a",)), driver(True),
      pvc("c", "1Gi").cls("zonal"), claims(pod("p"), "c")], BIND),
    ("a claim with volumeName but no bind-completed annotation is pre-bound: the pod waits as for Immediate",
     [node("node1"), WAIT, pv("pv-a").cls("wait-class").claimed("c"), pvc("c").cls("wait-class").prebound("pv-a"),
      claims(pod("p"), "c")], IMMEDIATE),
    ("a pre-bound claim whose volume does not exist waits as well",
     [node("node1"), WAIT, pvc("c").cls("wait-class").prebound("pv-gone"), claims(pod("p"), "c")], IMMEDIATE),
    ("a claim being deleted stops the pod",
     [node("node1"), WAIT, {**pvc("c").cls("wait-class"), "metadata": {"name": "c", "namespace": "default",
                                                                        "deletionTimestamp": "2026-11-26T00:00:00Z"}},
      claims(pod("p"), "c")], 'prefilter:persistentvolumeclaim "c" is being deleted'),
]


@pytest.mark.parametrize("objs,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_volume_binding_claims(objs: list, want: str) -> None:
    assert run_filter("VolumeBinding", objs)["node1"] == want


def test_a_claim_with_a_selected_node_admits_only_that_node_and_skips_the_pv_matching() -> None:
    """``FindPodVolumes``' fast path: node-b is not the selected node; on node-a the claim is provisioned,
    so the free PV of node-b plays no part and node-a's capacity is what counts."""
    objs = [node("node-a").label(**{NODE_KEY: "a"}), node("node-b").label(**{NODE_KEY: "b"}), WAIT_PROV, driver(True),
            pv("pv-b").cls("wait-with-provisioner").affinity("kubernetes.io/hostname", "node-b"),
            capacity("a", "wait-with-provisioner", "a", "1Gi"),
            pvc("c", "1Gi").cls("wait-with-provisioner").annotate("volume.kubernetes.io/selected-node", "node-a"),
            claims(pod("p"), "c")]
    assert run_filter("VolumeBinding", objs) == {"node-a": "pass", "node-b": BIND}
    objs[5] = capacity("a", "wait-with-provisioner", "b", "1Gi")
    assert run_filter("VolumeBinding", objs) == {"node-a": SPACE, "node-b": BIND}


def test_assume_records_the_selected_node_and_does_not_consume_capacity() -> None:
    """Two pods with their own 60Gi claims and one 100Gi capacity on node-a: kube-scheduler does not take
    the first claim's size off the capacity (AssumePodVolumes only sets the selected node), so both fit
    there. A third pod sharing the first claim may then only go where that claim was provisioned."""
    objs = [node("node-a").label(**{NODE_KEY: "a"}), node("node-b").label(**{NODE_KEY: "b"}), WAIT_PROV, driver(True),
            capacity("a", "wait-with-provisioner", "a", "100Gi"), capacity("b", "wait-with-provisioner", "b", "100Gi"),
            pvc("c1", "60Gi", modes=("ReadWriteMany",)).cls("wait-with-provisioner"),
            pvc("c2", "60Gi").cls("wait-with-provisioner"),
            claims(pod("p1"), "c1"), claims(pod("p2"), "c2"), claims(pod("p3"), "c1")]
    snap = snapshot_of(*objs)
    rule = instantiate(snap, PROFILE)[0]["VolumeBinding"]
    snap.add(snap.state.pod_index["default/p1"], 0)

    def fits(name: str) -> list[bool]:
        cycle = CycleState(snap.state.pod_index[name], snap, PROFILE)
        assert rule.pre_filter(cycle).ok
        return (rule.filter(cycle, np.arange(2)).code == 0).tolist()

    assert fits("default/p2") == [True, True]
    assert fits("default/p3") == [True, False]
    assert rule.selected == {"default/c1": "node-a"}


def _capacity_cluster(caps: list[dict], opt_in: bool = True, pods: int = 1) -> list:
    objs = [node(f"node-{z}").label(**{NODE_KEY: z}) for z in "abc"] + [WAIT_PROV, driver(opt_in), *caps]
    for i in range(pods):
        objs += [pvc(f"c{i}", "10Gi").cls("wait-with-provisioner"), claims(pod(f"p{i}"), f"c{i}")]
    return objs


@pytest.mark.parametrize("caps,opt_in", [
    ([capacity("b", "wait-with-provisioner", "b", "20Gi")], True),
    ([capacity("b", "wait-with-provisioner", "b", "5Gi"), capacity("c", "wait-with-provisioner", "c", "1Ti", "10Gi")], True),
    ([capacity("b", "wait-with-provisioner", "b", "5Gi")], False),
    ([], True),
], ids=["room on one node only", "room where the maximum volume size allows", "the driver does not opt in",
        "no capacity anywhere"])
def test_the_batch_model_allows_the_nodes_greedy_allows_under_storage_capacity(caps: list[dict], opt_in: bool) -> None:
    state = compile_cluster(cluster_from_objects(_capacity_cluster(caps, opt_in)))
    config = only("VolumeBinding")
    assert model_allowed(state, config, state.pending[0]) == greedy_allowed(state, config, state.pending[0])


def test_optimal_places_provisioned_claims_only_where_capacity_is_offered() -> None:
    from test_volumes_optimal import solve_checked

    from optisched.profile import default_config

    caps = [capacity("b", "wait-with-provisioner", "b", "15Gi"), capacity("c", "wait-with-provisioner", "c", "5Gi")]
    state = compile_cluster(cluster_from_objects(_capacity_cluster(caps, pods=3)))
    result = solve_checked(state, default_config())
    assert set(result.placements().values()) == {"node-b"}  # capacity is not consumed: all three fit there
