"""GPU sharing in optimal mode's batch model: the batch's pods share devices through the rule's encoding,
the answer passes the greedy re-check device by device, and the encoding agrees with a brute-force replay
of the greedy filter."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from builders import state_of
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from test_rules_gpu import gpu_node, gpu_pod

from optisched.model.snapshot import Snapshot
from optisched.optimal.check import check_placement
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.plugins.gpu.share import GpuNodes, GpuPod, encode_gpu_share, pack_node
from optisched.plugins.gpu.share_plugin import GpuShareState
from optisched.profile import parse_config

CONFIG = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                       "profiles": [{"schedulerName": "default-scheduler",
                                     "plugins": {"filter": {"enabled": [{"name": "Open-Gpu-Share"}]}}}]})

CASES = [
    ("three 600-milli shares on one GPU: one is placed",
     [gpu_node("a", 1, "T4")], [gpu_pod(f"s-{i}", 1, 600) for i in range(3)], 1),
    ("two halves share one device so that a whole GPU fits on the other node",
     [gpu_node("a", 1, "T4"), gpu_node("b", 1, "T4")],
     [gpu_pod("half-1", 1, 500), gpu_pod("half-2", 1, 500), gpu_pod("whole", 1, 1000)], 3),
    ("shares of 400 and 600 pair up on two devices where best fit in queue order strands a 600",
     [gpu_node("a", 2, "T4")], [gpu_pod("q-1", 1, 400), gpu_pod("q-2", 1, 400), gpu_pod("r-1", 1, 600),
                                gpu_pod("r-2", 1, 600)], 4),
    ("a 2-GPU pod needs two idle devices beside the shares",
     [gpu_node("a", 4, "G2")], [gpu_pod(f"s-{i}", 1, 700) for i in range(3)] + [gpu_pod("pair", 2, 1000)], 3),
    ("a pod asking for a model goes only to a node of that model",
     [gpu_node("a", 1, "T4"), gpu_node("b", 1, "P100")],
     [gpu_pod("t4-1", 1, 600, spec="T4"), gpu_pod("t4-2", 1, 600, spec="T4")], 1),
]


@pytest.mark.parametrize("nodes, pods, placed", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_optimal_places_what_the_devices_hold_and_passes_the_greedy_recheck(nodes, pods, placed):
    state = state_of(*nodes, *pods)
    result = solve_optimal(state, CONFIG, OptimalOptions(time_limit=20, workers=1))
    assert result.violations == [] and result.certificate.source == "solver"
    assert int(np.count_nonzero(result.node_of >= 0)) == placed
    assert check_placement(state, CONFIG, result.node_of) == []
    final = Snapshot(state, with_bound=False)
    for p in np.flatnonzero(result.node_of >= 0).tolist():
        final.add(p, int(result.node_of[p]))
    gpu = final.shared(GpuShareState)
    assert (gpu.nodes.dev_free >= 0).all()  # every device holds its pods, one device tuple per pod
    assert all(len(gpu.devices[p]) == gpu.pods[p].num_gpu for p in np.flatnonzero(result.node_of >= 0).tolist())


def test_the_recheck_packs_a_node_when_best_fit_in_arrival_order_would_overcommit():
    state = state_of(gpu_node("a", 2, "T4"), *[gpu_pod(f"p-{i}", 1, m) for i, m in enumerate([400, 400, 600, 600])])
    snap = Snapshot(state, with_bound=False)
    gpu = snap.shared(GpuShareState)
    for p in range(4):
        snap.add(p, 0)
    assert gpu.nodes.dev_free[0, :2].tolist() == [0, 0]
    assert sorted(sorted(gpu.pods[p].gpu_milli for p in range(4) if gpu.devices[p] == (d,)) for d in (0, 1)) == \
        [[400, 600], [400, 600]]


# ------------------------------------------------------------------ the encoding against the greedy filter
def greedy_packs(nodes: GpuNodes, pods: list[GpuPod]) -> bool:
    """Some choice of devices lets every pod pass the greedy filter on node 0, bound one after another."""
    choices = [itertools.combinations(range(int(nodes.gpu_count[0])), p.num_gpu) for p in pods]
    for pick in itertools.product(*[list(c) for c in choices]):
        trial = nodes.copy()
        ok = True
        for pod, devs in zip(pods, pick):
            if not all(trial.dev_free[0, d] >= pod.gpu_milli for d in devs) or \
                    (not pod.sharing and not all(trial.dev_free[0, d] == 1000 for d in devs)):
                ok = False
                break
            trial.bind(pod, 0, devs)
        if ok:
            return True
    return False


def encoding_packs(nodes: GpuNodes, pods: list[GpuPod]) -> bool:
    """The encoding over classes: one integer per distinct demand, fixed to its number of pods."""
    kinds = sorted(set(pods), key=repr)
    m = cp_model.CpModel()
    place = {(k, 0): m.new_constant(pods.count(kind)) for k, kind in enumerate(kinds)}
    encode_gpu_share(m, nodes, kinds, place, resources=False)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver.solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


gpu_demand = st.one_of(st.builds(lambda m: GpuPod(1, 1, 1, m), st.sampled_from([100, 250, 400, 500, 600, 750])),
                       st.builds(lambda g: GpuPod(1, 1, g, 1000), st.sampled_from([1, 2])))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([1, 2, 3]), st.lists(st.sampled_from([0, 250, 500, 1000]), min_size=3, max_size=3),
       st.lists(gpu_demand, min_size=1, max_size=4))
def test_the_encoding_packs_a_node_exactly_when_the_greedy_filter_can(gpus, used, pods):
    nodes = GpuNodes.build(["n-0"], [64000], [65536], [gpus], ["T4"])
    nodes.dev_free[0, :gpus] = [1000 - u for u in used[:gpus]]
    want = greedy_packs(nodes, pods)
    assert encoding_packs(nodes, pods) == want
    found = pack_node(nodes, 0, pods)
    assert (found is not None) == want
    if found is not None:  # the devices the encoding chose pass the filter, pod after pod
        for pod, devs in zip(pods, found):
            assert all(nodes.dev_free[0, d] >= pod.gpu_milli for d in devs)
            nodes.bind(pod, 0, devs)
        assert (nodes.dev_free >= 0).all()
