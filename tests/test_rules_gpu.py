"""GPU sharing and the FGD policies inside a KubeSchedulerConfiguration profile, run by greedy mode."""
from __future__ import annotations

import pytest
from builders import node, pod, state_of

from optisched.errors import InputError
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.plugins.gpu.policies import POLICIES
from optisched.plugins.gpu.share_plugin import GpuShareState, pod_gpu_demand
from optisched.profile import parse_config


def gpu_node(name: str, gpus: int, model: str, cpu: str = "32"):
    return node(name, cpu=cpu, memory="64Gi").alloc(**{"alibabacloud.com/gpu-count": str(gpus)}).label(
        **{"alibabacloud.com/gpu-card-model": model})


def gpu_pod(name: str, count: int, milli: int, spec: str = "", cpu: str = "1"):
    ann = {"alibabacloud.com/gpu-count": str(count), "alibabacloud.com/gpu-milli": str(milli)}
    if spec:
        ann["alibabacloud.com/gpu-card-model"] = spec
    return pod(name).req(cpu=cpu, memory="1Gi").set("metadata.annotations", ann)


def config(score: str):
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "percentageOfNodesToScore": 100, "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"filter": {"enabled": [{"name": "Open-Gpu-Share"}]},
                                     "score": {"disabled": [{"name": "*"}],
                                               "enabled": [{"name": score, "weight": 1000}]}}}]})


def run(score: str, *objs):
    state = state_of(*objs)
    result = GreedyScheduler(state, config(score), GreedyOptions(record=False)).run()
    gpu = result.snapshot.shared(GpuShareState)
    return result, gpu


SCORES = ["FGD", "BestFit", "DotProd", "GpuPacking", "GpuClustering", "Random"]  # with filter Open-Gpu-Share


def test_the_registered_policies_are_the_papers_six():
    assert sorted(POLICIES) == sorted(SCORES)


@pytest.mark.parametrize("score", SCORES)
def test_each_policy_runs_in_a_profile_and_keeps_every_gpu_within_1000_milli(score):
    objs = [gpu_node("a", 2, "T4"), gpu_node("b", 8, "G2"), gpu_node("c", 1, "P100")]
    objs += [gpu_pod(f"s{i}", 1, 300 + 100 * (i % 5)) for i in range(12)]
    objs += [gpu_pod("w1", 1, 1000), gpu_pod("w2", 2, 1000), gpu_pod("t4-only", 1, 500, spec="T4"),
             gpu_pod("too-big", 4, 1000, spec="T4")]
    result, gpu = run(score, *objs)
    place = result.placements()
    assert place["default/too-big"] is None and place["default/t4-only"] in ("a", None)
    assert sum(v is not None for v in place.values()) >= 10
    assert (gpu.nodes.dev_free >= 0).all()
    for row, devs in gpu.devices.items():
        assert len(devs) == gpu.pods[row].num_gpu


def test_fgd_in_a_profile_fills_the_shared_gpu_before_an_idle_one():
    result, gpu = run("FGD", gpu_node("a", 2, "T4"), gpu_pod("p1", 1, 500), gpu_pod("p2", 1, 500))
    rows = {p.key: i for i, p in enumerate(result.state.pods)}
    assert gpu.devices[rows["default/p1"]] == gpu.devices[rows["default/p2"]]


def test_a_bound_pod_keeps_the_devices_of_its_gpu_index_annotation():
    bound = gpu_pod("old", 1, 600).on("a")
    bound["metadata"]["annotations"]["alibabacloud.com/gpu-index"] = "1"
    _, gpu = run("BestFit", gpu_node("a", 2, "T4"), bound, gpu_pod("new", 1, 500))
    assert gpu.nodes.dev_free[0, :2].tolist() == [500, 400]


def test_a_gpu_annotation_that_is_not_a_number_names_the_pod_and_field():
    state = state_of(gpu_pod("bad", 1, 500).set("metadata.annotations", {"alibabacloud.com/gpu-milli": "half"}))
    with pytest.raises(InputError, match=r"Pod/default/bad .metadata.annotations\[alibabacloud.com/gpu-milli\]"):
        pod_gpu_demand(state.pods[0])
