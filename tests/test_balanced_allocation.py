"""NodeResourcesBalancedAllocation: PreScore skip for best-effort pods, the standard-deviation score with
Go's float64 arithmetic, on small hand-built clusters and every cycle of the recorded traces."""
from __future__ import annotations

import math

import numpy as np
import pytest
from builders import node, pod, snapshot_of
from helpers.replay import case_names, replay
from test_node_resources_fit import score_problems

from optisched.framework import Code, CycleState
from optisched.plugins.noderesources.balanced_allocation import (
    BalancedAllocation,
    balanced_change,
    balanced_pair,
    balanced_score,
)
from optisched.profile import default_config, parse_config

DEFAULT = default_config().profiles[0]
GPU = "nvidia.com/gpu"


def balanced_with(*resources: str):
    """The default profile with ``NodeResourcesBalancedAllocationArgs.resources``."""
    args = {"resources": [{"name": r, "weight": 1} for r in resources]}
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"pluginConfig": [{"name": "NodeResourcesBalancedAllocation",
                                                         "args": args}]}]}).profiles[0]


def run(objs, profile=DEFAULT, pod_name: str = "default/p"):
    """'skip' or {node: raw score} (the plugin has no NormalizeScore)."""
    snap = snapshot_of(*objs)
    rule = BalancedAllocation(snap, profile)
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    nodes = np.arange(snap.state.num_nodes)
    if rule.pre_score(cycle, nodes).code == Code.SKIP:
        return "skip"
    raw = rule.score(cycle, nodes)
    assert rule.normalize(cycle, raw).tolist() == raw.tolist()
    return dict(zip(snap.state.node_names, raw.tolist()))


def go_std_score(fractions: list[float]) -> int:
    """The upstream loop, written out in plain Python floats (float64, sequential sums)."""
    fr = [min(f, 1.0) for f in fractions]
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) > 2:
        total = 0.0
        for f in fr:
            total += f
        mean = total / len(fr)
        acc = 0.0
        for f in fr:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fr))
    else:
        std = 0.0
    return int((1 - std) * 100)


CASES = [
    ("a pod with no requests is best effort: Skip",
     [node("a"), pod("p")], DEFAULT, "skip"),
    ("best effort means no request for the configured resources (a GPU-only pod with cpu/memory configured)",
     [node("a").alloc(nvidia_gpu="1"), pod("p").lim(nvidia_gpu="1")], DEFAULT, "skip"),
    ("explicit zero requests are best effort too",
     [node("a"), pod("p").req(cpu="0", memory="0")], DEFAULT, "skip"),
    ("actual requests, not the 100m/200Mi defaults: memory fraction 0",
     [node("a", cpu="4", memory="8Gi"), pod("p").req(cpu="1")], DEFAULT, {"a": 87}),  # |.25 - 0| / 2
    ("the node's pods count with actual requests (one without requests adds nothing)",
     [node("a", cpu="4", memory="8Gi"), pod("q").on("a"), pod("r").on("a").req(cpu="1"),
      pod("p").req(cpu="1", memory="4Gi")], DEFAULT, {"a": 100}),  # .5 and .5
    ("equal fractions score 100, unequal lose |f1 - f2| / 2",
     [node("a", cpu="4", memory="8Gi"), node("b", cpu="8", memory="8Gi"), pod("p").req(cpu="2", memory="4Gi")],
     DEFAULT, {"a": 100, "b": 87}),  # b: .25 and .5
    ("float64 as Go: fractions .6 and .8 give 89, not the exact 90",
     [node("a", cpu="5", memory="5Gi"), pod("p").req(cpu="3", memory="4Gi")], DEFAULT, {"a": 89}),
    ("fractions are capped at 1 (an overcommitted node)",
     [node("a", cpu="1", memory="4Gi"), pod("q").on("a").req(cpu="2"), pod("p").req(cpu="1", memory="1Gi")],
     DEFAULT, {"a": 62}),  # min(3, 1) = 1 and .25 -> 1 - .375
    ("three resources: population standard deviation",
     [node("a", cpu="4", memory="8Gi").alloc(nvidia_gpu="4"), pod("p").req(cpu="1", memory="4Gi").lim(nvidia_gpu="4")],
     balanced_with("cpu", "memory", GPU), {"a": go_std_score([0.25, 0.5, 1.0])}),
    ("three configured, the node lacks one: the two-resource formula",
     [node("a", cpu="4", memory="8Gi"), pod("p").req(cpu="1", memory="4Gi").lim(nvidia_gpu="4")],
     balanced_with("cpu", "memory", GPU), {"a": 87}),
    ("a configured scalar resource the pod does not request is left out",
     [node("a", cpu="4", memory="8Gi").alloc(nvidia_gpu="4"), pod("q").on("a").lim(nvidia_gpu="4"),
      pod("p").req(cpu="1", memory="4Gi")],
     balanced_with("cpu", "memory", GPU), {"a": 87}),
    ("a single configured resource: std 0",
     [node("a", cpu="4"), pod("p").req(cpu="3")], balanced_with("cpu"), {"a": 100}),
    ("ephemeral-storage can be configured (actual requests)",
     [node("a", cpu="4").alloc(ephemeral_storage="10Gi"), pod("p").req(cpu="1", ephemeral_storage="5Gi")],
     balanced_with("cpu", "ephemeral-storage"), {"a": 87}),  # .25 and .5
    ("'pods' is never accounted: a pod requesting nothing else is best effort",
     [node("a"), pod("p")], balanced_with("cpu", "pods"), "skip"),
]


@pytest.mark.parametrize(("objs", "profile", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_balanced_allocation(objs, profile, want):
    assert run(objs, profile) == want


def test_score_without_prescore_state():
    """Score falls back to computing the requests itself, as upstream does when PreScore state is missing."""
    snap = snapshot_of(node("a", cpu="4", memory="8Gi"), pod("p").req(cpu="1"), pod("be"))
    rule = BalancedAllocation(snap, DEFAULT)
    nodes = np.arange(1)
    assert rule.score(CycleState(snap.state.pod_index["default/p"], snap, DEFAULT), nodes).tolist() == [87]
    assert rule.score(CycleState(snap.state.pod_index["default/be"], snap, DEFAULT), nodes).tolist() == [0]


def test_balanced_score_matches_go_loop_on_random_rows():
    """The vectorized scorer equals the plain sequential float64 loop, any number of resources."""
    rng = np.random.default_rng(7)
    for k in (1, 2, 3, 5, 9):
        alloc = rng.integers(0, 5, size=(200, k)) * rng.integers(1, 10**9, size=(200, k))
        req = rng.integers(0, 2 * 10**9, size=(200, k))
        got = balanced_score(req, alloc)
        for i in range(200):
            fr = [float(req[i, j]) / float(alloc[i, j]) for j in range(k) if alloc[i, j] != 0]
            assert got[i] == go_std_score(fr), (k, i)


@pytest.mark.parametrize("case", case_names())
def test_matches_every_recorded_cycle(case):
    problems: list[str] = []
    rule = None
    cycles = 0
    for step in replay(case):
        if rule is None:
            rule = BalancedAllocation(step.cycle_state.snapshot, step.cycle_state.profile)
        problems += score_problems(step, rule)
        cycles += 1
    assert cycles > 0
    assert not problems, problems[:5]


@pytest.mark.parametrize("seed", range(8))
def test_two_column_score_matches_the_matrix_score(seed):
    """cpu and memory on every node: the two-column path gives ``balanced_score`` over the matrix."""
    from test_node_resources_fit import _random_cluster
    snap = snapshot_of(*_random_cluster(seed))
    rule = BalancedAllocation(snap, DEFAULT)
    assert rule.scorer.columns is not None
    nodes = np.arange(snap.state.num_nodes)[::-1]
    for name, p in snap.state.pod_index.items():
        if snap.node_of[p] >= 0:
            continue
        cycle = CycleState(p, snap, DEFAULT)
        if rule.pre_score(cycle, nodes).code == Code.SKIP:
            continue
        want = balanced_score(*rule.scorer.inputs(nodes, rule.scorer.pod_requests(p)))
        assert rule.score(cycle, nodes).tolist() == want.tolist(), name


# v1.36.2's TestNodeResourcesBalancedAllocation (pkg/scheduler/framework/plugins/noderesources/
# balanced_allocation_test.go): per node, allocatable, what the node's pods request, the pod's request
# (a resource the score leaves out has allocatable 0), and the score upstream expects
V136_CASES = [
    ("nothing scheduled, differently sized nodes: node1", [4000, 10000], [0, 0], [3000, 5000], 68),
    ("nothing scheduled, differently sized nodes: node2", [6000, 10000], [0, 0], [3000, 5000], 75),
    ("pods scheduled with resources: node1", [10000, 20000], [3000, 0], [3000, 5000], 73),
    ("pods scheduled with resources: node2", [10000, 20000], [3000, 5000], [3000, 5000], 74),
    ("differently sized nodes: node2", [10000, 50000], [3000, 5000], [3000, 5000], 70),
    ("min/max score: node1 goes to balance", [3000, 5000], [3000, 0], [0, 5000], 100),
    ("min/max score: node2 leaves it", [3000, 5000], [0, 0], [0, 5000], 50),
    ("at node capacity: node1", [6000, 10000], [3000, 0], [3000, 0], 62),
    ("at node capacity: node2", [6000, 10000], [3000, 5000], [3000, 0], 62),
    ("a scalar resource the pod requests counts: node1", [3500, 40000, 8], [3000, 5000, 3], [0, 0, 1], 75),
    ("a scalar resource the pod requests counts: node2", [3500, 40000, 8], [3000, 5000, 0], [0, 0, 1], 76),
    ("a scalar resource the pod does not request is left out", [3500, 40000, 0], [0, 0, 0], [3000, 5000, 0], 56),
]


@pytest.mark.parametrize("case,alloc,used,req,want", V136_CASES, ids=[c[0] for c in V136_CASES])
def test_v136_scores_the_change_in_balance_as_upstream(case, alloc, used, req, want):
    alloc_, used_, req_ = (np.array([x], dtype=np.int64) for x in (alloc, used, req))
    with_pod = balanced_score(used_ + req_, alloc_)
    without = balanced_score(used_, alloc_)
    assert balanced_change(with_pod, without).tolist() == [want]
    if len(alloc) == 2:
        pair = balanced_change(balanced_pair(used_[:, 0] + req_[:, 0], alloc_[:, 0], used_[:, 1] + req_[:, 1], alloc_[:, 1]),
                               balanced_pair(used_[:, 0], alloc_[:, 0], used_[:, 1], alloc_[:, 1]))
        assert pair.tolist() == [want]
