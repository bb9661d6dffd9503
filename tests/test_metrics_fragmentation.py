"""Fragmentation, FGD GPU fragmentation and the largest placeable shape, on hand-computed cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from builders import node, pod, state_of

from optisched.metrics import (
    Workload,
    copies_that_fit,
    expected_fragmentation,
    expected_fragmented_free,
    fits,
    fragmentation,
    fragmented_free,
    gpu_fragmentation,
    largest_fitting_shape,
    workload_of,
)

GI = 2**30


@pytest.fixture(scope="module")
def two_nodes():
    # n1 keeps 1 cpu / 7Gi free, n2 3 cpu / 1Gi
    return state_of(
        node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi"),
        pod("x").req(cpu="3", memory="1Gi").on("n1"), pod("y").req(cpu="1", memory="7Gi").on("n2"),
        pod("p1").req(cpu="2", memory="2Gi"), pod("p2").req(cpu="2", memory="2Gi"),
        pod("p3").req(cpu="500m", memory="4Gi"),
    )


def test_workload_is_the_pending_pods_distinct_shapes_weighted_by_count(two_nodes):
    w = workload_of(two_nodes)
    cpu, mem = two_nodes.resource_col("cpu"), two_nodes.resource_col("memory")
    got = sorted((int(s[cpu]), int(s[mem]), round(float(p), 6)) for s, p in zip(w.shapes, w.weights))
    assert got == [(500, 4 * GI, round(1 / 3, 6)), (2000, 2 * GI, round(2 / 3, 6))]
    assert w.eligible.all()


def test_fragmentation_counts_free_capacity_no_pending_shape_can_use(two_nodes):
    st = two_nodes
    node_of = st.pod_node.copy()  # nothing pending placed
    # n1 (1 cpu, 7Gi free): the 500m/4Gi shape fits, so its cpu and memory are usable.
    # n2 (3 cpu, 1Gi free): neither shape fits (both want >= 2Gi): all of it is fragmented.
    frag = fragmented_free(st, node_of, workload_of(st))
    cpu, mem = st.resource_col("cpu"), st.resource_col("memory")
    assert frag[:, cpu].tolist() == [0, 3000]
    assert frag[:, mem].tolist() == [0, 1 * GI]
    share = fragmentation(st, node_of, workload_of(st))
    assert share[cpu] == pytest.approx(3000 / 4000)  # of 1 + 3 cpu free
    assert share[mem] == pytest.approx(1 / 8)  # of 7Gi + 1Gi free
    assert math.isnan(share[st.resource_col("ephemeral-storage")])  # nothing offered, nothing free


def test_expected_fragmentation_weights_each_shape_that_cannot_use_the_free_capacity(two_nodes):
    st = two_nodes
    node_of = st.pod_node.copy()
    # shapes: 2 cpu / 2Gi with weight 2/3, 500m / 4Gi with weight 1/3
    # n1 (1 cpu, 7Gi free): only the small shape fits, so 2/3 of its free capacity is expected fragmented
    # n2 (3 cpu, 1Gi free): neither fits, all of it
    frag = expected_fragmented_free(st, node_of, workload_of(st))
    cpu, mem = st.resource_col("cpu"), st.resource_col("memory")
    assert frag[:, cpu].tolist() == pytest.approx([1000 * 2 / 3, 3000])
    assert frag[:, mem].tolist() == pytest.approx([7 * GI * 2 / 3, 1 * GI])
    share = expected_fragmentation(st, node_of, workload_of(st))
    assert share[cpu] == pytest.approx((1000 * 2 / 3 + 3000) / 4000)
    assert share[mem] == pytest.approx((7 * 2 / 3 + 1) / 8)


def test_a_resource_counts_as_usable_only_through_a_shape_that_requests_it():
    # n1 has 2 GPUs and 4 cpu free; the only pending shape requests cpu alone: the GPUs are fragmented
    st = state_of(node("n1").alloc(nvidia_gpu="2"), pod("cpu-only").req(cpu="1"))
    frag = fragmented_free(st, st.pod_node.copy(), workload_of(st))
    assert frag[0, st.resource_col("nvidia.com/gpu")] == 2
    assert frag[0, st.resource_col("cpu")] == 0


def test_a_cordoned_node_is_left_out_of_fragmentation():
    st = state_of(node("n1", cpu="4"), node("n2", cpu="4").unschedulable(), pod("p").req(cpu="8"))
    cpu = st.resource_col("cpu")
    # only n1's 4 free cpu count, and the 8-cpu shape fits nowhere: all of it fragmented
    assert fragmented_free(st, st.pod_node.copy(), workload_of(st))[:, cpu].tolist() == [4000, 0]
    assert fragmentation(st, st.pod_node.copy(), workload_of(st))[cpu] == pytest.approx(1.0)


def test_shapes_keep_apart_when_they_may_use_different_nodes():
    st = state_of(node("gpu", cpu="8").alloc(nvidia_gpu="4").taint("nvidia.com/gpu"), node("cpu", cpu="8"),
                  pod("a").req(cpu="1"), pod("b").req(cpu="1").tolerate("nvidia.com/gpu"))
    w = workload_of(st)
    assert sorted(w.eligible.tolist()) == [[False, True], [True, True]]
    assert w.weights.tolist() == [0.5, 0.5]


# --------------------------------------------------------------------------- FGD
def gpu_cluster(g2_cpu_used: str = "0"):
    nodes = [node("g1", cpu="16", memory="64Gi").alloc(nvidia_gpu="4"),
             node("g2", cpu="16", memory="64Gi").alloc(nvidia_gpu="4"), node("c1", cpu="16", memory="64Gi")]
    pods = [pod("one").req(cpu="1", nvidia_gpu="1").on("g1")]
    if g2_cpu_used != "0":
        pods.append(pod("hog").req(cpu=g2_cpu_used).on("g2"))
    return state_of(*nodes, *pods)


def fgd_workload(st):
    """1-GPU pods half of the workload, 4-GPU pods a quarter, cpu-only pods a quarter."""
    shapes = np.zeros((3, len(st.resources)), dtype=np.int64)
    cpu, gpu, pods = (st.resource_col(r) for r in ("cpu", "nvidia.com/gpu", "pods"))
    shapes[:, pods] = 1
    shapes[:, cpu] = [1000, 4000, 2000]
    shapes[:, gpu] = [1, 4, 0]
    return Workload.of_shapes(shapes, np.array([2, 1, 1]), st.num_nodes)


@pytest.mark.parametrize("hog, per_node, amount, idle", [
    # g1: 3 idle; the 1-GPU task fits (0), the 4-GPU task does not (3 x 1/4), cpu-only tasks use no GPU (3 x 1/4)
    # g2: 4 idle; both GPU tasks fit, cpu-only 4 x 1/4; c1 has no GPU
    ("0", [1.5, 1.0, 0.0], 2.5, 7),
    # g2's cpu is taken: no task fits there, all of its 4 idle GPUs are fragmented for every task
    ("16", [1.5, 4.0, 0.0], 5.5, 7),
], ids=["tasks that fit a node leave none of its idle GPUs fragmented",
        "a node short of cpu has every idle GPU fragmented"])
def test_gpu_fragmentation_is_the_expected_idle_gpus_the_workload_cannot_use(hog, per_node, amount, idle):
    st = gpu_cluster(hog)
    gf = gpu_fragmentation(st, st.pod_node.copy(), fgd_workload(st))
    assert gf.per_node.tolist() == pytest.approx(per_node)
    assert gf.amount == pytest.approx(amount)
    assert int(gf.idle.sum()) == idle
    assert gf.ratio == pytest.approx(amount / idle)
    assert gf.share_of_total == pytest.approx(amount / 8)


def test_gpu_fragmentation_without_gpus_is_zero():
    st = state_of(node("n1"), pod("p").req(cpu="1"))
    gf = gpu_fragmentation(st, st.pod_node.copy(), workload_of(st))
    assert gf.amount == 0 and gf.total_gpus == 0 and math.isnan(gf.ratio)


def test_a_gpu_task_not_allowed_on_a_node_counts_all_its_idle_gpus():
    st = state_of(node("g1").alloc(nvidia_gpu="2").taint("nvidia.com/gpu"), pod("p").req(nvidia_gpu="1"))
    gf = gpu_fragmentation(st, st.pod_node.copy(), workload_of(st))  # p does not tolerate the taint
    assert gf.per_node.tolist() == [2.0]


# --------------------------------------------------------------------------- largest shape
def test_largest_fitting_shape_per_node():
    st = state_of(node("roomy", cpu="4", memory="8Gi"), node("tight", cpu="4", memory="8Gi"),
                  node("full", cpu="1", memory="1Gi"),
                  pod("t").req(cpu="3").on("tight"), pod("f").req(cpu="1").on("full"),
                  pod("small").req(cpu="500m", memory="1Gi"), pod("big").req(cpu="2", memory="4Gi"))
    w = workload_of(st)
    cpu = st.resource_col("cpu")
    best = largest_fitting_shape(st, st.pod_node.copy(), w)
    assert [int(w.shapes[i, cpu]) if i >= 0 else None for i in best] == [2000, 500, None]
    assert fits(np.zeros((3, len(st.resources)), np.int64), w).sum() == 0


@pytest.mark.parametrize("free, shape, copies", [
    ({"cpu": 4000, "memory": 8 * GI, "pods": 110}, {"cpu": 1000, "memory": 3 * GI, "pods": 1}, 2),
    ({"cpu": 4000, "memory": 8 * GI, "pods": 3}, {"cpu": 1000, "memory": 1 * GI, "pods": 1}, 3),
    ({"cpu": 500, "memory": 8 * GI, "pods": 110}, {"cpu": 1000, "memory": 1 * GI, "pods": 1}, 0),
], ids=["memory limits it to two", "free pod slots limit it to three", "too little cpu for one"])
def test_copies_that_fit(free, shape, copies):
    names = ["cpu", "memory", "pods"]
    f = np.array([[free[n] for n in names]], dtype=np.int64)
    s = np.array([shape[n] for n in names], dtype=np.int64)
    assert copies_that_fit(f, s).tolist() == [copies]


def test_a_resource_no_shape_requests_has_no_fragmentation_share():
    st = state_of(node("n1").alloc(ephemeral_storage="10Gi"), pod("p").req(cpu="8"))
    node_of = st.pod_node.copy()
    eph = st.resource_col("ephemeral-storage")
    assert math.isnan(fragmentation(st, node_of, workload_of(st))[eph])
    assert math.isnan(expected_fragmentation(st, node_of, workload_of(st))[eph])
    assert fragmentation(st, node_of, workload_of(st))[st.resource_col("cpu")] == 1.0  # 8 cpu never fits in 4
