"""Small builders for Kubernetes objects in tests: ``pod("web-1").req(cpu="500m").tolerate("gpu")``."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import ClusterState, compile_cluster


class _Obj(dict):
    def build(self) -> dict:
        return copy.deepcopy(dict(self))


class PodB(_Obj):
    def __init__(self, name: str, namespace: str = "default") -> None:
        super().__init__(apiVersion="v1", kind="Pod", metadata={"name": name, "namespace": namespace, "labels": {}},
                         spec={"containers": [{"name": "c0", "image": "app:1"}]})

    def _c(self, i: int = 0) -> dict:
        return self["spec"]["containers"][i]

    def req(self, **res: str) -> PodB:
        self._c().setdefault("resources", {}).setdefault("requests", {}).update(_names(res))
        return self

    def lim(self, **res: str) -> PodB:
        self._c().setdefault("resources", {}).setdefault("limits", {}).update(_names(res))
        return self

    def container(self, requests: dict | None = None, limits: dict | None = None, image: str = "app:1") -> PodB:
        c: dict[str, Any] = {"name": f"c{len(self['spec']['containers'])}", "image": image,
                             "resources": {}}
        if requests:
            c["resources"]["requests"] = _names(requests)
        if limits:
            c["resources"]["limits"] = _names(limits)
        self["spec"]["containers"].append(c)
        return self

    def init(self, requests: dict, sidecar: bool = False) -> PodB:
        c: dict[str, Any] = {"name": f"i{len(self['spec'].get('initContainers', []))}", "image": "init:1",
                             "resources": {"requests": _names(requests)}}
        if sidecar:
            c["restartPolicy"] = "Always"
        self["spec"].setdefault("initContainers", []).append(c)
        return self

    def overhead(self, **res: str) -> PodB:
        self["spec"]["overhead"] = _names(res)
        return self

    def pod_level(self, **res: str) -> PodB:
        self["spec"]["resources"] = {"requests": _names(res)}
        return self

    def status_resources(self, container: str, requests: dict | None = None, allocated: dict | None = None,
                         init: bool = False) -> PodB:
        """A container status reporting actuated ``requests`` (``resources``; None: no ``resources``) and
        ``allocated`` (``allocatedResources``), as during an in-place resize."""
        cs: dict[str, Any] = {"name": container}
        if requests is not None:
            cs["resources"] = {"requests": _names(requests)}
        if allocated is not None:
            cs["allocatedResources"] = _names(allocated)
        key = "initContainerStatuses" if init else "containerStatuses"
        self.setdefault("status", {}).setdefault(key, []).append(cs)
        return self

    def pod_status_resources(self, requests: dict | None = None, allocated: dict | None = None) -> PodB:
        """Pod-level actuated ``status.resources.requests`` and ``status.allocatedResources``."""
        st = self.setdefault("status", {})
        if requests is not None:
            st["resources"] = {"requests": _names(requests)}
        if allocated is not None:
            st["allocatedResources"] = _names(allocated)
        return self

    def resize_pending(self, reason: str = "Infeasible") -> PodB:
        """The ``PodResizePending`` condition the kubelet sets (reason ``Infeasible`` or ``Deferred``)."""
        self.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": "PodResizePending", "status": "True", "reason": reason})
        return self

    def label(self, **labels: str) -> PodB:
        self["metadata"]["labels"].update(labels)
        return self

    def on(self, node: str) -> PodB:
        self["spec"]["nodeName"] = node
        self.setdefault("status", {})["phase"] = "Running"
        return self

    def priority(self, value: int) -> PodB:
        self["spec"]["priority"] = value
        return self

    def tolerate(self, key: str, value: str = "", effect: str = "NoSchedule", op: str = "Equal") -> PodB:
        t = {"key": key, "operator": op, "effect": effect}
        if op == "Equal":
            t["value"] = value
        self["spec"].setdefault("tolerations", []).append(t)
        return self

    def apart(self, app: str, key: str = "kubernetes.io/hostname") -> PodB:
        """Required pod anti-affinity against pods labelled ``app=APP`` in the same ``key`` domain."""
        return self.set("spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}})

    def set(self, path: str, value: Any) -> PodB:
        """Set any field by dotted path, e.g. ``set("spec.nodeSelector", {...})``."""
        cur = self
        parts = path.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value
        return self


class NodeB(_Obj):
    def __init__(self, name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110") -> None:
        super().__init__(apiVersion="v1", kind="Node",
                         metadata={"name": name, "labels": {"kubernetes.io/hostname": name}},
                         spec={}, status={"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}})

    def label(self, **labels: str) -> NodeB:
        self["metadata"]["labels"].update({k.replace("__", "/").replace("_", "-") if "__" in k else k: v
                                           for k, v in labels.items()})
        return self

    def labels(self, labels: dict[str, str]) -> NodeB:
        self["metadata"]["labels"].update(labels)
        return self

    def zone(self, zone: str, region: str = "r1") -> NodeB:
        return self.labels({"topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": region})

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeB:
        self["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def alloc(self, **res: str) -> NodeB:
        self["status"]["allocatable"].update(_names(res))
        return self

    def unschedulable(self) -> NodeB:
        self["spec"]["unschedulable"] = True
        return self

    def declare(self, *features: str) -> NodeB:
        """``status.declaredFeatures``, in the given order (the API server keeps it sorted)."""
        self["status"]["declaredFeatures"] = list(features)
        return self


def _names(res: dict) -> dict:
    """Python-friendly keys: ``nvidia_gpu`` -> ``nvidia.com/gpu``, ``ephemeral_storage`` -> ``ephemeral-storage``."""
    alias = {"nvidia_gpu": "nvidia.com/gpu", "ephemeral_storage": "ephemeral-storage"}
    return {alias.get(k, k): v for k, v in res.items()}


def pod(name: str, namespace: str = "default") -> PodB:
    return PodB(name, namespace)


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110") -> NodeB:
    return NodeB(name, cpu, memory, pods)


def state_of(*objs: dict) -> ClusterState:
    return compile_cluster(cluster_from_objects([dict(o) for o in objs]))


def snapshot_of(*objs: dict) -> Snapshot:
    return Snapshot(state_of(*objs))


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    """Run ``optisched ARGS`` in-process: (exit status, stdout, stderr)."""
    import sys

    from optisched import cli

    old = sys.argv
    sys.argv = ["optisched", *args]
    try:
        cli.main()
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.argv = old
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def chromium_command(chromium: str, profile: Path, *args: str) -> list[str]:
    """Headless Chromium with no network side traffic and its own profile folder, then ``args``."""
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", *args]
