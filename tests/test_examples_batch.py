"""The batch-placement examples: greedy mode's shortfall, and a placement that fits every pod.

Each example's comment describes both; here greedy mode must leave exactly the pods the comment names
pending, and the better placement written below must respect every node's allocatable (resource
arithmetic over ``ClusterState``) and pass every filter of the default profile for each pod against
all the others (taints, anti-affinity, topology spread).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import optisched
from optisched.framework import Code, CycleState
from optisched.greedy.framework_runner import Framework
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.profile import default_config

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"

CASES = {
    "strand-large-pod.yaml": (
        {"report-0", "report-1"},
        {"api-0": "node-1", "api-1": "node-1", "api-2": "node-2", "api-3": "node-2",
         "report-0": "node-3", "report-1": "node-4"}),
    "spread-anti-affinity.yaml": (
        {"web-2"},
        {"cache-0": "a-1", "cache-1": "b-1", "web-0": "a-2", "web-1": "b-2", "web-2": "c-1"}),
    "gpu-fragmentation.yaml": (
        {"train-0", "train-1"},
        {"infer-0": "gpu-1", "infer-1": "gpu-1", "infer-2": "gpu-1", "infer-3": "gpu-1",
         "train-0": "gpu-2", "train-1": "gpu-3", "web-0": "general-1", "web-1": "general-1"}),
}
IDS = {"strand-large-pod.yaml": "spreading small pods strands the large ones that packing places",
       "spread-anti-affinity.yaml": "a cache on the only node of zone c strands the web replica zone c needs",
       "gpu-fragmentation.yaml": "single-GPU pods spread over every GPU node leave no node four GPUs"}


def better_node_of(state, placement: dict[str, str]) -> np.ndarray:
    node_of = state.pod_node.copy()
    for name, node in placement.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[node]
    return node_of


def failing_filters(state, node_of: np.ndarray) -> list[str]:
    """Pods whose node fails a default-profile filter when every other pod is in place."""
    profile = default_config().profiles[0]
    snap = Snapshot(state)
    for p in np.flatnonzero((node_of >= 0) & (state.pod_node < 0)):
        snap.add(int(p), int(node_of[p]))
    fw = Framework(snap, profile)
    bad = []
    for p in np.flatnonzero((node_of >= 0) & (state.pod_node < 0)):
        node = snap.remove(int(p))
        cycle = CycleState(int(p), snap, profile)
        status, _, skipped = fw.pre_filter(cycle)
        ok = status.code == Code.SUCCESS and (status.nodes is None or status.nodes[node])
        if ok:
            ok = bool(fw.filter(cycle, np.array([node], dtype=np.int64), skipped).passed[0])
        if not ok:
            bad.append(state.pods[p].metadata.name)
        snap.add(int(p), node)
    return bad


@pytest.mark.parametrize("example", list(CASES), ids=[IDS[k] for k in CASES])
def test_greedy_strands_exactly_the_pods_the_example_names(example):
    stranded, _ = CASES[example]
    placements = optisched.schedule(optisched.load([str(EXAMPLES / example)])).placements()
    assert {k.split("/")[1] for k, v in placements.items() if v is None} == stranded


@pytest.mark.parametrize("example", list(CASES), ids=[IDS[k] for k in CASES])
def test_the_better_placement_places_every_pod_within_allocatable(example):
    _, better = CASES[example]
    state = compile_cluster(optisched.load([str(EXAMPLES / example)]))
    node_of = better_node_of(state, better)
    assert (node_of >= 0).all()
    used = np.zeros_like(state.allocatable)
    for p, n in enumerate(node_of):
        used[n] += state.pod_requests[p]
    assert (used <= state.allocatable).all(), dict(zip(state.resources, (used - state.allocatable).max(axis=0)))


@pytest.mark.parametrize("example", list(CASES), ids=[IDS[k] for k in CASES])
def test_the_better_placement_passes_every_filter(example):
    _, better = CASES[example]
    state = compile_cluster(optisched.load([str(EXAMPLES / example)]))
    assert failing_filters(state, better_node_of(state, better)) == []


def test_the_filter_check_catches_a_placement_that_breaks_anti_affinity_and_spread():
    state = compile_cluster(optisched.load([str(EXAMPLES / "spread-anti-affinity.yaml")]))
    both_on_a2 = {"cache-0": "a-1", "cache-1": "b-1", "web-0": "a-2", "web-1": "a-2", "web-2": "c-1"}
    assert set(failing_filters(state, better_node_of(state, both_on_a2))) == {"web-0", "web-1"}
