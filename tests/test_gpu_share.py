"""GPU sharing rule: filter, device choice, CP-SAT encoding, and the invariants every policy keeps."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from optisched.plugins.gpu.fgd import FragCache, typical_pods
from optisched.plugins.gpu.policies import POLICIES, PolicyContext, policy_class, select_host
from optisched.plugins.gpu.share import (
    GpuNodes,
    GpuPod,
    best_fit_device,
    encode_gpu_share,
    exclusive_devices,
    feasible,
)


def cluster(*specs: tuple[int, int, int, str], free: dict[int, list[int]] | None = None) -> GpuNodes:
    """Nodes from (cpu milli, mem MiB, gpus, model); ``free`` sets some nodes' per-device free milli."""
    nodes = GpuNodes.build([f"n{i}" for i in range(len(specs))], [s[0] for s in specs], [s[1] for s in specs],
                           [s[2] for s in specs], [s[3] for s in specs])
    for i, devs in (free or {}).items():
        nodes.dev_free[i, : len(devs)] = devs
    return nodes


FILTER_CASES = [
    ("a CPU-only pod fits any node with room", cluster((4000, 1000, 0, ""), (4000, 1000, 2, "T4")),
     GpuPod(2000, 500), [True, True]),
    ("a CPU-only pod needs CPU and memory", cluster((1000, 1000, 2, "T4"), (4000, 100, 2, "T4")),
     GpuPod(2000, 500), [False, False]),
    ("a GPU pod never goes to a node without GPUs", cluster((4000, 1000, 0, ""), (4000, 1000, 1, "T4")),
     GpuPod(100, 10, 1, 500), [False, True]),
    ("a sharing pod needs one device with its share free",
     cluster((4000, 1000, 2, "T4"), (4000, 1000, 2, "T4"), free={0: [400, 300], 1: [400, 600]}),
     GpuPod(100, 10, 1, 500), [False, True]),
    ("a whole-GPU pod needs idle devices, not the sum of shares",
     cluster((4000, 1000, 2, "T4"), (4000, 1000, 2, "T4"), free={0: [500, 500], 1: [1000, 0]}),
     GpuPod(100, 10, 1, 1000), [False, True]),
    ("a 2-GPU pod needs two idle devices on one node",
     cluster((4000, 1000, 2, "T4"), (4000, 1000, 4, "T4"), free={0: [1000, 900], 1: [1000, 0, 1000, 0]}),
     GpuPod(100, 10, 2, 1000), [False, True]),
    ("gpu_spec keeps a pod to the listed models", cluster((4000, 1000, 2, "T4"), (4000, 1000, 2, "V100M16")),
     GpuPod(100, 10, 1, 1000, ("V100M16", "V100M32")), [False, True]),
    ("the whole GPU request must come with its CPU", cluster((1000, 1000, 2, "T4"), (8000, 1000, 2, "T4")),
     GpuPod(2000, 10, 1, 1000), [False, True]),
]


@pytest.mark.parametrize("nodes, pod, want", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter(nodes, pod, want):
    assert feasible(nodes, pod).tolist() == want


DEVICE_CASES = [
    ("a sharing pod takes the fullest device that still fits", [1000, 300, 600, 500], GpuPod(1, 1, 1, 500), (3,)),
    ("a sharing pod takes the lowest index among equally full devices", [600, 1000, 600], GpuPod(1, 1, 1, 500),
     (0,)),
    ("a whole-GPU pod takes the first idle devices", [300, 1000, 0, 1000, 1000], GpuPod(1, 1, 2, 1000), (1, 3)),
    ("a CPU-only pod takes no device", [1000], GpuPod(1, 1), ()),
]


@pytest.mark.parametrize("free, pod, want", [c[1:] for c in DEVICE_CASES], ids=[c[0] for c in DEVICE_CASES])
def test_best_fit_device(free, pod, want):
    assert best_fit_device(np.array(free), pod) == want


def test_exclusive_devices_refuses_when_too_few_are_idle():
    with pytest.raises(ValueError):
        exclusive_devices(np.array([1000, 999]), 2)


def test_bind_takes_the_share_of_each_chosen_device_and_refuses_a_wrong_count():
    nodes = cluster((8000, 1000, 4, "G2"))
    nodes.bind(GpuPod(1000, 10, 2, 1000), 0, (1, 2))
    nodes.bind(GpuPod(1000, 10, 1, 300), 0, (0,))
    assert nodes.dev_free[0, :4].tolist() == [700, 0, 0, 1000]
    assert (nodes.cpu_free[0], nodes.kinds[0, 0], nodes.kinds[0, 2]) == (6000, 1, 1)
    with pytest.raises(ValueError):
        nodes.bind(GpuPod(1, 1, 2, 1000), 0, (3,))


def _solve_batch(nodes: GpuNodes, pods: list[GpuPod]) -> tuple[int, dict[int, tuple[int, tuple[int, ...]]]]:
    """Optimal mode for a batch: maximize placed GPU milli, then pods; returns the objective and the
    decoded placement (pod -> node, devices)."""
    m = cp_model.CpModel()
    place = {}
    for p, pod in enumerate(pods):
        for n in np.flatnonzero(feasible(nodes, pod)):
            place[p, int(n)] = m.new_bool_var(f"x{p}_{n}")
    for p in range(len(pods)):
        m.add_at_most_one(x for (q, _), x in place.items() if q == p)
    use = encode_gpu_share(m, nodes, pods, place)
    m.maximize(sum((pods[p].total_milli * (len(pods) + 1) + 1) * x for (p, _), x in place.items()))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 10
    assert solver.Solve(m) == cp_model.OPTIMAL
    counts = {key: int(solver.Value(x)) for key, x in place.items() if solver.Value(x)}
    devices = use.devices(solver.Value, pods, counts)
    return int(solver.ObjectiveValue()), {p: (n, devices[p, n][0]) for (p, n) in counts}


def test_optimal_puts_both_shares_on_one_device_to_keep_a_gpu_idle():
    """A 400 and a 600 share and one whole GPU on a 2-GPU node: the batch model puts both shares on one
    device and the whole GPU on the other (one share per device would leave no idle GPU)."""
    nodes = cluster((8000, 1000, 2, "T4"))
    pods = [GpuPod(100, 1, 1, 400), GpuPod(100, 1, 1, 600), GpuPod(100, 1, 1, 1000)]
    _, placed = _solve_batch(nodes, pods)
    assert sorted(placed) == [0, 1, 2]
    shared = {placed[0][1][0], placed[1][1][0]}
    assert len(shared) == 1 and placed[2][1] == tuple({0, 1} - shared)


pod_strategy = st.builds(
    lambda kind, cpu, mem, milli, spec: GpuPod(cpu, mem, *kind(milli), spec),
    st.sampled_from([lambda m: (0, 0), lambda m: (1, m), lambda m: (1, 1000), lambda m: (2, 1000),
                     lambda m: (4, 1000)]),
    st.integers(0, 6000), st.integers(0, 900), st.integers(50, 999),
    st.sampled_from([(), ("A",), ("B", "C"), ("C",)]))
cluster_strategy = st.lists(st.tuples(st.sampled_from([4000, 8000, 16000]), st.sampled_from([1000, 4000]),
                                      st.sampled_from([0, 1, 2, 4, 8]), st.sampled_from(["A", "B", "C"])),
                            min_size=1, max_size=5)


def _check_state(nodes: GpuNodes) -> None:
    assert (nodes.dev_free >= 0).all() and (nodes.dev_free <= 1000).all()
    assert (nodes.cpu_free >= 0).all() and (nodes.mem_free >= 0).all()
    past = np.arange(nodes.dev_free.shape[1])[None, :] >= nodes.gpu_count[:, None]
    assert (nodes.dev_free[past] == 0).all()


@settings(max_examples=30, deadline=None)
@given(cluster_strategy, st.lists(pod_strategy, min_size=1, max_size=25), st.sampled_from(sorted(POLICIES)))
def test_every_policy_keeps_devices_nodes_and_specs_within_bounds(specs, pods, policy):
    nodes = cluster(*[(c, m, g, mod if g else "") for c, m, g, mod in specs])
    frag = FragCache(nodes, typical_pods([p.cpu for p in pods], [p.gpu_milli for p in pods],
                                         [p.num_gpu for p in pods], ["|".join(p.spec) for p in pods]))
    rule = policy_class(policy)(PolicyContext(frag, np.random.default_rng(0)))
    for pod in pods:
        cand = np.flatnonzero(feasible(nodes, pod))
        if not len(cand):
            continue
        node = int(cand[select_host(rule.score(nodes, pod, cand), None)])
        devs = rule.devices(nodes, pod, node)
        assert all(nodes.dev_free[node, d] >= pod.gpu_milli for d in devs)
        assert not pod.spec or pod.num_gpu == 0 or nodes.models[nodes.model[node]] in pod.spec
        nodes.bind(pod, node, devs)
        _check_state(nodes)
    fresh = FragCache(nodes, frag.typ)
    assert np.allclose(fresh.frag, frag.frag)  # the incremental cache equals a recomputation


@settings(max_examples=20, deadline=None)
@given(cluster_strategy, st.lists(pod_strategy, min_size=1, max_size=8))
def test_optimal_placements_replay_through_the_greedy_filter(specs, pods):
    nodes = cluster(*[(c, m, g, mod if g else "") for c, m, g, mod in specs])
    _, placed = _solve_batch(nodes, pods)
    for p, (n, devs) in sorted(placed.items()):
        assert feasible(nodes, pods[p])[n]
        assert all(nodes.dev_free[n, d] >= pods[p].gpu_milli for d in devs)
        nodes.bind(pods[p], n, devs)
        _check_state(nodes)
