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


# ``TestFindPodVolumesWithoutProvisioning`` and ``TestFindPodVolumesWithProvisioning`` (binder_test.go): the
# fixtures of ``newTestBinder``; a scenario that ``shouldFail`` is a pod PreFilter stops.
NODE_KEY_B = "nodekey"
NS = "testns"


def _tpvc(name: str, size: str, cls: str, state: str = "unbound", pv_name: str = "") -> dict:
    """``makeTestPVC``: unbound, pre-bound (``volumeName`` only), bound (and bind-completed), or with node1
    as selected node."""
    c = pvc(name, size).cls(cls)
    c["metadata"]["namespace"] = NS
    if state == "bound":
        c = c.bound(pv_name)
    elif state == "prebound":
        c = c.prebound(pv_name)
    elif state == "selected":
        c = c.annotate("volume.kubernetes.io/selected-node", "node1")
    return c


def _tpv(name: str, node_name: str, size: str, cls: str, claim: str | None = None) -> dict:
    """``makeTestPV``: affinity to ``nodekey=<node>``, available or bound to ``claim``."""
    v = pv(name, size).cls(cls).affinity(NODE_KEY_B, node_name)
    return v.claimed(claim, NS) if claim else v


CLASSES = [storage_class("wait-class", provisioner="kubernetes.io/no-provisioner"),
           storage_class("immediate-class", "Immediate", provisioner=""),
           {**storage_class("wait-class-with-provisioner", provisioner=PROVISIONER),
            "allowedTopologies": [{"matchLabelExpressions": [{"key": NODE_KEY_B, "values": ["node1", "reference-value"]}]}]},
           {**storage_class("topo-mismatch-class", provisioner=PROVISIONER),
            "allowedTopologies": [{"matchLabelExpressions": [{"key": NODE_KEY_B, "values": ["reference-value"]}]}]}]
UNBOUND, UNBOUND2 = _tpvc("unbound-pvc", "1G", "wait-class"), _tpvc("unbound-pvc2", "5G", "wait-class")
PREBOUND = _tpvc("prebound-pvc", "1G", "wait-class", "prebound", "pv-node1a")
BOUND = _tpvc("bound-pvc", "1G", "wait-class", "bound", "pv-bound")
IMM_UNBOUND = _tpvc("immediate-unbound-pvc", "1G", "immediate-class")
IMM_BOUND = _tpvc("immediate-bound-pvc", "1G", "immediate-class", "bound", "pv-bound-immediate")
PROVISIONED = _tpvc("provisioned-pvc", "1Gi", "wait-class-with-provisioner")
SELECTED = _tpvc("provisioned-pvc", "1Gi", "wait-class-with-provisioner", "selected")
NO_PROV, TOPO_MISMATCH = _tpvc("no-provisioner-pvc", "1Gi", "wait-class"), _tpvc("topo-mismatch-pvc", "1Gi", "topo-mismatch-class")
PV_NODE1A, PV_NODE1B = _tpv("pv-node1a", "node1", "5G", "wait-class"), _tpv("pv-node1b", "node1", "10G", "wait-class")
PV_NODE2 = _tpv("pv-node2", "node2", "1G", "wait-class")
PV_BOUND = _tpv("pv-bound", "node1", "1G", "wait-class", "bound-pvc")
PV_NODE1A_BOUND = _tpv("pv-node1a", "node1", "5G", "wait-class", "unbound-pvc")
PV_BOUND_IMM = _tpv("pv-bound-immediate", "node1", "1G", "immediate-class", "immediate-bound-pvc")
PV_BOUND_IMM2 = _tpv("pv-bound-immediate", "node2", "1G", "immediate-class", "immediate-bound-pvc")
EPH_PVC = _tpvc("test-pod-test-volume", "1G", "wait-class", "bound", "pv-bound")
PV_BOUND_EPH = _tpv("pv-bound", "node1", "1G", "wait-class", "test-pod-test-volume")
NODE_CONFLICT = f"{UNRES}:node(s) didn't match PersistentVolume's node affinity"
PV_MISSING = f"{UNRES}:node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


def _ephemeral_pod(volume: str) -> dict:
    return pod("test-pod", NS).set("spec.volumes", [{"name": volume, "ephemeral": {"volumeClaimTemplate": {}}}])


WITHOUT_PROVISIONING = [  # (scenario, pod's claims or a pod, claims in the cache (None: the pod's), PVs, expected)
    ("no-volumes", pod("test-pod", NS), None, [], "pass"),
    ("no-pvcs", pod("test-pod", NS).set("spec.volumes", [{"name": "v", "emptyDir": {}}]), None, [], "pass"),
    ("pvc-not-found", [BOUND], [], [], 'prefilter:persistentvolumeclaim "bound-pvc" not found'),
    ("bound-pvc", [BOUND], None, [PV_BOUND], "pass"),
    ("bound-pvc,pv-not-exists", [BOUND], None, [], PV_MISSING),
    ("prebound-pvc", [PREBOUND], None, [PV_NODE1A_BOUND], IMMEDIATE),
    ("unbound-pvc,pv-same-node", [UNBOUND], None, [PV_NODE2, PV_NODE1A, PV_NODE1B], "pass"),
    ("unbound-pvc,pv-different-node", [UNBOUND], None, [PV_NODE2], BIND),
    ("two-unbound-pvcs", [UNBOUND, UNBOUND2], None, [PV_NODE1A, PV_NODE1B], "pass"),
    ("two-unbound-pvcs,order-by-size", [UNBOUND2, UNBOUND], None, [PV_NODE1A, PV_NODE1B], "pass"),
    ("two-unbound-pvcs,partial-match", [UNBOUND, UNBOUND2], None, [PV_NODE1A], BIND),
    ("one-bound,one-unbound", [UNBOUND, BOUND], None, [PV_BOUND, PV_NODE1A], "pass"),
    ("one-bound,one-unbound,no-match", [UNBOUND, BOUND], None, [PV_BOUND, PV_NODE2], BIND),
    ("one-prebound,one-unbound", [UNBOUND, PREBOUND], None, [PV_NODE1A, PV_NODE1B], IMMEDIATE),
    ("immediate-bound-pvc", [IMM_BOUND], None, [PV_BOUND_IMM], "pass"),
    ("immediate-bound-pvc-wrong-node", [IMM_BOUND], None, [PV_BOUND_IMM2], NODE_CONFLICT),
    ("immediate-unbound-pvc", [IMM_UNBOUND], None, [], IMMEDIATE),
    ("immediate-unbound-pvc,delayed-mode-bound", [IMM_UNBOUND, BOUND], None, [PV_BOUND], IMMEDIATE),
    ("immediate-unbound-pvc,delayed-mode-unbound", [IMM_UNBOUND, UNBOUND], None, [], IMMEDIATE),
    ("generic-ephemeral,no-pvc", _ephemeral_pod("no-such-pvc"), [BOUND], [],
     'prefilter:waiting for ephemeral volume controller to create the persistentvolumeclaim "test-pod-no-such-pvc"'),
    ("generic-ephemeral,with-pvc", _ephemeral_pod("test-volume"), [EPH_PVC], [PV_BOUND_EPH], "pass"),
]
WITH_PROVISIONING = [  # (scenario, the pod's claims, PVs, expected, blocked without CSIStorageCapacity objects)
    ("one-provisioned", [PROVISIONED], [], "pass", True),
    ("two-unbound-pvcs,one-matched,one-provisioned", [UNBOUND, PROVISIONED], [PV_NODE1A], "pass", True),
    ("one-bound,one-provisioned", [BOUND, PROVISIONED], [PV_BOUND], "pass", True),
    ("one-binding,one-selected-node", [BOUND, SELECTED], [PV_BOUND], "pass", True),
    ("immediate-unbound-pvc", [IMM_UNBOUND], [], IMMEDIATE, False),
    ("one-immediate-bound,one-provisioned", [IMM_BOUND, PROVISIONED], [PV_BOUND_IMM], "pass", True),
    ("invalid-provisioner", [NO_PROV], [], BIND, False),
    ("volume-topology-unsatisfied", [TOPO_MISMATCH], [], BIND, False),
]
DRIVERS = {"no CSIDriver": [], "CSIDriver with capacity tracking": [driver(True)],
           "CSIDriver without capacity tracking": [driver(False)]}


def _binder_world(claims_or_pod, cache, pvs: list, drivers: list) -> list:
    if isinstance(claims_or_pod, list):
        p = claims(pod("test-pod", NS), *[c["metadata"]["name"] for c in claims_or_pod])
        cache = claims_or_pod if cache is None else cache
    else:
        p, cache = claims_or_pod, cache or []
    return [node("node1").label(**{NODE_KEY_B: "node1"}), *CLASSES, *drivers, *cache, *pvs, p]


@pytest.mark.parametrize("drivers", list(DRIVERS.values()), ids=list(DRIVERS))
@pytest.mark.parametrize("pod_or_claims,cache,pvs,want", [c[1:] for c in WITHOUT_PROVISIONING],
                         ids=[c[0] for c in WITHOUT_PROVISIONING])
def test_find_pod_volumes_without_provisioning(pod_or_claims, cache, pvs, want, drivers) -> None:
    assert run_filter("VolumeBinding", _binder_world(pod_or_claims, cache, pvs, drivers), f"{NS}/test-pod")["node1"] == want


@pytest.mark.parametrize("name", list(DRIVERS))
@pytest.mark.parametrize("pod_claims,pvs,want,needs_capacity", [c[1:] for c in WITH_PROVISIONING],
                         ids=[c[0] for c in WITH_PROVISIONING])
def test_find_pod_volumes_with_provisioning(pod_claims, pvs, want, needs_capacity, name) -> None:
    if needs_capacity and name == "CSIDriver with capacity tracking":
        want = SPACE  # no CSIStorageCapacity object: provisioning is blocked
    got = run_filter("VolumeBinding", _binder_world(pod_claims, None, pvs, DRIVERS[name]), f"{NS}/test-pod")["node1"]
    assert got == want
