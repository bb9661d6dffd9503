"""Storage objects load as ``kubectl get pv,pvc,storageclass,csinode,csidriver -A -o yaml`` writes them; bad
fields are one-line errors naming the object and the field; dangling references are warnings."""
from __future__ import annotations

import pytest
from builders import node, pod
from storage_builders import claims, csi_node, pv, pvc, storage_class

from optisched.errors import InputError
from optisched.model.loader import cluster_from_objects
from optisched.model.storage import catalog, pod_claims

CSI_DRIVER = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"},
              "spec": {"attachRequired": True}}


def test_a_kubectl_list_of_every_storage_kind_loads() -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": [
        storage_class("gp3", zones=("a",)), pv("pv-1", "20Gi").cls("gp3").csi("ebs.csi.aws.com", "vol-1").claimed("data"),
        pvc("data", "10Gi").cls("gp3").bound("pv-1"), csi_node("n0", ebs_csi_aws_com=25), CSI_DRIVER]}
    cat = catalog(cluster_from_objects([dump]))
    assert cat.claim("default", "data").spec.volume_name == "pv-1"
    assert cat.volumes["pv-1"].storage == 20 * 2**30 * 10**9  # nano units, as every quantity
    assert cat.classes["gp3"].allowed_topologies[0].match_label_expressions[0].values == ["a"]
    assert cat.csi_nodes["n0"].spec.drivers[0].allocatable.count == 25
    assert cat.drivers["ebs.csi.aws.com"].spec.attach_required


def test_a_claims_class_from_the_beta_annotation_wins_over_the_field() -> None:
    claim = pvc("data").cls("gp3")
    claim["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "old"}
    assert catalog(cluster_from_objects([claim])).claim("default", "data").class_name == "old"


def test_an_ephemeral_volume_names_the_claim_pod_dash_volume() -> None:
    c = cluster_from_objects([pod("web-0").set("spec.volumes", [{"name": "scratch", "ephemeral": {}}])])
    assert [x.name for x in pod_claims(c.pods[0])] == ["web-0-scratch"]


BAD = [
    ("an unknown volumeBindingMode names the field",
     {**storage_class("gp3"), "volumeBindingMode": "Later"}, "StorageClass/gp3", ".volumeBindingMode"),
    ("a claim's storage request that is not a quantity names the field",
     pvc("data", "ten"), "PersistentVolumeClaim/default/data", ".spec.resources.requests.storage"),
    ("a negative CSINode count names the field",
     csi_node("n0", ebs_csi_aws_com=-1), "CSINode/n0", ".spec.drivers[0].allocatable.count"),
    ("a StorageClass without a provisioner names the field",
     {k: v for k, v in storage_class("gp3").items() if k != "provisioner"}, "StorageClass/gp3", ".provisioner"),
    ("a PersistentVolume of the wrong apiVersion names the field",
     {**pv("pv-1"), "apiVersion": "storage.k8s.io/v1"}, "PersistentVolume/pv-1", ".apiVersion"),
]


@pytest.mark.parametrize("obj,ref,path", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_storage_objects_are_one_line_errors(obj: dict, ref: str, path: str) -> None:
    with pytest.raises(InputError) as e:
        cluster_from_objects([obj], source="dump.yaml")
    text = str(e.value)
    assert "\n" not in text and "dump.yaml" in text and ref in text and path in text, text


def test_dangling_storage_references_are_warnings() -> None:
    c = cluster_from_objects([node("n0"), pvc("a").cls("missing-class"), pvc("b").bound("missing-pv"),
                              claims(pod("p"), "a", "nowhere")])
    assert c.warnings == [
        "PersistentVolumeClaim/default/a: storageClassName 'missing-class' is not in the input; pods using it stay pending",
        "PersistentVolumeClaim/default/b: volumeName 'missing-pv' is not in the input; pods using it stay pending",
        "Pod/default/p: claim 'nowhere' (volume 'v1') is not in the input; the pod stays pending"]


def test_a_dump_without_storage_objects_warns_nothing_and_leaves_claims_alone() -> None:
    c = cluster_from_objects([node("n0"), claims(pod("p"), "data")])
    assert c.warnings == [] and not catalog(c).present
