"""Builders for storage objects in tests: ``pv("vol-1").zone("a").csi("ebs", "h1")``, ``pvc("data").bound("vol-1")``."""
from __future__ import annotations

from builders import PodB, _Obj

ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


class PVB(_Obj):
    def __init__(self, name: str, size: str = "10Gi", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> None:
        super().__init__(apiVersion="v1", kind="PersistentVolume", metadata={"name": name, "labels": {}},
                         spec={"capacity": {"storage": size}, "accessModes": list(modes)}, status={"phase": "Available"})

    def label(self, key: str, value: str) -> PVB:
        self["metadata"]["labels"][key] = value
        return self

    def cls(self, name: str) -> PVB:
        self["spec"]["storageClassName"] = name
        return self

    def csi(self, driver: str, handle: str) -> PVB:
        self["spec"]["csi"] = {"driver": driver, "volumeHandle": handle}
        return self

    def affinity(self, key: str, *values: str) -> PVB:
        self["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}}
        return self

    def claimed(self, claim: str, namespace: str = "default") -> PVB:
        self["spec"]["claimRef"] = {"namespace": namespace, "name": claim}
        self["status"] = {"phase": "Bound"}
        return self


class PVCB(_Obj):
    def __init__(self, name: str, size: str = "5Gi", modes: tuple[str, ...] = ("ReadWriteOnce",),
                 namespace: str = "default") -> None:
        super().__init__(apiVersion="v1", kind="PersistentVolumeClaim",
                         metadata={"name": name, "namespace": namespace},
                         spec={"accessModes": list(modes), "resources": {"requests": {"storage": size}}})

    def cls(self, name: str) -> PVCB:
        self["spec"]["storageClassName"] = name
        return self

    def bound(self, volume: str) -> PVCB:
        """Fully bound, as the PV controller leaves a claim (upstream's ``withBoundPV``)."""
        self["spec"]["volumeName"] = volume
        self["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
        self["status"] = {"phase": "Bound"}
        return self

    def prebound(self, volume: str) -> PVCB:
        """``volumeName`` set by its author, not yet bound by the PV controller (upstream's ``withPreBoundPV``)."""
        self["spec"]["volumeName"] = volume
        return self

    def annotate(self, key: str, value: str) -> PVCB:
        self["metadata"].setdefault("annotations", {})[key] = value
        return self

    def set_phase(self, phase: str) -> PVCB:
        self["status"] = {"phase": phase}
        return self


def storage_class(name: str, mode: str | None = "WaitForFirstConsumer", provisioner: str = "ebs.csi.aws.com",
                  zones: tuple[str, ...] = ()) -> dict:
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
          "provisioner": provisioner}
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if zones:
        sc["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    return sc


def csi_node(name: str, **limits: int) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [{"name": d.replace("_", "."), "nodeID": name, "allocatable": {"count": n}}
                                 for d, n in limits.items()]}}


def claims(p: PodB, *names: str) -> PodB:
    """Mount claims ``names`` as volumes v0, v1, ..."""
    vols = p["spec"].setdefault("volumes", [])
    for name in names:
        vols.append({"name": f"v{len(vols)}", "persistentVolumeClaim": {"claimName": name}})
    return p


def disk(p: PodB, source: str, read_only: bool = False, **fields: object) -> PodB:
    vols = p["spec"].setdefault("volumes", [])
    vols.append({"name": f"v{len(vols)}", source: {**fields, "readOnly": read_only}})
    return p


def pv(name: str, size: str = "10Gi", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> PVB:
    return PVB(name, size, modes)


def pvc(name: str, size: str = "5Gi", modes: tuple[str, ...] = ("ReadWriteOnce",)) -> PVCB:
    return PVCB(name, size, modes)
