"""The synthetic cluster generator: deterministic, valid, and never overcommitting bound pods."""
from __future__ import annotations

import io
import json

import numpy as np
import yaml

from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster


def test_same_seed_same_bytes_and_formats_agree():
    spec = GenerateSpec(nodes=30, seed=3)
    outs = []
    for _ in range(2):
        buf = io.StringIO()
        dump(generate(spec), buf, "yaml")
        outs.append(buf.getvalue())
    assert outs[0] == outs[1]
    js = io.StringIO()
    dump(generate(spec), js, "json")
    assert json.loads(js.getvalue())["items"] == list(yaml.safe_load_all(outs[0]))
    other = io.StringIO()
    dump(generate(GenerateSpec(nodes=30, seed=4)), other, "yaml")
    assert other.getvalue() != outs[0]


def test_bound_pods_fit_and_references_resolve():
    objs = generate(GenerateSpec(nodes=200, seed=1, load=0.9, pending_fraction=0.3))
    state = compile_cluster(cluster_from_objects(objs))
    snap = Snapshot(state)
    assert (snap.requested <= state.allocatable).all(), "bound pods overcommit a node"
    assert len(state.pending) > 0 and (state.pod_node >= 0).sum() > 0
    names = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs}
    for o in objs:
        for ref in o["metadata"].get("ownerReferences", []):
            if ref["kind"] != "Deployment":
                assert (ref["kind"], o["metadata"]["namespace"], ref["name"]) in names
    gpu = state.resource_col("nvidia.com/gpu")
    for i, p in enumerate(state.pods):
        if state.pod_requests[i, gpu]:
            assert any(t.key == "nvidia.com/gpu" for t in p.spec.tolerations)
    assert np.isin(["Service", "PodDisruptionBudget", "StatefulSet"], [o["kind"] for o in objs]).all()


def test_replicas_never_share_a_name():
    """Seed 238 once drew the same random suffix for two replicas of one workload."""
    objs = generate(GenerateSpec(nodes=23, pods=20, pending_fraction=0.5, load=1.0, zones=1, gpu_fraction=0.25,
                                 seed=238))
    keys = [(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs if o["kind"] == "Pod"]
    assert len(keys) == len(set(keys))
    cluster_from_objects(objs)
