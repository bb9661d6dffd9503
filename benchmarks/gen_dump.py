"""A cluster dump as ``kubectl get nodes,pods,... -A -o yaml --show-managed-fields`` (or ``-o json``)
prints it, at any size (``--no-managed-fields``: as kubectl prints it by default since v1.21).

``optisched generate``'s cluster (:mod:`optisched.datasets.generate`), dressed as the API server returns
it: one ``v1 List`` with ``items``; metadata with uid, resourceVersion, creationTimestamp, the
``kubectl.kubernetes.io/last-applied-configuration`` annotation on what kubectl applied, and
``managedFields`` with their ``fieldsV1`` trees for kube-controller-manager, kube-scheduler and the
kubelet; the spec defaults admission fills in; node status with conditions, addresses, nodeInfo and
images; pod status with conditions and containerStatuses. Keys are sorted in YAML as kubectl sorts them.

    python benchmarks/gen_dump.py --nodes 5000 --pods 50000 --format yaml -o /tmp/dump-5000.yaml
    python benchmarks/gen_dump.py --nodes 500 --no-managed-fields -o /tmp/lean.json

Items are written one at a time, so the generator's memory is the generated cluster's, not the file's.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

import yaml

from optisched.datasets.generate import GenerateSpec, generate

__all__ = ["dress", "items", "write_dump"]

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_TIME = "2025-01-01T00:00:00Z"
_NODE_CONDITIONS = [("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
_POD_CONDITIONS = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]


def _fields(obj: Any) -> Any:
    """The ``fieldsV1`` tree of ``obj`` as the API server writes it: ``f:<name>`` per field, ``k:{...}`` per
    keyed list item (containers by name, conditions by type), ``.: {}`` for a set whose members are owned."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {".": {}} if obj else {}
        for k, v in obj.items():
            out[f"f:{k}"] = _fields(v)
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            if isinstance(v, dict):
                key = {k: v[k] for k in ("name", "type", "containerPort", "key") if k in v} or {"i": i}
                out[f"k:{json.dumps(key, separators=(',', ':'), sort_keys=True)}"] = _fields(v)
            else:
                out[f"v:{json.dumps(v)}"] = {}
        return out
    return {}


def _managed(manager: str, operation: str, fields: dict, subresource: str | None = None) -> dict:
    tree = {k: v for k, v in _fields(fields).items() if k != "."}  # the root is no set of its own
    entry = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": tree, "manager": manager,
             "operation": operation, "time": _TIME}
    if subresource:
        entry["subresource"] = subresource
    return entry


def _node_status(node: dict, i: int) -> dict:
    status = node["status"]
    status["conditions"] = [{"lastHeartbeatTime": _TIME, "lastTransitionTime": _TIME, "message": m, "reason": r,
                             "status": s, "type": t} for t, s, r, m in _NODE_CONDITIONS]
    status["addresses"] = [{"address": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", "type": "InternalIP"},
                           {"address": node["metadata"]["name"], "type": "Hostname"}]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {"architecture": node["metadata"]["labels"]["kubernetes.io/arch"],
                          "bootID": node["metadata"]["uid"], "containerRuntimeVersion": "containerd://1.7.27",
                          "kernelVersion": "6.8.0-1021-aws", "kubeProxyVersion": "", "kubeletVersion": "v1.35.4",
                          "machineID": node["metadata"]["uid"].replace("-", ""), "operatingSystem": "linux",
                          "osImage": "Ubuntu 24.04.2 LTS", "systemUUID": node["metadata"]["uid"]}
    images = status.get("images", [])
    images += [{"names": [f"registry.example/system/agent-{j:02d}@sha256:{(i * 31 + j) % 10**8:064d}",
                          f"registry.example/system/agent-{j:02d}:v1.{j}.0"], "sizeBytes": 10_000_000 + j * 1_000_003}
               for j in range(30)]
    status["images"] = images
    return status


def _dress_node(node: dict, i: int, managed: bool) -> dict:
    meta = node["metadata"]
    meta["resourceVersion"] = str(1000 + i)
    meta["creationTimestamp"] = _TIME
    meta["annotations"] = {"node.alpha.kubernetes.io/ttl": "0",
                           "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                           "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{i:017x}"})}
    node["spec"]["podCIDR"] = f"100.{i // 256 % 256}.{i % 256}.0/24"
    node["spec"]["providerID"] = f"aws:///{meta['labels']['topology.kubernetes.io/zone']}/i-{i:017x}"
    status = _node_status(node, i)
    if managed:
        meta["managedFields"] = [
            _managed("kubelet", "Update", {"metadata": {"annotations": dict(meta["annotations"]),
                                                        "labels": dict(meta["labels"])}}),
            _managed("kube-controller-manager", "Update", {"metadata": {"annotations": {
                "node.alpha.kubernetes.io/ttl": "0"}}, "spec": {"podCIDR": "", "podCIDRs": [""]}}),
            _managed("kubelet", "Update", {"status": status}, "status")]
    return node


def _dress_pod(pod: dict, i: int, managed: bool) -> dict:
    meta, spec = pod["metadata"], pod["spec"]
    meta["resourceVersion"] = str(200_000 + i)
    meta.setdefault("annotations", {})
    if not meta.get("ownerReferences"):  # a bare pod was applied by kubectl
        applied = {"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": {}, "labels": meta.get("labels", {}),
                   "name": meta["name"], "namespace": meta["namespace"]}, "spec": spec}
        meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(applied) + "\n"
    for c in spec["containers"] + spec.get("initContainers", []):
        c.update({"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                  "terminationMessagePolicy": "File",
                  "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                    "name": "kube-api-access", "readOnly": True}]})
    spec.update({"dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "restartPolicy": "Always",
                 "schedulerName": "default-scheduler", "securityContext": {}, "serviceAccount": "default",
                 "serviceAccountName": "default", "terminationGracePeriodSeconds": 30})
    spec["volumes"] = [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}}]}}]
    status = pod["status"]
    running = bool(spec.get("nodeName"))
    status["qosClass"] = "Burstable"
    status["conditions"] = [{"lastProbeTime": None, "lastTransitionTime": _TIME, "status": "True" if running else "False",
                             "type": t} for t in (_POD_CONDITIONS if running else ["PodScheduled"])]
    if not running:
        status["conditions"][0].update({"reason": "Unschedulable", "message": "0/5000 nodes are available"})
    else:
        status.update({"hostIP": f"10.0.{i // 256 % 256}.{i % 256}", "podIP": f"100.64.{i // 256 % 256}.{i % 256}"})
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        status["podIPs"] = [{"ip": status["podIP"]}]
        status["containerStatuses"] = [{"containerID": f"containerd://{i:064x}", "image": c["image"],
                                        "imageID": f"{c['image']}@sha256:{i:064d}", "lastState": {}, "name": c["name"],
                                        "ready": True, "restartCount": 0, "started": True,
                                        "state": {"running": {"startedAt": _TIME}}} for c in spec["containers"]]
    if managed:
        owner = "kube-controller-manager" if meta.get("ownerReferences") else "kubectl-client-side-apply"
        desired = {k: v for k, v in meta.items() if k in ("labels", "ownerReferences", "annotations")}
        fields = [_managed(owner, "Update", {"metadata": desired, "spec": spec}),
                  _managed("kube-scheduler", "Update", {"status": {"conditions": status["conditions"][-1:]}}, "status")]
        if running:
            fields.append(_managed("kubelet", "Update", {"status": status}, "status"))
        meta["managedFields"] = fields
    return pod


def dress(objs: list[dict], managed: bool = True) -> Iterator[dict]:
    """Each object as the API server would return it (the objects are changed in place)."""
    for i, obj in enumerate(objs):
        kind = obj["kind"]
        obj["metadata"].setdefault("uid", f"{i:08x}-0000-4000-8000-000000000000")
        obj["metadata"].setdefault("creationTimestamp", _TIME)
        obj["metadata"].setdefault("resourceVersion", str(i + 1))
        if kind == "Node":
            yield _dress_node(obj, i, managed)
        elif kind == "Pod":
            yield _dress_pod(obj, i, managed)
        else:
            if managed:
                obj["metadata"]["managedFields"] = [_managed("kubectl-client-side-apply", "Update",
                                                             {k: v for k, v in obj.items() if k != "status"})]
            yield obj


def items(nodes: int, pods: int | None, managed: bool = True, seed: int = 1) -> Iterator[dict]:
    """The dressed objects of ``optisched generate --nodes N --pods P --seed S``."""
    yield from dress(generate(GenerateSpec(nodes=nodes, pods=pods, seed=seed)), managed)


def write_dump(objs: Iterator[dict], stream: IO[str], fmt: str) -> None:
    """A ``v1 List`` as kubectl prints it: YAML with sorted keys, or JSON indented by 4."""
    if fmt == "json":
        stream.write('{\n    "apiVersion": "v1",\n    "items": [')
        for n, obj in enumerate(objs):
            text = json.dumps(obj, indent=4)
            stream.write(("," if n else "") + "\n        " + text.replace("\n", "\n        "))
        stream.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
        return
    stream.write("apiVersion: v1\nitems:\n")
    for obj in objs:
        stream.write(yaml.dump([obj], Dumper=_DUMPER, sort_keys=True, default_flow_style=False, width=2**30))
    stream.write('kind: List\nmetadata:\n  resourceVersion: ""\n')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=None, help="default: 10 per node")
    ap.add_argument("--format", choices=["yaml", "json"], default=None, help="default: from -o's suffix, else yaml")
    ap.add_argument("--no-managed-fields", action="store_true", help="leave out metadata.managedFields")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    fmt = args.format or ("json" if args.output.endswith(".json") else "yaml")
    objs = items(args.nodes, args.pods, not args.no_managed_fields, args.seed)
    if args.output == "-":
        write_dump(objs, sys.stdout, fmt)
        return
    with open(args.output, "w", encoding="utf-8") as f:
        write_dump(objs, f, fmt)


if __name__ == "__main__":
    main()
