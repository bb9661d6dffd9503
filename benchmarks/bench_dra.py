"""Greedy mode with DynamicResources: the same generated cluster scheduled twice, once with half of its
pending pods claiming GPUs through DRA (a ResourceSlice of 8 GPUs per node, DeviceClasses with CEL
selectors, templates asking for 1 or 2 devices) and once without the claims. Prints both times, their
ratio (the claims' cost, measured in the same run), how many pods got devices, and how many CEL
expressions were compiled (each once).
"""
from __future__ import annotations

import argparse
import copy
import time

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.plugins.dynamicresources.cel import compile_selector
from optisched.profile import default_config

DRIVER = "gpu.example.com"
CLASSES = {
    "gpu": f'device.driver == "{DRIVER}"',
    "gpu-a100": f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "a100"',
    "gpu-40gi": f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
}


def dra_objects(node_names: list[str], per_node: int, pods: list[dict]) -> list[dict]:
    out: list[dict] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                        "spec": {"selectors": [{"cel": {"expression": expr}}]}} for name, expr in CLASSES.items()]
    for i, n in enumerate(node_names):
        model, memory = ("a100", "80Gi") if i % 2 else ("l4", "24Gi")
        out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{n}-gpus"},
                    "spec": {"driver": DRIVER, "nodeName": n,
                             "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": f"gpu-{d}", "attributes": {"model": {"string": model},
                                                                             "index": {"int": d}},
                                          "capacity": {"memory": {"value": memory}}} for d in range(per_node)]}})
    for name, cls, count in (("one-gpu", "gpu", 1), ("two-a100", "gpu-a100", 2), ("big-gpu", "gpu-40gi", 1)):
        for ns in sorted({o["metadata"]["namespace"] for o in pods}):
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": name, "namespace": ns},
                        "spec": {"spec": {"devices": {"requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": cls, "count": count}}]}}}})
    return out


def timed(objs: list[dict]) -> tuple[float, int, int]:
    cluster = cluster_from_objects(objs)
    sched = GreedyScheduler(compile_cluster(cluster), default_config(), GreedyOptions(record=False, requeue=False))
    t = time.perf_counter()
    res = sched.run()
    seconds = time.perf_counter() - t
    placed = sum(1 for p in res.state.pending if res.snapshot.node_of[p] >= 0)
    with_claims = sum(1 for p in res.state.pending if res.snapshot.node_of[p] >= 0
                      and res.state.pods[p].spec.resource_claims)
    return seconds, placed, with_claims


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--devices", type=int, default=8, help="GPUs per node")
    ap.add_argument("--load", type=float, default=0.6)
    args = ap.parse_args()
    total = args.pending * 2
    base = generate(GenerateSpec(nodes=args.nodes, pods=total, pending_fraction=args.pending / total, seed=1,
                                 load=args.load))
    nodes = [o["metadata"]["name"] for o in base if o["kind"] == "Node"]
    claimed = copy.deepcopy(base)
    pending = [o for o in claimed if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    templates = ("one-gpu", "one-gpu", "two-a100", "big-gpu")
    for i, p in enumerate(pending[::2]):
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": templates[i % len(templates)]}]
    extra = dra_objects(nodes, args.devices, pending)
    without, placed0, _ = timed(base + extra)
    print(f"without claims: {without:.1f} s, {placed0} of {len(pending)} pending pods placed", flush=True)
    compile_selector.cache_clear()
    with_dra, placed1, got = timed(claimed + extra)
    info = compile_selector.cache_info()
    print(f"with claims on {len(pending[::2])} pods: {with_dra:.1f} s, {placed1} placed, {got} with devices; "
          f"ratio {with_dra / without:.2f}x; CEL compiles {info.misses} for {info.hits + info.misses} look-ups")


if __name__ == "__main__":
    main()
