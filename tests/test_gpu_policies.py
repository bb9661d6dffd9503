"""The FGD paper's policies: arithmetic against a line-by-line reading of the simulator, and the registry."""
from __future__ import annotations

import math
import sys
import types
from importlib.metadata import EntryPoint

import numpy as np
import pytest

from optisched.plugins.gpu import policies as gpu_policies
from optisched.plugins.gpu.fgd import FGD, FragCache, typical_pods
from optisched.plugins.gpu.policies import (
    POLICIES,
    PolicyContext,
    available_policies,
    min_max_normalize,
    policy_class,
    select_host,
)
from optisched.plugins.gpu.share import MILLI, GpuNodes, GpuPod, feasible


def _frag_oracle(cpu_left, devs, model, typ):
    """``NodeGpuShareFragAmountScore`` written the way ``pkg/utils/frag.go`` loops, one node at a time."""
    total, out = sum(devs), 0.0
    for cpu, milli, num, spec, f in typ:
        allowed = not spec or (bool(model) and model in spec)
        q3 = milli > 0 and allowed and sum(d >= milli for d in devs) >= num and cpu_left >= cpu
        out += f * (sum(d for d in devs if d < milli) if q3 else total)
    return out


def _fgd_oracle(cpu_left, devs, model, pod, typ):
    before = _frag_oracle(cpu_left, devs, model, typ)

    def score(after):
        return int(1.0 / (1.0 + math.exp(-(before - after) / 1000)) * 100)
    if pod.sharing:
        best = None
        for i, d in enumerate(devs):
            if d >= pod.gpu_milli:
                nd = list(devs)
                nd[i] -= pod.gpu_milli
                s = score(_frag_oracle(cpu_left - pod.cpu, nd, model, typ))
                if best is None or s > best[0]:
                    best = (s, i)
        return best
    nd, req = list(devs), pod.num_gpu
    for i in sorted(range(len(nd)), key=lambda i: nd[i]):
        if req and pod.gpu_milli <= nd[i]:
            nd[i] -= pod.gpu_milli
            req -= 1
    return score(_frag_oracle(cpu_left - pod.cpu, nd, model, typ)), None


def _random_cluster(seed: int, n: int = 40) -> GpuNodes:
    rng = np.random.default_rng(seed)
    nodes = GpuNodes.build([f"n{i}" for i in range(n)], rng.choice([8000, 32000, 96000], n), [10**6] * n,
                           rng.choice([1, 2, 4, 8], n), rng.choice(["A", "B"], n))
    for i in range(n):
        g = nodes.gpu_count[i]
        nodes.dev_free[i, :g] = rng.choice([0, 100, 300, 500, 1000], g)
        nodes.cpu_free[i] = rng.integers(0, nodes.cpu_cap[i] + 1)
    return nodes


TYPICAL = typical_pods([2000, 4000, 8000, 0, 1000, 2000], [500, 1000, 1000, 0, 250, 500], [1, 1, 2, 0, 1, 1],
                       ["", "", "A", "", "", ""])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("pod", [GpuPod(1000, 0, 1, 300), GpuPod(3000, 0, 1, 1000), GpuPod(2000, 0, 2, 1000),
                                 GpuPod(500, 0), GpuPod(1000, 0, 1, 100)],
                         ids=["a 300-milli share", "one whole GPU", "two whole GPUs", "a CPU-only pod",
                              "a 100-milli share"])
def test_fgd_score_and_device_equal_the_simulator_loops(seed, pod):
    nodes = _random_cluster(seed)
    typ = [(int(TYPICAL.cpu[i]), int(TYPICAL.milli[i]), int(TYPICAL.num[i]), TYPICAL.spec[i], float(TYPICAL.freq[i]))
           for i in range(len(TYPICAL.freq))]
    rule = FGD(PolicyContext(FragCache(nodes, TYPICAL), np.random.default_rng(0)))
    cand = np.flatnonzero(feasible(nodes, pod))
    scores = rule.score(nodes, pod, cand)
    for j, i in enumerate(cand):
        devs = nodes.dev_free[i, : nodes.gpu_count[i]].tolist()
        want, dev = _fgd_oracle(int(nodes.cpu_free[i]), devs, nodes.models[nodes.model[i]], pod, typ)
        assert scores[j] == want
        if dev is not None:
            assert rule.devices(nodes, pod, int(i)) == (dev,)


def test_typical_pods_follow_popularity_then_request_size_and_stop_at_the_threshold():
    cpu = [1000] * 6 + [2000] * 3 + [500] * 3 + [9000]
    typ = typical_pods(cpu, [0] * 13, [0] * 13, [""] * 13, threshold=90)
    assert typ.cpu.tolist() == [1000, 2000, 500]  # 2000 before 500 on equal counts; 12/13 >= 90 %
    assert typ.freq.tolist() == pytest.approx([0.5, 0.25, 0.25])


def _one(policy: str, nodes: GpuNodes, pod: GpuPod) -> list[int]:
    rule = policy_class(policy)(PolicyContext(FragCache(nodes, TYPICAL), np.random.default_rng(0)))
    return rule.score(nodes, pod, np.arange(len(nodes.names))).tolist()


def _nodes(free: list[list[int]], cpu: int = 64000) -> GpuNodes:
    nodes = GpuNodes.build([f"n{i}" for i in range(len(free))], [cpu] * len(free), [10**6] * len(free),
                           [len(f) for f in free], ["A"] * len(free))
    for i, f in enumerate(free):
        nodes.dev_free[i, : len(f)] = f
    return nodes


PACKING = [
    ("an idle node scores 33 less its GPUs", [[MILLI] * 8, [MILLI] * 2], GpuPod(1, 1, 1, 500), [25, 31]),
    ("a share on a used GPU beats idle GPUs on a used node", [[400, MILLI], [0, MILLI]], GpuPod(1, 1, 1, 300),
     [96, 49]),
    ("whole GPUs on a used node score 50 less the GPUs taken", [[0, MILLI, MILLI, MILLI]], GpuPod(1, 1, 2, 1000),
     [48]),
    ("a CPU-only pod scores 0", [[MILLI]], GpuPod(1, 1), [0]),
]


@pytest.mark.parametrize("free, pod, want", [c[1:] for c in PACKING], ids=[c[0] for c in PACKING])
def test_gpu_packing(free, pod, want):
    assert _one("GpuPacking", _nodes(free), pod) == want


def test_gpu_clustering_prefers_nodes_holding_only_the_same_kind():
    nodes = _nodes([[500, MILLI], [500, MILLI], [MILLI, MILLI], [0, MILLI]])
    nodes.kinds[0, 0] = 1  # a sharing pod
    nodes.kinds[1, [0, 1]] = 1  # a sharing and a 1-GPU pod
    nodes.kinds[3, 1] = 1  # a 1-GPU pod
    # base = 25 * (8000 - free) / 8000: 20, 20, 18, 21
    assert _one("GpuClustering", nodes, GpuPod(1, 1, 1, 200)) == [95, 70, 43, 21]


def test_best_fit_and_dot_product_follow_the_simulator_formulas():
    nodes = _nodes([[MILLI, MILLI], [300, 0]], cpu=64000)
    pod = GpuPod(8000, 1, 1, 200)
    raw = [int((1 - ((64000 - 8000) / 128000 * 0.5 + (f - 200) / 8000 * 0.5)) * 100) for f in (2000, 300)]
    assert _one("BestFit", nodes, pod) == min_max_normalize(np.array(raw)).tolist()
    dot = [int(100 * (1 - (64000 / 128000 * 8000 / 128000 + f / 8000 * 200 / 8000) / 2)) for f in (2000, 300)]
    assert _one("DotProd", nodes, pod) == dot


def test_dot_product_scores_a_cpu_only_pod_by_its_free_cpu_alone():
    """``calculateDotProductScore`` (merge, max) with a pod GPU vector of 0: the node's free GPUs drop out,
    and truncating 100 * (1 - dot / 2) makes nodes of quite different free CPU tie (the cpu250 trace's
    CPU-only pods mostly land in such ties, which go to the first node of the run's node order)."""
    nodes = _nodes([[MILLI] * 8, [0] * 8, [MILLI] * 2, [MILLI] * 2], cpu=96000)
    nodes.cpu_free[:] = [96000, 96000, 8000, 20000]
    # dot / 2 = free * 12500 / 128000**2 / 2 = 0.0366, 0.0366, 0.0031, 0.0076
    assert _one("DotProd", nodes, GpuPod(12500, 1)) == [96, 96, 99, 99]


def test_random_scores_exactly_one_feasible_node():
    assert sorted(_one("Random", _nodes([[MILLI]] * 5), GpuPod(1, 1, 1, 100))) == [0, 0, 0, 0, 100]


@pytest.mark.parametrize("ties, want", [(None, 1), (np.array([5, 3, 9, 1]), 3)],
                         ids=["ties go to the first node", "ties go to the lowest rank"])
def test_select_host(ties, want):
    assert select_host(np.array([1, 7, 2, 7]), ties) == want


def test_every_registered_policy_has_its_module_and_name():
    for name in POLICIES:
        assert policy_class(name).name == name


def test_a_package_registers_a_policy_through_the_entry_point_group(monkeypatch):
    module = types.ModuleType("my_policies")

    class Mine(policy_class("BestFit")):
        name = "Mine"
    module.Mine = Mine
    monkeypatch.setitem(sys.modules, "my_policies", module)
    ep = EntryPoint("Mine", "my_policies:Mine", gpu_policies.ENTRY_POINT_GROUP)
    monkeypatch.setattr(gpu_policies, "entry_points", lambda group: [ep] if group == ep.group else [])
    assert "Mine" in available_policies() and policy_class("Mine") is Mine
    with pytest.raises(KeyError, match="unknown policy"):
        policy_class("Nope")
