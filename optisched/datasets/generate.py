"""Seeded synthetic Kubernetes clusters: zones, node pools, GPU nodes, workloads, priorities, PDBs.

Everything is plain API objects (dicts as ``kubectl get -o yaml`` shows them), so the output loads like
any dump. The same :class:`GenerateSpec` gives the same bytes: one ``random.Random(seed)``, no clock,
no set iteration. Bound pods are placed only where they fit (cpu, memory, GPUs, pod count).
"""
from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from typing import IO, Any

import yaml

__all__ = ["GenerateSpec", "dump", "generate"]

REGION = "region-1"
# pool: (cpu millicores, memory Gi, gpus, share of non-GPU nodes, instance type)
POOLS = [
    ("general", 8000, 32, 0, 0.45, "m6.2xlarge"),
    ("compute", 16000, 32, 0, 0.25, "c6.4xlarge"),
    ("memory", 8000, 64, 0, 0.15, "r6.2xlarge"),
    ("small", 4000, 16, 0, 0.15, "m6.xlarge"),
]
GPU_POOL = ("gpu", 32000, 256, 8, "p4.8xlarge")
PRIORITY_CLASSES = [("critical", 100000, False, "PreemptLowerPriority"), ("high", 1000, False, "PreemptLowerPriority"),
                    ("default", 0, True, "PreemptLowerPriority"), ("batch", -10, False, "Never")]
GI = 1024


@dataclass(frozen=True)
class GenerateSpec:
    nodes: int = 20
    pods: int | None = None
    pending_fraction: float = 0.5
    load: float = 0.8
    zones: int = 3
    gpu_fraction: float = 0.1
    seed: int = 0


@dataclass
class _Shape:
    cpu: int  # millicores per pod
    mem: int  # MiB per pod
    gpu: int


class _Gen:
    def __init__(self, spec: GenerateSpec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.t = 0
        self.objs: list[dict] = []

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def ts(self) -> str:
        self.t += 1
        d, rem = divmod(self.t, 86400)
        h, rem = divmod(rem, 3600)
        m, s = divmod(rem, 60)
        return f"2025-01-{1 + d % 28:02d}T{h:02d}:{m:02d}:{s:02d}Z"

    # ------------------------------------------------------------------ nodes
    def nodes(self) -> list[dict]:
        spec, rng = self.spec, self.rng
        n_gpu = round(spec.nodes * spec.gpu_fraction)
        zones = [f"{REGION}-{chr(ord('a') + i)}" for i in range(spec.zones)]
        out = []
        counts: dict[str, int] = {}
        for i in range(spec.nodes):
            if i < n_gpu:
                pool, cpu, mem, gpu, itype = GPU_POOL
            else:
                r = rng.random()
                acc = 0.0
                for pool, cpu, mem, gpu, share, itype in POOLS:
                    acc += share
                    if r < acc:
                        break
            k = counts[pool] = counts.get(pool, 0) + 1
            name = f"{pool}-{k:04d}"
            zone = zones[i % len(zones)]
            node: dict[str, Any] = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": self.uid(), "labels": {
                    "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "arm64" if rng.random() < 0.1 else "amd64",
                    "topology.kubernetes.io/region": REGION, "topology.kubernetes.io/zone": zone,
                    "node.kubernetes.io/instance-type": itype, "pool": pool}},
                "spec": {},
                "status": {
                    "capacity": {"cpu": str(cpu // 1000), "memory": f"{mem}Gi", "pods": "110",
                                 "ephemeral-storage": "200Gi"},
                    "allocatable": {"cpu": f"{cpu - 100 - cpu // 50}m", "memory": f"{mem * GI - 600}Mi",
                                    "pods": "110", "ephemeral-storage": "190Gi"}},
            }
            if gpu:
                node["status"]["capacity"]["nvidia.com/gpu"] = str(gpu)
                node["status"]["allocatable"]["nvidia.com/gpu"] = str(gpu)
                node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
            elif rng.random() < 0.05:
                node["spec"]["taints"] = [{"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"}]
            if rng.random() < 0.02:
                node["spec"]["unschedulable"] = True
            if rng.random() < 0.5:
                node["status"]["images"] = [{"names": [f"registry.example/app{j:02d}:1.0"],
                                             "sizeBytes": rng.randrange(50, 900) * 1024 * 1024}
                                            for j in rng.sample(range(20), 3)]
            out.append(node)
        return out

    # ------------------------------------------------------------------ workloads
    def run(self) -> list[dict]:
        spec, rng = self.spec, self.rng
        for name, value, default, policy in PRIORITY_CLASSES:
            pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                  "value": value, "preemptionPolicy": policy}
            if default:
                pc["globalDefault"] = True
            self.objs.append(pc)
        namespaces = ["shop", "data", "ml"]
        for i, ns in enumerate(namespaces):
            self.objs.append({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": ns, "labels": {"team": f"team-{i}",
                                                                  "kubernetes.io/metadata.name": ns}}})
        nodes = self.nodes()
        self.objs.extend(nodes)
        free = [[self._alloc(n, "cpu"), self._alloc(n, "memory"), self._alloc(n, "nvidia.com/gpu"), 110]
                for n in nodes]
        gpu_nodes = [i for i, n in enumerate(nodes) if "taints" in n["spec"] and
                     n["spec"]["taints"][0]["key"] == "nvidia.com/gpu"]
        cpu_nodes = [i for i in range(len(nodes)) if i not in set(gpu_nodes) and not nodes[i]["spec"].get("unschedulable")]
        total_cpu = sum(f[0] for f in free)
        n_pods = spec.pods if spec.pods is not None else 10 * spec.nodes
        budget_cpu = spec.load * total_cpu
        pods: list[dict] = []
        app = 0
        per_pod_cpu = max(budget_cpu / max(n_pods, 1), 50)
        while len(pods) < n_pods:
            kind = rng.choices(["deploy", "sts", "bare", "gpu"], [0.6, 0.15, 0.1, 0.15 if gpu_nodes else 0])[0]
            replicas = min(rng.choice([1, 2, 3, 4, 6, 8, 12, 20]), n_pods - len(pods))
            ns = namespaces[app % len(namespaces)]
            shape = _Shape(int(per_pod_cpu * rng.choice([0.25, 0.5, 1, 1, 2, 4]) // 50 * 50) or 50,
                           rng.choice([128, 256, 512, 1024, 2048, 4096, 8192]), 0)
            if kind == "gpu":
                shape.gpu = rng.choice([1, 1, 2, 4, 8])
                shape.cpu = max(shape.cpu, 2000)
            pods.extend(self.workload(f"app{app:03d}", ns, kind, replicas, shape))
            app += 1
        # bind a share of the pods where they fit; the rest stay pending
        order = list(range(len(pods)))
        rng.shuffle(order)
        n_bound = int(len(pods) * (1 - spec.pending_fraction))
        bound = 0
        for idx in order:
            if bound >= n_bound:
                break
            p = pods[idx]
            need = self._need(p)
            cands = gpu_nodes if need[2] else cpu_nodes
            if not cands:
                continue
            for _ in range(4):
                i = cands[rng.randrange(len(cands))]
                f = free[i]
                if f[0] >= need[0] and f[1] >= need[1] and f[2] >= need[2] and f[3] >= 1:
                    f[0] -= need[0]
                    f[1] -= need[1]
                    f[2] -= need[2]
                    f[3] -= 1
                    p["spec"]["nodeName"] = nodes[i]["metadata"]["name"]
                    p["status"] = {"phase": "Running", "startTime": p["metadata"]["creationTimestamp"]}
                    bound += 1
                    break
        self.objs.extend(pods)
        return self.objs

    @staticmethod
    def _alloc(node: dict, res: str) -> int:
        v = node["status"]["allocatable"].get(res, "0")
        if res == "cpu":
            return int(v[:-1]) if v.endswith("m") else int(v) * 1000
        if res == "memory":
            return int(v[:-2])  # MiB
        return int(v)

    @staticmethod
    def _need(pod: dict) -> tuple[int, int, int]:
        cpu = mem = gpu = 0
        for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):  # init ones are sidecars
            r = c.get("resources", {}).get("requests", {})
            cpu += int(r.get("cpu", "0m")[:-1] or 0) if r.get("cpu") else 0
            mem += int(r.get("memory", "0Mi")[:-2] or 0) if r.get("memory") else 0
            gpu += int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
        return cpu, mem, gpu

    def workload(self, app: str, ns: str, kind: str, replicas: int, shape: _Shape) -> list[dict]:
        rng = self.rng
        labels = {"app": app}
        owner = None
        if kind in ("deploy", "gpu"):
            h = f"{rng.getrandbits(32):08x}"[:9]
            labels["pod-template-hash"] = h
            rs_name = f"{app}-{h}"
            rs_uid = self.uid()
            self.objs.append({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                              "metadata": {"name": rs_name, "namespace": ns, "uid": rs_uid, "ownerReferences": [
                                  {"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "uid": self.uid(),
                                   "controller": True}]},
                              "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)}}})
            owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name, "uid": rs_uid, "controller": True}
        elif kind == "sts":
            sts_uid = self.uid()
            self.objs.append({"apiVersion": "apps/v1", "kind": "StatefulSet",
                              "metadata": {"name": app, "namespace": ns, "uid": sts_uid},
                              "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}}})
            owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": app, "uid": sts_uid, "controller": True}
        if kind != "bare" and rng.random() < 0.8:
            self.objs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": app, "namespace": ns},
                              "spec": {"selector": {"app": app}, "ports": [{"port": 80, "targetPort": 8080}]}})
        if replicas >= 3 and rng.random() < 0.3:
            budgets: list[dict[str, int | str]] = [{"minAvailable": max(1, replicas // 2)}, {"maxUnavailable": 1},
                                                   {"minAvailable": "50%"}]
            budget = rng.choice(budgets)
            self.objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                              "metadata": {"name": app, "namespace": ns},
                              "spec": {**budget, "selector": {"matchLabels": {"app": app}}}})
        prio = rng.choices(["critical", "high", None, "batch"], [0.1, 0.25, 0.45, 0.2])[0]
        template = self.template(app, kind, shape, prio)
        pods = []
        names: set[str] = set()
        for r in range(replicas):
            suffix = str(r) if kind == "sts" else f"{rng.getrandbits(20):05x}"
            while suffix in names:  # two replicas drew the same suffix: draw again
                suffix = f"{rng.getrandbits(20):05x}"
            names.add(suffix)
            pod = json.loads(json.dumps(template))
            pod["metadata"] = {"name": f"{app}-{suffix}", "namespace": ns, "uid": self.uid(), "labels": dict(labels),
                               "creationTimestamp": self.ts()}
            if owner:
                pod["metadata"]["ownerReferences"] = [owner]
            pod["status"] = {"phase": "Pending"}
            pods.append(pod)
        return pods

    def template(self, app: str, kind: str, shape: _Shape, prio: str | None) -> dict:
        rng = self.rng
        req = {"cpu": f"{shape.cpu}m", "memory": f"{shape.mem}Mi"}
        container: dict[str, Any] = {"name": "main", "image": f"registry.example/{app[:5]}:1.0" if rng.random() < 0.5
                                     else f"registry.example/app{rng.randrange(20):02d}:1.0",
                                     "resources": {"requests": req, "limits": {"memory": f"{shape.mem * 2}Mi"}}}
        spec: dict[str, Any] = {"containers": [container]}
        if rng.random() < 0.1:
            container["resources"] = {}  # best effort
        if rng.random() < 0.1:
            spec["initContainers"] = [{"name": "proxy", "image": "registry.example/proxy:1.2", "restartPolicy": "Always",
                                       "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]
        if rng.random() < 0.05:
            container["ports"] = [{"containerPort": 9100, "hostPort": 9100, "protocol": "TCP"}]
        if prio:
            spec["priorityClassName"] = prio
        affinity: dict[str, Any] = {}
        if shape.gpu:
            container["resources"]["limits"] = {**container["resources"].get("limits", {}), "nvidia.com/gpu": str(shape.gpu)}
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        else:
            r = rng.random()
            if r < 0.15:
                spec["nodeSelector"] = {"kubernetes.io/arch": "amd64"}
            elif r < 0.25:
                affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": rng.sample(
                        ["general", "compute", "memory", "small"], 2)}]}]}}
            elif r < 0.4:
                affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.choice([10, 50, 100]), "preference": {"matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["compute"]}]}}]}
        r = rng.random()
        sel = {"matchLabels": {"app": app}}
        if kind == "sts" and r < 0.6:
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": sel}]}
        elif r < 0.2:
            affinity["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": sel}}]}
        elif r < 0.25:
            affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"topologyKey": "topology.kubernetes.io/zone",
                                                   "labelSelector": {"matchLabels": {"app": "app000"}}}}]}
        if affinity:
            spec["affinity"] = affinity
        r = rng.random()
        if r < 0.3:
            c: dict[str, Any] = {"maxSkew": rng.choice([1, 2]), "topologyKey": "topology.kubernetes.io/zone",
                                 "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                                 "labelSelector": sel}
            if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
                c["minDomains"] = self.spec.zones
            if kind != "sts" and rng.random() < 0.3:
                c["matchLabelKeys"] = ["pod-template-hash"]
            spec["topologySpreadConstraints"] = [c]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": spec}


def generate(spec: GenerateSpec) -> list[dict]:
    """The cluster's objects: PriorityClasses, Namespaces, Nodes, then workloads and their pods."""
    if not 1 <= spec.nodes <= 100_000:
        raise ValueError("nodes must be between 1 and 100000")
    return _Gen(spec).run()


def dump(objs: list[dict], stream: IO[str], fmt: str) -> None:
    """Write ``yaml`` (multi-document) or ``json`` (one ``kind: List``, an item per line)."""
    if fmt == "json":
        stream.write('{"apiVersion": "v1", "kind": "List", "items": [\n')
        stream.write(",\n".join(json.dumps(o, separators=(",", ":"), sort_keys=False) for o in objs))
        stream.write("\n]}\n")
        return
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    yaml.dump_all(objs, stream, Dumper=dumper, sort_keys=False, default_flow_style=False, explicit_start=True)
