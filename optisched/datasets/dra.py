"""DRA for generated clusters: GPUs and NICs published as ResourceSlices, DeviceClasses with CEL selectors,
ResourceClaimTemplates, a shared ResourceClaim, and the GPU workloads claiming devices instead of the
``nvidia.com/gpu`` extended resource (``resource.k8s.io/v1``, as kube-scheduler v1.35.4 reads it).

Added after the cluster is generated, from a random stream of its own, so clusters generated without DRA
keep their bytes. Each GPU node publishes one slice of the driver ``gpu.example.com`` (4 or 8 devices of
one model, a driver version per device, the device's memory as capacity); some also publish a slice of
``nic.example.com``. A bound GPU pod keeps its node only where its claim's devices are free there; its
claim is then written as the resourceclaim controller and kube-scheduler leave it (allocated to those
devices, reserved for the pod); otherwise the pod is pending again.
"""
from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GPU_DRIVER", "NIC_DRIVER", "add_dra"]

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
API = "resource.k8s.io/v1"
# model: (product name, memory, devices per node)
MODELS = {"a100": ("NVIDIA A100-SXM4-80GB", "80Gi", 8), "h100": ("NVIDIA H100 80GB HBM3", "80Gi", 8),
          "l4": ("NVIDIA L4", "24Gi", 4)}
BIG_MEMORY = {"a100", "h100"}  # at least 40Gi
CLASSES = {
    GPU_DRIVER: f'device.driver == "{GPU_DRIVER}"',
    "gpu-a100": f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].model == "a100"',
    "gpu-h100": f'device.driver == "{GPU_DRIVER}" && device.attributes["{GPU_DRIVER}"].model == "h100"',
    "gpu-40gi": f'device.driver == "{GPU_DRIVER}" && '
                f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    NIC_DRIVER: f'device.driver == "{NIC_DRIVER}"',
}
SHARED_CLAIM = "shared-gpu"


def _exact(name: str, cls: str, count: int | None = 1) -> dict:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    exactly |= {"allocationMode": "ExactCount", "count": count} if count else {"allocationMode": "All"}
    return {"name": name, "exactly": exactly}


# template name -> the claim spec's devices
TEMPLATES: dict[str, dict] = {
    "single-gpu": {"requests": [_exact("gpu", GPU_DRIVER)]},
    "two-gpu": {"requests": [_exact("gpus", GPU_DRIVER, 2)]},
    "four-gpu": {"requests": [_exact("gpus", GPU_DRIVER, 4)]},
    "all-gpus": {"requests": [_exact("gpus", GPU_DRIVER, None)]},
    "big-memory-gpu": {"requests": [_exact("gpu", "gpu-40gi")]},
    "prioritized": {"requests": [{"name": "gpu", "firstAvailable": [
        {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}
        for name, cls in (("h100", "gpu-h100"), ("a100", "gpu-a100"), ("any", GPU_DRIVER))]}]},
    "matched-pair": {"requests": [_exact("gpus", GPU_DRIVER, 2)],
                     "constraints": [{"requests": ["gpus"],
                                      "matchAttribute": f"{GPU_DRIVER}/driverVersion"}]},
    "gpu-and-nic": {"requests": [_exact("gpu", GPU_DRIVER), _exact("nic", NIC_DRIVER)]},
}
# the templates a workload asking for this many GPUs picks from
BY_COUNT = {1: ["single-gpu", "single-gpu", "big-memory-gpu", "prioritized", "gpu-and-nic"],
            2: ["two-gpu", "matched-pair"], 4: ["four-gpu"], 8: ["all-gpus"]}


@dataclass
class _Node:
    name: str
    model: str
    versions: list[str]  # per GPU
    nics: int
    free_gpus: list[int] = field(default_factory=list)
    free_nics: list[int] = field(default_factory=list)


def _slice(node: str, driver: str, devices: list[dict], suffix: str) -> dict:
    pool = {"name": node, "generation": 1, "resourceSliceCount": 1}
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": f"{node}-{driver}-{suffix}"},
            "spec": {"driver": driver, "nodeName": node, "pool": pool, "devices": devices}}


def _gpus(node: _Node) -> list[dict]:
    product, memory, _ = MODELS[node.model]
    return [{"name": f"gpu-{i}", "attributes": {"model": {"string": node.model},
                                               "productName": {"string": product},
                                               "index": {"int": i}, "driverVersion": {"version": v}},
             "capacity": {"memory": {"value": memory}}} for i, v in enumerate(node.versions)]


def _nics(node: _Node) -> list[dict]:
    return [{"name": f"nic-{i}", "attributes": {"index": {"int": i}, "rdma": {"bool": True},
                                               "speedGbps": {"int": 200}}} for i in range(node.nics)]


def _take(node: _Node, template: str) -> list[tuple[str, str, str]] | None:
    """(request, driver, device) for the template's claim on the node, taken from its free devices; None
    when they are not free (the allocator's first solution: devices in the order the slice lists them)."""
    gpus = node.free_gpus
    if template == "all-gpus":
        picked = gpus[:] if len(gpus) == len(node.versions) else []
        req = "gpus"
    elif template == "matched-pair":
        by_version: dict[str, list[int]] = {}
        for i in gpus:
            by_version.setdefault(node.versions[i], []).append(i)
        pairs = [ids for ids in sorted(by_version.values(), key=min) if len(ids) >= 2]
        picked, req = (pairs[0][:2] if pairs else []), "gpus"
    else:
        want = {"two-gpu": 2, "four-gpu": 4}.get(template, 1)
        if template == "big-memory-gpu" and node.model not in BIG_MEMORY:
            return None
        picked = gpus[:want] if len(gpus) >= want else []
        req = "gpus" if want > 1 else "gpu"
        if template == "prioritized":
            req = "gpu/" + (node.model if node.model in ("h100", "a100") else "any")
    if not picked or (template == "gpu-and-nic" and not node.free_nics):
        return None
    out = [(req, GPU_DRIVER, f"gpu-{i}") for i in picked]
    node.free_gpus = [i for i in gpus if i not in picked]
    if template == "gpu-and-nic":
        out.append(("nic", NIC_DRIVER, f"nic-{node.free_nics.pop(0)}"))
    return out


class _Dra:
    def __init__(self, objs: list[dict], seed: int) -> None:
        self.objs = objs
        self.rng = random.Random(f"dra-{seed}")
        self.out: list[dict] = []

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))

    def nodes(self) -> dict[str, _Node]:
        out: dict[str, _Node] = {}
        for obj in self.objs:
            if obj["kind"] != "Node" or obj["metadata"]["labels"].get("pool") != "gpu":
                continue
            model = self.rng.choice(sorted(MODELS))
            count = MODELS[model][2]
            versions = ["550.54.15" if self.rng.random() < 0.7 else "550.54.14" for _ in range(count)]
            node = _Node(obj["metadata"]["name"], model, versions, 2 if self.rng.random() < 0.5 else 0)
            node.free_gpus, node.free_nics = list(range(count)), list(range(node.nics))
            for part in ("capacity", "allocatable"):
                obj["status"][part].pop("nvidia.com/gpu", None)
            obj["metadata"]["labels"] |= {f"{GPU_DRIVER}/present": "true", f"{GPU_DRIVER}/model": model}
            out[node.name] = node
            self.out.append(_slice(node.name, GPU_DRIVER, _gpus(node), self.suffix()))
            if node.nics:
                self.out.append(_slice(node.name, NIC_DRIVER, _nics(node), self.suffix()))
        return out

    def claim(self, pod: dict, template: str, node: str, devices: list[tuple[str, str, str]]) -> dict:
        meta = pod["metadata"]
        owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"],
                 "controller": True, "blockOwnerDeletion": True}
        return {"apiVersion": API, "kind": "ResourceClaim", "metadata": {
                    "name": f"{meta['name']}-gpu-{self.suffix()}", "namespace": meta["namespace"],
                    "uid": self.uid(), "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                    "labels": {"claim-template": template}, "ownerReferences": [owner]},
                "spec": {"devices": TEMPLATES[template]},
                "status": {"allocation": {
                    "devices": {"results": [{"request": r, "driver": d, "pool": node, "device": dev}
                                            for r, d, dev in devices]},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                    "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}]}}

    def pods(self, nodes: dict[str, _Node]) -> None:
        chosen: dict[str, str] = {}  # app -> template: the replicas of one workload share their spec
        for pod in self.objs:
            if pod["kind"] != "Pod":
                continue
            container = pod["spec"]["containers"][0]
            limits = container.get("resources", {}).get("limits", {})
            if "nvidia.com/gpu" not in limits:
                continue
            count = int(limits.pop("nvidia.com/gpu"))
            app = pod["metadata"]["labels"]["app"]
            template = chosen.setdefault(app, self.rng.choice(BY_COUNT.get(count, ["single-gpu"])))
            container["resources"]["claims"] = [{"name": "gpu"}]
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
            node = nodes.get(pod["spec"].get("nodeName", ""))
            taken = _take(node, template) if node is not None else None
            if taken is None or node is None:
                if pod["spec"].pop("nodeName", None) is not None:  # its devices are not there: pending again
                    pod["status"] = {"phase": "Pending"}
                continue
            claim = self.claim(pod, template, node.name, taken)
            self.out.append(claim)
            pod["status"]["resourceClaimStatuses"] = [{"name": "gpu",
                                                       "resourceClaimName": claim["metadata"]["name"]}]

    def shared(self, namespace: str) -> list[dict]:
        """A pre-created claim on one big-memory GPU and a ReplicaSet of two pending pods that share it."""
        claim = {"apiVersion": API, "kind": "ResourceClaim",
                 "metadata": {"name": SHARED_CLAIM, "namespace": namespace, "uid": self.uid()},
                 "spec": {"devices": {"requests": [_exact("gpu", "gpu-40gi")]}}}
        app, h = "shared-infer", f"{self.rng.getrandbits(32):08x}"
        labels = {"app": app, "pod-template-hash": h}
        rs: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{app}-{h}", "namespace": namespace, "uid": self.uid()},
              "spec": {"replicas": 2, "selector": {"matchLabels": dict(labels)}}}
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                 "uid": rs["metadata"]["uid"], "controller": True}
        pods = [{"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": f"{app}-{h}-{self.suffix()}", "namespace": namespace, "uid": self.uid(),
                              "labels": dict(labels), "creationTimestamp": f"2025-01-28T23:59:5{k}Z",
                              "ownerReferences": [owner]},
                 "spec": {"containers": [{"name": "main", "image": "registry.example/infer:1.0",
                                          "resources": {
                     "requests": {"cpu": "1000m", "memory": "4096Mi"}, "claims": [{"name": "gpu"}]}}],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                     "priorityClassName": "high",
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": SHARED_CLAIM}]},
                 "status": {"phase": "Pending"}} for k in range(2)]
        return [claim, rs, *pods]

    def run(self) -> list[dict]:
        nodes = self.nodes()
        self.out += [{"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name},
                      "spec": {"selectors": [{"cel": {"expression": expr}}]}}
                     for name, expr in CLASSES.items()]
        namespaces = [o["metadata"]["name"] for o in self.objs if o["kind"] == "Namespace"]
        self.out += [{"apiVersion": API, "kind": "ResourceClaimTemplate",
                      "metadata": {"name": name, "namespace": ns},
                      "spec": {"metadata": {"labels": {"claim-template": name}},
                               "spec": {"devices": devices}}}
                     for ns in namespaces for name, devices in TEMPLATES.items()]
        self.pods(nodes)
        if nodes:
            self.out += self.shared("ml" if "ml" in namespaces else namespaces[0])
        return self.objs + self.out


def add_dra(objs: list[dict], seed: int) -> list[dict]:
    """The cluster with its GPU nodes' devices published through DRA and its GPU pods claiming them
    (``objs`` is changed in place: GPU nodes lose ``nvidia.com/gpu``, GPU pods their limit)."""
    return _Dra(objs, seed).run()
