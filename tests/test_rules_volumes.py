"""Upstream test tables of VolumeZone, VolumeRestrictions and NodeVolumeLimits (v1.35
``volume_zone_test.go``, ``volume_restrictions_test.go``, ``csi_test.go``), translated row by row."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod
from storage_builders import BETA_ZONE, ZONE, claims, csi_node, disk, pv, pvc, storage_class
from test_rules import UNRES, run_filter

BETA_REGION = "failure-domain.beta.kubernetes.io/region"
REGION = "topology.kubernetes.io/region"
NO_ZONE = f"{UNRES}:node(s) had no available volume zone"


def _zone_world(node_labels: dict, pv_labels: dict, *extra) -> list:
    vol = pv("vol-1")
    for k, v in pv_labels.items():
        vol.label(k, v)
    return [node("host1").labels(node_labels), vol.claimed("pvc-1"), pvc("pvc-1").bound("vol-1"),
            claims(pod("p"), "pvc-1"), *extra]


ZONE_CASES = [
    ("a pod without volumes fits any node",
     [node("host1").labels({BETA_ZONE: "us-west1-a"}), pod("p")], "pass"),
    ("a node without topology labels fits a zonal volume",
     _zone_world({}, {BETA_ZONE: "us-west1-a"}), "pass"),
    ("a volume without topology labels fits a zonal node",
     _zone_world({BETA_ZONE: "us-west1-a"}, {}), "pass"),
    ("the beta zone label matches",
     _zone_world({BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, {BETA_ZONE: "us-west1-a"}), "pass"),
    ("the beta region label matches",
     _zone_world({BETA_REGION: "us-west1", "uselessLabel": "none"}, {BETA_REGION: "us-west1"}), "pass"),
    ("the beta zone label does not match",
     _zone_world({BETA_ZONE: "no_us-west1-a"}, {BETA_ZONE: "us-west1-a"}), NO_ZONE),
    ("the beta region label does not match",
     _zone_world({BETA_REGION: "no_us-west1"}, {BETA_REGION: "us-west1"}), NO_ZONE),
    ("the GA zone label matches",
     _zone_world({ZONE: "us-west1-a"}, {ZONE: "us-west1-a"}), "pass"),
    ("the GA region label matches",
     _zone_world({REGION: "us-west1"}, {REGION: "us-west1"}), "pass"),
    ("the GA zone label does not match",
     _zone_world({ZONE: "no_us-west1-a"}, {ZONE: "us-west1-a"}), NO_ZONE),
    ("the GA region label does not match",
     _zone_world({REGION: "no_us-west1"}, {REGION: "us-west1"}), NO_ZONE),
    ("a PV's beta zone label matches the node's GA zone label",
     _zone_world({ZONE: "us-west1-a"}, {BETA_ZONE: "us-west1-a"}), "pass"),
    ("a PV zone list joined by double underscores matches any of its zones",
     _zone_world({ZONE: "us-west1-b"}, {ZONE: "us-west1-a__us-west1-b"}), "pass"),
    ("a PV zone list with an empty member is ignored",
     _zone_world({ZONE: "us-west1-c"}, {ZONE: "us-west1-a__"}), "pass"),
    ("a PV with zone and region does not fit a node with only the zone",
     _zone_world({ZONE: "us-west1-a"}, {ZONE: "us-west1-a", REGION: "us-west1-a"}), NO_ZONE),
    ("a PV with the GA zone does not fit a node with only the beta zone",
     _zone_world({BETA_ZONE: "us-west1-a"}, {ZONE: "us-west1-a"}), NO_ZONE),
    ("a PV's beta zone label does not match another GA zone of the node",
     _zone_world({ZONE: "us-west1-b"}, {BETA_ZONE: "us-west1-a"}), NO_ZONE),
    ("multi-zone: a node without labels fits a PV of two beta zones",
     _zone_world({}, {BETA_ZONE: "us-west1-c__us-west1-a"}), "pass"),
    ("multi-zone: a node in one of a PV's two beta zones fits",
     _zone_world({BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, {BETA_ZONE: "us-west1-c__us-west1-a"}), "pass"),
    ("multi-zone: a node in another beta zone does not fit",
     _zone_world({BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, {BETA_ZONE: "us-west1-a"}), NO_ZONE),
    ("multi-zone: a node in one of a PV's two GA zones fits",
     _zone_world({ZONE: "us-west1-a", "uselessLabel": "none"}, {ZONE: "us-west1-c__us-west1-a"}), "pass"),
    ("multi-zone: a node in another GA zone does not fit",
     _zone_world({ZONE: "us-west1-b", "uselessLabel": "none"}, {ZONE: "us-west1-a"}), NO_ZONE),
    ("a claim that does not exist makes the pod unresolvable",
     [node("host1"), pvc("other"), claims(pod("p"), "pvc-missing")],
     'prefilter:persistentvolumeclaim "pvc-missing" not found'),
    ("an unbound claim without a class makes the pod unresolvable",
     [node("host1"), pvc("pvc-1"), claims(pod("p"), "pvc-1")],
     "prefilter:PersistentVolumeClaim had no pv name and storageClass name"),
    ("an unbound claim whose class does not exist makes the pod unresolvable",
     [node("host1"), pvc("pvc-1").cls("class-0"), claims(pod("p"), "pvc-1")],
     'prefilter:storageclass.storage.k8s.io "class-0" not found'),
    ("an unbound claim of an Immediate class makes the pod unresolvable",
     [node("host1"), storage_class("class-immediate", "Immediate"), pvc("pvc-1").cls("class-immediate"),
      claims(pod("p"), "pvc-1")], "prefilter:PersistentVolume had no name"),
    ("an unbound claim of a WaitForFirstConsumer class is left to VolumeBinding",
     [node("host1").labels({ZONE: "b"}), storage_class("class-wait"), pvc("pvc-1").cls("class-wait"),
      claims(pod("p"), "pvc-1")], "pass"),
    ("a claim bound to a PV that does not exist makes the pod unresolvable",
     [node("host1"), pvc("pvc-1").bound("vol-gone"), claims(pod("p"), "pvc-1")],
     'prefilter:persistentvolume "vol-gone" not found'),
]


@pytest.mark.parametrize("objs,want", [c[1:] for c in ZONE_CASES], ids=[c[0] for c in ZONE_CASES])
def test_volume_zone(objs, want) -> None:
    assert run_filter("VolumeZone", objs) == {"host1": want}


DISK = "Unschedulable:node(s) had no available disk"
RWOP_CONFLICT = "Unschedulable:node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"

RESTRICTION_CASES = [
    ("a pod without volumes fits beside a GCE disk user",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", pdName="foo"), pod("p")], "pass"),
    ("a GCE disk fits beside a different GCE disk",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", pdName="bar"),
      disk(pod("p"), "gcePersistentDisk", pdName="foo")], "pass"),
    ("the same GCE disk mounted read-write conflicts",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", pdName="foo"),
      disk(pod("p"), "gcePersistentDisk", pdName="foo")], DISK),
    ("the same GCE disk mounted read-only by both fits",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", True, pdName="foo"),
      disk(pod("p"), "gcePersistentDisk", True, pdName="foo")], "pass"),
    ("a read-only GCE mount conflicts with a read-write one",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", pdName="foo"),
      disk(pod("p"), "gcePersistentDisk", True, pdName="foo")], DISK),
    ("an EBS volume fits beside a different EBS volume",
     [node("host1"), disk(pod("q").on("host1"), "awsElasticBlockStore", volumeID="bar"),
      disk(pod("p"), "awsElasticBlockStore", volumeID="foo")], "pass"),
    ("the same EBS volume conflicts even read-only",
     [node("host1"), disk(pod("q").on("host1"), "awsElasticBlockStore", True, volumeID="foo"),
      disk(pod("p"), "awsElasticBlockStore", True, volumeID="foo")], DISK),
    ("an RBD image fits beside another image on the same monitors",
     [node("host1"), disk(pod("q").on("host1"), "rbd", monitors=["a", "b"], pool="foo", image="bar"),
      disk(pod("p"), "rbd", monitors=["a", "b"], pool="foo", image="baz")], "pass"),
    ("the same RBD image on an overlapping monitor conflicts",
     [node("host1"), disk(pod("q").on("host1"), "rbd", monitors=["a", "b"], pool="foo", image="bar"),
      disk(pod("p"), "rbd", monitors=["b", "c"], pool="foo", image="bar")], DISK),
    ("the same RBD image on disjoint monitors fits",
     [node("host1"), disk(pod("q").on("host1"), "rbd", monitors=["a"], pool="foo", image="bar"),
      disk(pod("p"), "rbd", monitors=["c"], pool="foo", image="bar")], "pass"),
    ("a different iSCSI IQN fits",
     [node("host1"), disk(pod("q").on("host1"), "iscsi", iqn="iqn.2016-12.server:storage.target01"),
      disk(pod("p"), "iscsi", iqn="iqn.2017-12.server:storage.target01")], "pass"),
    ("the same iSCSI IQN mounted read-write conflicts",
     [node("host1"), disk(pod("q").on("host1"), "iscsi", iqn="iqn.2016-12.server:storage.target01"),
      disk(pod("p"), "iscsi", iqn="iqn.2016-12.server:storage.target01")], DISK),
    ("a disk on another node does not conflict",
     [node("host1"), node("host2"), disk(pod("q").on("host2"), "awsElasticBlockStore", volumeID="foo"),
      disk(pod("p"), "awsElasticBlockStore", volumeID="foo")], "pass"),
    ("a claim that does not exist makes the pod unresolvable",
     [node("host1"), pvc("other"), claims(pod("p"), "claim-not-found")],
     'prefilter:persistentvolumeclaim "claim-not-found" not found'),
    ("a ReadWriteOncePod claim nobody uses fits",
     [node("host1"), pvc("claim-rwop", modes=("ReadWriteOncePod",)), claims(pod("p"), "claim-rwop")], "pass"),
    ("a ReadWriteOnce claim in use by another pod fits",
     [node("host1"), pvc("claim-rwo"), claims(pod("q").on("host1"), "claim-rwo"), claims(pod("p"), "claim-rwo")],
     "pass"),
    ("a ReadWriteOncePod claim in use by another pod is unschedulable (preemption may free it)",
     [node("host1"), pvc("claim-rwop", modes=("ReadWriteOncePod",)), claims(pod("q").on("host1"), "claim-rwop"),
      claims(pod("p"), "claim-rwop")], RWOP_CONFLICT),
    ("two ReadWriteOncePod claims in use are one conflict",
     [node("host1"), pvc("rwop-1", modes=("ReadWriteOncePod",)), pvc("rwop-2", modes=("ReadWriteOncePod",)),
      pvc("rwx", modes=("ReadWriteMany",)), claims(pod("q").on("host1"), "rwop-1", "rwop-2"),
      claims(pod("r").on("host1"), "rwx"), claims(pod("p"), "rwop-1", "rwop-2")], RWOP_CONFLICT),
    ("a ReadWriteOncePod claim beside a ReadWriteMany user skips the filter",
     [node("host1"), pvc("rwop-1", modes=("ReadWriteOncePod",)), pvc("rwx", modes=("ReadWriteMany",)),
      claims(pod("r").on("host1"), "rwx"), claims(pod("p"), "rwop-1")], "pass"),
    ("a volume without restrictions skips the filter",
     [node("host1"), disk(pod("q").on("host1"), "gcePersistentDisk", pdName="foo"),
      pod("p").set("spec.volumes", [{"name": "cfg", "configMap": {"name": "x"}}])], "pass"),
]


def test_a_pod_holding_a_read_write_once_pod_claim_is_preempted_for_a_higher_priority_user() -> None:
    """``satisfyReadWriteOncePod`` says ``Unschedulable``: DefaultPreemption may evict the claim's holder."""
    from builders import state_of

    from optisched.greedy.scheduler import GreedyScheduler
    from optisched.profile import default_config

    state = state_of(node("host1"), pv("pv-1", modes=("ReadWriteOncePod",)).claimed("rwop"),
                     pvc("rwop", modes=("ReadWriteOncePod",)).bound("pv-1"), claims(pod("low").on("host1").priority(0), "rwop"), claims(pod("high").priority(100), "rwop"))
    result = GreedyScheduler(state, default_config()).run()
    assert result.preempted == {state.pod_index["default/low"]: (state.pod_index["default/high"], 0)}


@pytest.mark.parametrize("objs,want", [c[1:] for c in RESTRICTION_CASES], ids=[c[0] for c in RESTRICTION_CASES])
def test_volume_restrictions(objs, want) -> None:
    assert run_filter("VolumeRestrictions", objs)["host1"] == want


EBS = "ebs.csi.aws.com"
LIMIT = "Unschedulable:node(s) exceed max volume count"


def _csi_world(limit: int, existing: list[list[str]], new: list[str], *extra, driver: str = EBS) -> list:
    """host1 with ``limit`` volumes of ``driver``; pods on it use the handles in ``existing``; pod p uses ``new``."""
    objs: list = [node("host1"), csi_node("host1", **{driver.replace(".", "_"): limit}), *extra]
    handles = {h for group in existing for h in group} | set(new)
    for h in sorted(handles):
        objs += [pv(f"pv-{h}").csi(driver, h).claimed(f"c-{h}"), pvc(f"c-{h}").bound(f"pv-{h}")]
    for i, group in enumerate(existing):
        objs.append(claims(pod(f"q{i}").on("host1"), *[f"c-{h}" for h in group]))
    objs.append(claims(pod("p"), *[f"c-{h}" for h in new]))
    return objs


LIMIT_CASES = [
    ("a pod with one volume fits a node with room for four",
     _csi_world(4, [["h1", "h2"]], ["h3"]), "pass"),
    ("a node already at its limit rejects a new volume",
     _csi_world(2, [["h1", "h2"]], ["h3"]), LIMIT),
    ("a volume already attached on the node does not count again",
     _csi_world(2, [["h1", "h2"]], ["h1"]), "pass"),
    ("two new volumes over a limit of two with one attached are rejected",
     _csi_world(2, [["h1"]], ["h2", "h3"]), LIMIT),
    ("a limit of zero rejects any new volume of the driver",
     _csi_world(0, [], ["h1"]), LIMIT),
    ("volumes of a driver without a limit always fit",
     _csi_world(1, [["h1"]], ["h2"], driver="pd.csi.storage.gke.io")[:1] +
     _csi_world(1, [["h1"]], ["h2"], driver="pd.csi.storage.gke.io")[2:], "pass"),
    ("a pod's two mounts of one volume count once",
     _csi_world(1, [], ["h1", "h1"]), "pass"),
    ("an unbound claim counts a new volume of its class's provisioner",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=0), storage_class("gp3"), pvc("data").cls("gp3"),
      claims(pod("p"), "data")], LIMIT),
    ("an unbound claim without a class is not counted",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=0), pvc("data"), claims(pod("p"), "data")], "pass"),
    ("a missing claim of the new pod is unresolvable",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=1), pvc("other"), claims(pod("p"), "data")],
     f'{UNRES}:looking up PVC default/data: persistentvolumeclaim "data" not found'),
    ("a missing claim of a pod on the node is not counted",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=1), pv("pv1").csi(EBS, "h1"), pvc("c1").bound("pv1"),
      claims(pod("q").on("host1"), "gone"), claims(pod("p"), "c1")], "pass"),
    ("an inline EBS volume counts as the CSI volume it was migrated to",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=0), pvc("x"),
      disk(pod("p"), "awsElasticBlockStore", volumeID="v")], LIMIT),
    ("a pod with only non-claim, non-migratable volumes skips the filter",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=0), pvc("x"),
      disk(pod("p"), "iscsi", iqn="iqn.2016-12.server:storage.target01")], "pass"),
    ("an ephemeral volume's generated claim counts against the limit",
     [node("host1"), csi_node("host1", ebs_csi_aws_com=0), storage_class("gp3"), pvc("p-scratch").cls("gp3"),
      pod("p").set("spec.volumes", [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])], LIMIT),
]


@pytest.mark.parametrize("objs,want", [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES])
def test_node_volume_limits(objs, want) -> None:
    assert run_filter("NodeVolumeLimits", objs)["host1"] == want


NODE_CONFLICT = f"{UNRES}:node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = f"{UNRES}:node(s) didn't find available persistent volumes to bind"
HOST = "kubernetes.io/hostname"
WAIT = storage_class("wait", provisioner="kubernetes.io/no-provisioner")

BINDING_CASES = [
    ("a pod without claims skips the plugin",
     [node("node-a"), WAIT, pod("p")], {"node-a": "pass"}),
    ("claims bound to PVs without node affinity fit every node",
     [node("node-a"), WAIT, pv("pv-a").cls("wait").claimed("pvc-a"), pvc("pvc-a").cls("wait").bound("pv-a"),
      claims(pod("p"), "pvc-a")], {"node-a": "pass"}),
    ("claims bound to local volumes fit only their node",
     [node("node-a"), node("node-b"), WAIT, pv("pv-a").cls("wait").affinity(HOST, "node-a").claimed("pvc-a"),
      pvc("pvc-a").cls("wait").bound("pv-a"), claims(pod("p"), "pvc-a")],
     {"node-a": "pass", "node-b": NODE_CONFLICT}),
    ("a claim that does not exist stops the pod",
     [node("node-a"), WAIT, pvc("pvc-b").cls("wait"), claims(pod("p"), "pvc-a")],
     {"node-a": 'prefilter:persistentvolumeclaim "pvc-a" not found'}),
    ("one of two claims missing stops the pod",
     [node("node-a"), WAIT, pv("pv-a").cls("wait").claimed("pvc-a"), pvc("pvc-a").cls("wait").bound("pv-a"),
      claims(pod("p"), "pvc-a", "pvc-b")], {"node-a": 'prefilter:persistentvolumeclaim "pvc-b" not found'}),
    ("an unbound claim of an Immediate class stops the pod",
     [node("node-a"), storage_class("immediate", "Immediate"), pvc("pvc-a").cls("immediate"),
      claims(pod("p"), "pvc-a")], {"node-a": "prefilter:pod has unbound immediate PersistentVolumeClaims"}),
    ("an unbound claim whose class is missing counts as Immediate",
     [node("node-a"), WAIT, pvc("pvc-a").cls("gone"), claims(pod("p"), "pvc-a")],
     {"node-a": "prefilter:pod has unbound immediate PersistentVolumeClaims"}),
    ("an unbound WaitForFirstConsumer claim without PVs or a provisioner matches nothing",
     [node("node-a"), WAIT, pvc("pvc-a").cls("wait"), claims(pod("p"), "pvc-a")], {"node-a": BIND_CONFLICT}),
    ("a bound claim off its PV's affinity and an unmatched claim give both reasons",
     [node("node-a").labels({"foo": "barbar"}), WAIT, pv("pv-a").cls("wait").affinity("foo", "bar").claimed("pvc-a"),
      pvc("pvc-a").cls("wait").bound("pv-a"), pvc("pvc-b").cls("wait"), claims(pod("p"), "pvc-a", "pvc-b")],
     {"node-a": f"{UNRES}:node(s) didn't match PersistentVolume's node affinity|"
                "node(s) didn't find available persistent volumes to bind"}),
    ("a claim bound to a PV that does not exist is unresolvable on every node",
     [node("node-a"), WAIT, pvc("pvc-a").cls("wait").bound("pv-a"), claims(pod("p"), "pvc-a")],
     {"node-a": f"{UNRES}:node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"}),
    ("a lost claim stops the pod",
     [node("node-a"), WAIT, pvc("pvc-a").cls("wait").bound("pv-a").set_phase("Lost"), claims(pod("p"), "pvc-a")],
     {"node-a": 'prefilter:persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'}),
    ("local volumes of enough capacity match only on their nodes",
     [node("node-a"), node("node-b"), node("node-c"), WAIT,
      pv("pv-a-0", "200Gi").cls("wait").affinity(HOST, "node-a"), pv("pv-b-0", "100Gi").cls("wait").affinity(HOST, "node-b"),
      pvc("pvc-a", "50Gi").cls("wait"), claims(pod("p"), "pvc-a")],
     {"node-a": "pass", "node-b": "pass", "node-c": BIND_CONFLICT}),
    ("upstream: local volumes with close capacity are preferred (the filter part)",
     [node("node-a"), node("node-b"), node("node-c"), WAIT,
      *[pv(f"pv-{n}-{i}", size).cls("wait").affinity(HOST, f"node-{n}") for n, size in (("a", "200Gi"), ("b", "100Gi"))
        for i in range(2)],
      pvc("pvc-a", "50Gi").cls("wait"), claims(pod("p"), "pvc-a")],
     {"node-a": "pass", "node-b": "pass", "node-c": BIND_CONFLICT}),
    ("upstream: local volumes with close capacity are preferred, two claims of two classes",
     [node("node-a"), node("node-b"), node("node-c"), WAIT, storage_class("wait-hdd", provisioner="kubernetes.io/no-provisioner"),
      *[pv(f"pv-{n}-{i}", size).cls("wait" if i < 2 else "wait-hdd").affinity(HOST, f"node-{n}")
        for n, size in (("a", "200Gi"), ("b", "100Gi")) for i in range(4)],
      pvc("pvc-0", "50Gi").cls("wait"), pvc("pvc-1", "100Gi").cls("wait-hdd"), claims(pod("p"), "pvc-0", "pvc-1")],
     {"node-a": "pass", "node-b": "pass", "node-c": BIND_CONFLICT}),
    ("upstream: zonal volumes with close capacity are preferred (the filter part)",
     [*[node(f"zone-{z}-node-{n}").labels({REGION: f"region-{z}", ZONE: f"zone-{z}"}) for z in "abc" for n in "ab"], WAIT,
      *[pv(f"pv-{z}-{i}", size).cls("wait").affinity(ZONE, f"zone-{z}") for z, size in (("a", "200Gi"), ("b", "100Gi"))
        for i in range(2)],
      pvc("pvc-a", "50Gi").cls("wait"), claims(pod("p"), "pvc-a")],
     {**{f"zone-{z}-node-{n}": "pass" for z in "ab" for n in "ab"},
      **{f"zone-c-node-{n}": BIND_CONFLICT for n in "ab"}}),
    ("a PV smaller than the request does not match",
     [node("node-a"), WAIT, pv("pv-a", "1Gi").cls("wait"), pvc("pvc-a", "5Gi").cls("wait"), claims(pod("p"), "pvc-a")],
     {"node-a": BIND_CONFLICT}),
    ("a PV without the claim's access mode does not match",
     [node("node-a"), WAIT, pv("pv-a", modes=("ReadOnlyMany",)).cls("wait"), pvc("pvc-a").cls("wait"),
      claims(pod("p"), "pvc-a")], {"node-a": BIND_CONFLICT}),
    ("a PV of another class does not match",
     [node("node-a"), WAIT, pv("pv-a").cls("other"), pvc("pvc-a").cls("wait"), claims(pod("p"), "pvc-a")],
     {"node-a": BIND_CONFLICT}),
    ("a PV already bound to another claim does not match",
     [node("node-a"), WAIT, pv("pv-a").cls("wait").claimed("someone"), pvc("pvc-a").cls("wait"),
      claims(pod("p"), "pvc-a")], {"node-a": BIND_CONFLICT}),
    ("two claims cannot both take the one free PV",
     [node("node-a"), WAIT, pv("pv-a").cls("wait"), pvc("pvc-a").cls("wait"), pvc("pvc-b").cls("wait"),
      claims(pod("p"), "pvc-a", "pvc-b")], {"node-a": BIND_CONFLICT}),
    ("dynamic provisioning is allowed where the class's allowedTopologies match",
     [node("node-a").zone("us-central-1a"), node("node-c").zone("us-central-1c"),
      storage_class("standard", zones=("us-central-1a", "us-central-1b")), pvc("pvc-a").cls("standard"),
      claims(pod("p"), "pvc-a")], {"node-a": "pass", "node-c": BIND_CONFLICT}),
    ("the storage docs' local PV serves a claim on its node only",
     [node("example-node"), node("other-node"), storage_class("local-storage", provisioner="kubernetes.io/no-provisioner"),
      pv("example-pv", "100Gi").cls("local-storage").affinity(HOST, "example-node"),
      pvc("pvc-a", "5Gi").cls("local-storage"), claims(pod("p"), "pvc-a")],
     {"example-node": "pass", "other-node": BIND_CONFLICT}),
    ("dynamic provisioning without allowedTopologies is allowed everywhere",
     [node("node-a"), storage_class("standard"), pvc("pvc-a").cls("standard"), claims(pod("p"), "pvc-a")],
     {"node-a": "pass"}),
]


@pytest.mark.parametrize("objs,want", [c[1:] for c in BINDING_CASES], ids=[c[0] for c in BINDING_CASES])
def test_volume_binding(objs, want) -> None:
    assert run_filter("VolumeBinding", objs) == want


def test_a_pod_that_lands_takes_its_pv_from_later_pods() -> None:
    """Assume: the first pod's claim binds the one local PV, so the second pod's claim finds none."""
    from builders import snapshot_of
    from test_rules import PROFILE

    from optisched.framework import CycleState
    from optisched.registry import instantiate

    snap = snapshot_of(node("node-a"), WAIT, pv("pv-a").cls("wait").affinity(HOST, "node-a"),
                       pvc("c1").cls("wait"), pvc("c2").cls("wait"), claims(pod("p1"), "c1"), claims(pod("p2"), "c2"))
    rule = instantiate(snap, PROFILE)[0]["VolumeBinding"]
    second = CycleState(snap.state.pod_index["default/p2"], snap, PROFILE)
    assert rule.pre_filter(second).ok and rule.filter(second, np.arange(1)).code[0] == 0
    snap.add(snap.state.pod_index["default/p1"], 0)
    second = CycleState(snap.state.pod_index["default/p2"], snap, PROFILE)
    assert rule.pre_filter(second).ok and rule.filter(second, np.arange(1)).reasons_of(0) == [BIND_CONFLICT[len(UNRES) + 1:]]


def test_local_volumes_narrow_the_nodes_at_prefilter_and_name_volume_binding_in_the_message() -> None:
    """``GetEligibleNodes``: a claim bound to a local PV of node-a leaves only node-a to evaluate; node-a is
    full, so kube's message counts node-b as not satisfying VolumeBinding."""
    from builders import state_of

    from optisched.greedy.scheduler import GreedyScheduler
    from optisched.profile import default_config

    state = state_of(node("node-a", cpu="1"), node("node-b"), WAIT,
                     pv("pv-a").cls("wait").affinity(HOST, "node-a").claimed("pvc-a"),
                     pvc("pvc-a").cls("wait").bound("pv-a"), claims(pod("p").req(cpu="2"), "pvc-a"))
    result = GreedyScheduler(state, default_config()).run()
    message = result.unschedulable[state.pod_index["default/p"]]
    assert message.startswith("0/2 nodes are available: 1 Insufficient cpu, "
                              "1 node(s) didn't satisfy plugin(s) [VolumeBinding].")


def test_pods_alike_but_for_their_ephemeral_claims_are_not_one_shape() -> None:
    """Greedy mode reuses a failed cycle's outcome for a pod of the same shape; an ephemeral volume's claim is
    ``<pod>-<volume>``, so two such pods differ by name: web-1's claim exists and it lands, web-0's does not."""
    from builders import state_of

    from optisched.greedy.scheduler import GreedyScheduler
    from optisched.profile import default_config

    eph = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]
    state = state_of(node("n0"), storage_class("standard", provisioner="ebs.csi.aws.com"),
                     pvc("web-1-scratch").cls("standard"),
                     pod("web-0").set("spec.volumes", eph), pod("web-1").set("spec.volumes", eph))
    placed = GreedyScheduler(state, default_config()).run().placements()
    assert placed == {"default/web-0": None, "default/web-1": "n0"}
