"""Greedy mode with the volume plugins: their cost on a cluster without volumes (the plugins enabled
vs disabled in the profile, same cluster, same run) and on one where a share of the pods have claims
(vs the volume plugins disabled on the same cluster, and vs the cluster without volumes; more pods
fail on their volumes there, which sends them through preemption). Best of ``--repeat`` runs; the machine is shared.

    python benchmarks/bench_volumes.py --nodes 1000 --pods 4000 --claims 0.5
"""
from __future__ import annotations

import argparse
import time

from optisched.datasets.generate import GenerateSpec, generate
from optisched.datasets.storage import VolumeSpec, add_volumes
from optisched.greedy.scheduler import GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.profile import default_config, parse_config

VOLUME_PLUGINS = ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]


def without_volume_plugins():  # type: ignore[no-untyped-def]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"schedulerName": "default-scheduler", "plugins": {"multiPoint": {
                             "disabled": [{"name": n} for n in VOLUME_PLUGINS]}}}]})


def best(objs: list[dict], configs: list, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Best time of each config, the runs interleaved so that a change of load hits all alike."""
    times: list[list[float]] = [[] for _ in configs]
    for _ in range(repeat):
        for i, config in enumerate(configs):
            state = compile_cluster(cluster_from_objects(objs))
            t = time.perf_counter()
            GreedyScheduler(state, config).run()
            times[i].append(time.perf_counter() - t)
    return [min(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=4000)
    ap.add_argument("--claims", type=float, default=0.5, help="share of non-StatefulSet pods given a claim")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    plain = generate(GenerateSpec(nodes=a.nodes, pods=a.pods, seed=1))
    on, off = best(plain, [default_config(), without_volume_plugins()], a.repeat)
    print(f"no volumes: plugins on {on:.2f}s, off {off:.2f}s, ratio {on / off:.2f}")
    with_claims = add_volumes(generate(GenerateSpec(nodes=a.nodes, pods=a.pods, seed=1)),
                              VolumeSpec(claim_fraction=a.claims), 1)
    claimed = sum(1 for o in with_claims if o["kind"] == "Pod" and o["spec"].get("volumes"))
    vol, vol_off = best(with_claims, [default_config(), without_volume_plugins()], a.repeat)
    print(f"{claimed} of {a.pods} pods with claims: plugins on {vol:.2f}s, off {vol_off:.2f}s, "
          f"ratio {vol / vol_off:.2f}; ratio to the cluster without volumes {vol / on:.2f}")


if __name__ == "__main__":
    main()
