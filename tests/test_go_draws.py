"""The simulator's random draws replayed: Go's math/rand, and the arrival and tie order of a seeded run."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import datasets_dir, require
from hypothesis import given
from hypothesis import strategies as st
from test_openb import need_openb

from optisched.datasets.openb import load_nodes, load_pods
from optisched.experiments.fgd import RunResult, curve, run_fgd
from optisched.experiments.go_draws import GoRand, simulator_draws
from optisched.plugins.gpu.share import MILLI

PER_SEED = datasets_dir() / "fgd-atc23-simulator-expected-results" / "analysis_allo_discrete.csv"


def test_go_rand_seeded_with_1_gives_gos_first_values():
    """Go's documented stream: rand.Seed(1); rand.Int63() x5, and rand.Intn(100) x10."""
    r = GoRand(1)
    assert [r.int63() for _ in range(5)] == [5577006791947779410, 8674665223082153551, 6129484611666145821,
                                             4037200794235010051, 3916589616287113937]
    r = GoRand(1)
    assert [r.intn(100) for _ in range(10)] == [81, 87, 47, 59, 81, 18, 25, 40, 56, 0]


@given(st.integers(0, 2**40), st.integers(1, 60))
def test_perm_and_shuffle_are_permutations(seed, n):
    r = GoRand(seed)
    assert sorted(r.perm(n)) == list(range(n))
    items = list(range(n))
    r.shuffle(items)
    assert sorted(items) == list(range(n))


@pytest.mark.parametrize("demand, expect", [(1000, "top-up"), (20000, "trim")],
                         ids=["a short list is shuffled then topped up", "a long list loses random pods"])
def test_simulator_draws_tune_to_130_percent_of_capacity(demand, expect):
    names = [f"p-{i:02d}" for i in range(20)]
    gpu = np.full(20, demand // 20, dtype=np.int64)
    order, rank = simulator_draws(names, gpu, gpu, ["n-b", "n-a", "n-c"], capacity_milli=10 * MILLI, seed=42)
    total = int(gpu[order].sum())
    assert total <= 1.3 * 10 * MILLI
    if expect == "top-up":
        assert sorted(order[:20]) == list(range(20)) and total + int(gpu[0]) > 1.3 * 10 * MILLI
    else:
        assert len(set(order.tolist())) == len(order) < 20
    assert sorted(rank) == [0, 1, 2]


def test_a_top_up_ended_by_a_multi_gpu_pod_may_pass_the_target_and_is_kept():
    """``tuneUpPods`` tests ``total + MilliGpu`` (per GPU) but adds ``MilliGpu * GpuNumber``: the
    simulator keeps the overshoot and drops nothing."""
    names = ["p-0", "p-1"]
    total = np.array([8000, 8000], dtype=np.int64)
    per_gpu = np.array([1000, 1000], dtype=np.int64)
    order, _ = simulator_draws(names, total, per_gpu, ["n-0"], capacity_milli=20 * MILLI, seed=1)
    assert int(total[order].sum()) == 8000 * len(order) > 1.3 * 20 * MILLI


@pytest.mark.parametrize("workload, seed", [("cpu250", 47), ("cpu250", 48), ("default", 42), ("multigpu50", 45)])
def test_simulator_draws_reproduce_the_published_arrivals(workload, seed):
    """Below saturation every pod fits, so the allocation curve is the arrival order's alone: with the
    simulator's draws it equals the authors' run of that seed at every published step up to 60 % (to their rounding)."""
    d = need_openb() / "csv"
    require(PER_SEED.is_file(), f"published per-seed results not found at {PER_SEED}")
    nodes, pods = load_nodes(d / "openb_node_list_gpu_node.csv"), load_pods(d / f"openb_pod_list_{workload}.csv")
    cap = int(nodes.gpu_count.sum()) * MILLI
    order, _ = simulator_draws(pods.names, pods.total_milli, pods.gpu_milli, nodes.names, cap, seed)
    arrived = np.concatenate([[0], np.cumsum(pods.total_milli[order])])
    flat = np.zeros(len(arrived))
    ours = curve(RunResult(arrived, arrived, flat, flat, order, order, [], cap)).set_index("arrived_pct")
    pub = pd.read_csv(PER_SEED)
    row = pub[(pub.workload == f"openb_pod_list_{workload}") & (pub.sc_policy == "05-BestFit") & (pub.seed == seed)]
    steps = range(1, 61)
    ours_steps = np.array([ours.gpu_alloc_pct[k] for k in steps])
    assert np.abs(ours_steps - row[[str(k) for k in steps]].to_numpy()[0]).max() < 0.011  # they round each sample


def test_a_simulator_run_keeps_the_draws_of_its_seed(tmp_path):
    """``ties="simulator"`` runs the pods in the order of the simulator's draws, and is deterministic."""
    from test_fgd_experiment import small_trace
    d = small_trace(tmp_path) / "csv"
    nodes, pods = load_nodes(d / "openb_node_list_gpu_node.csv"), load_pods(d / "openb_pod_list_default.csv")
    cap = int(nodes.gpu_count.sum()) * MILLI
    a, b = run_fgd(nodes, pods, "DotProd", 7, ties="simulator"), run_fgd(nodes, pods, "DotProd", 7, ties="simulator")
    order, _ = simulator_draws(pods.names, pods.total_milli, pods.gpu_milli, nodes.names, cap, 7)
    assert np.array_equal(a.order, order) and np.array_equal(a.node, b.node)
