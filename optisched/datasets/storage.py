"""Volumes for generated clusters: StatefulSets' claims on zonal EBS-like PVs, local PVs, a
WaitForFirstConsumer class and CSI attach limits per node.

Added after the cluster is generated, from a random stream of its own, so clusters generated without
volumes keep their bytes.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["VolumeSpec", "add_volumes"]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
EBS = "ebs.csi.aws.com"


@dataclass(frozen=True)
class VolumeSpec:
    csi_limit: int = 25  # volumes of the EBS-like driver each node attaches
    local_fraction: float = 0.3  # share of StatefulSets on local PVs
    bound_fraction: float = 0.5  # share of pending StatefulSet pods whose claim is already bound
    claim_fraction: float = 0.0  # share of the other pods that get a claim too


def _class(name: str, provisioner: str) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}


def _pv(name: str, cls: str, key: str, value: str, labels: dict, claim: tuple[str, str] | None) -> dict:
    spec: dict = {"capacity": {"storage": "20Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}}}
    if cls == "gp3":
        spec["csi"] = {"driver": EBS, "volumeHandle": f"vol-{name}"}
    status = "Available"
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
        status = "Bound"
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"phase": status}}


def add_volumes(objs: list[dict], spec: VolumeSpec, seed: int) -> list[dict]:
    """Give every StatefulSet pod a claim ``data-<pod>`` (volume ``data``) and the PVs, classes and
    CSINodes that make it a real cluster's storage."""
    rng = random.Random(f"volumes-{seed}")
    nodes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Node"}
    local_sets = {o["metadata"]["name"] for o in objs if o["kind"] == "StatefulSet" and rng.random() < spec.local_fraction}
    out = [_class("gp3", EBS), _class("local", "kubernetes.io/no-provisioner")]
    out += [{"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
             "spec": {"drivers": [{"name": EBS, "nodeID": name, "allocatable": {"count": spec.csi_limit}}]}}
            for name in nodes]
    for pod in objs:
        if pod["kind"] != "Pod":
            continue
        owner = next((o for o in pod["metadata"].get("ownerReferences", []) if o["kind"] == "StatefulSet"), None)
        if owner is None and not (spec.claim_fraction and rng.random() < spec.claim_fraction):
            continue
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        claim, cls = f"data-{name}", "local" if owner and owner["name"] in local_sets else "gp3"
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        node = nodes.get(pod["spec"].get("nodeName", ""))
        bind = node is not None or rng.random() < spec.bound_fraction
        if node is None:
            node = nodes[rng.choice(sorted(nodes))]
        zone = node["metadata"]["labels"].get(ZONE, "")
        pv = f"pv-{ns}-{claim}"
        key, value = (HOST, node["metadata"]["name"]) if cls == "local" else (ZONE, zone)
        labels = {ZONE: zone} if cls == "gp3" and zone else {}
        pvc: dict = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": ns},
                     "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                              "resources": {"requests": {"storage": "10Gi"}}}, "status": {"phase": "Pending"}}
        if bind:
            pvc["spec"]["volumeName"] = pv
            pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
            pvc["status"]["phase"] = "Bound"
            out.append(_pv(pv, cls, key, value, labels, (ns, claim)))
        elif cls == "local":  # a free local PV on some node for the claim to find
            out.append(_pv(pv, cls, key, value, labels, None))
        out.append(pvc)
    return objs + out
