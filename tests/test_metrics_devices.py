"""DRA device metrics: devices published, allocated, free and stranded per node, from a greedy run's
claims or settled from any placement; their rows in compare and their section in the report."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dynamic_resources import DRIVER, device_class, gpus, node, pod, template

import optisched
from optisched import metrics as m
from optisched.comparison.compare import build_comparison
from optisched.comparison.runs import PlacementRun, placement_run, run_greedy
from optisched.greedy.scheduler import GreedyOptions
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.check import settled_devices
from optisched.plugins.dynamicresources.claims import claim_book
from optisched.profile import default_config
from optisched.report import write_report

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
STRANDED = EXAMPLES / "dra-stranded-gpus.yaml"


def state_of(objects: list[dict]):
    return compile_cluster(cluster_from_objects(objects))


def greedy_of(state) -> PlacementRun:
    return run_greedy(state, default_config(), options=GreedyOptions(record=True, requeue=False))


def test_greedy_strands_three_gpus_per_node_in_the_example():
    state = compile_cluster(optisched.load([str(STRANDED)]))
    run = greedy_of(state)
    use = m.device_usage(state, run.node_of, run.devices or frozenset())
    assert run.devices == {f"{DRIVER}/gpu-1/gpu-0", f"{DRIVER}/gpu-2/gpu-0"}
    assert use.published.tolist() == [4, 4] and use.allocated.tolist() == [1, 1]
    assert use.free.tolist() == [3, 3] and use.stranded.tolist() == [3, 3]  # train-0 needs four on one node
    # the FGD expectation: 6 free GPUs, usable by the two infer pods (2/3 of the workload), not by train-0
    assert m.device_fragmentation(state, use, m.device_workload(state)).amount == 6 / 3


def test_the_packed_answer_is_settled_to_devices_and_strands_none():
    state = compile_cluster(optisched.load([str(STRANDED)]))
    packed = placement_run(state, "packed", {"default/infer-0": "gpu-1", "default/infer-1": "gpu-1",
                                             "default/train-0": "gpu-2"})
    held, refused = settled_devices(state, default_config(), packed.node_of)
    assert refused == []
    assert held == {f"{DRIVER}/gpu-1/gpu-{i}" for i in range(2)} | {f"{DRIVER}/gpu-2/gpu-{i}"
                                                                  for i in range(4)}
    use = m.device_usage(state, packed.node_of, held)
    assert use.allocated.tolist() == [2, 4] and use.stranded.sum() == 0


def test_an_answer_giving_one_gpu_twice_is_refused_and_its_devices_not_counted_twice():
    state = compile_cluster(optisched.load([str(STRANDED)]))
    crowded = placement_run(state, "crowded", {"default/infer-0": "gpu-1", "default/infer-1": "gpu-1",
                                               "default/train-0": "gpu-1"})
    held, refused = settled_devices(state, default_config(), crowded.node_of)
    assert [v.pod for v in refused] == ["default/train-0"]
    assert held == {f"{DRIVER}/gpu-1/gpu-0", f"{DRIVER}/gpu-1/gpu-1"}


def test_an_evicted_pod_frees_its_devices_and_a_moved_one_takes_new_ones():
    """``a`` runs on n1 holding n1's gpu-0 through its own claim: evicted, the claim is reserved for nobody
    and freed; moved to n2, it is allocated again there."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "a-gpu", "namespace": "ml"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]}},
                 "reservedFor": [{"resource": "pods", "name": "a", "uid": "uid-a"}]}}
    a = pod("a", node_name="n1", claim_template=None)
    a["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "a-gpu"}]
    state = state_of([node("n1"), node("n2"), gpus("n1", 1), gpus("n2", 1), device_class(), claim, a])
    row = state.pod_index["ml/a"]
    node_of = state.pod_node.copy()
    assert settled_devices(state, default_config(), node_of)[0] == {f"{DRIVER}/n1/gpu-0"}
    node_of[row] = -1
    assert settled_devices(state, default_config(), node_of) == (frozenset(), [])
    node_of[row] = state.node_index["n2"]
    assert settled_devices(state, default_config(), node_of) == ({f"{DRIVER}/n2/gpu-0"}, [])


def test_compare_shows_devices_per_run_and_per_node(tmp_path):
    state = compile_cluster(optisched.load([str(STRANDED)]))
    greedy = greedy_of(state)
    packed = placement_run(state, "packed", {"default/infer-0": "gpu-1", "default/infer-1": "gpu-1",
                                             "default/train-0": "gpu-2"})
    c = build_comparison(state, default_config(), [greedy, packed])
    rows = c.summary.to_dict(orient="index")
    assert rows["DRA devices allocated (of 8)"] == {"greedy": 2, "packed": 6}
    assert rows["DRA devices stranded (free, no pending claim fits)"] == {"greedy": 6, "packed": 0}
    assert rows["DRA devices free"] == {"greedy": 6, "packed": 2}
    nodes = c.nodes.set_index(["run", "node"])
    assert nodes.loc[("packed", "gpu-2"), "DRA allocated"] == 4
    assert nodes.loc[("greedy", "gpu-1"), "DRA stranded"] == 3
    assert json.loads(json.dumps(c.to_json()))["summary"]["DRA devices allocated (of 8)"] == {"greedy": 2,
                                                                                             "packed": 6}
    written = write_report(c, tmp_path / "r")
    assert "devices.png" in written and written["devices.png"].read_bytes()[:4] == b"\x89PNG"
    assert "DRA devices" in written["report.html"].read_text()


def test_a_cluster_without_devices_has_no_device_rows_nor_plot(tmp_path):
    state = compile_cluster(optisched.load([str(EXAMPLES / "gpu-fragmentation.yaml")]))
    c = build_comparison(state, default_config(), [greedy_of(state)])
    assert not c.devices and not any(str(i).startswith("DRA") for i in c.summary.index)
    assert "DRA devices" not in c.nodes.columns
    assert "devices.png" not in write_report(c, tmp_path / "r")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(per_node=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       wants=st.lists(st.integers(1, 3), min_size=1, max_size=6), data=st.data())
def test_settled_devices_are_counted_once_and_never_exceed_what_a_node_publishes(per_node, wants, data):
    """Any placement, settled: each device held once, per node allocated + free = published, stranded
    within free; a placement greedy mode reached settles to as many devices as its run holds."""
    objs: list[dict] = [device_class()] + [template(f"t{k}", count=k) for k in (1, 2, 3)]
    for i, k in enumerate(per_node):
        objs += [node(f"n{i}")] + ([gpus(f"n{i}", k)] if k else [])
    objs += [pod(f"p{j}", claim_template=f"t{w}", created=j) for j, w in enumerate(wants)]
    state = state_of(objs)
    node_of = np.array(data.draw(st.lists(st.integers(-1, len(per_node) - 1), min_size=len(wants),
                                          max_size=len(wants))), dtype=np.int64)
    held, refused = settled_devices(state, default_config(), node_of)
    use = m.device_usage(state, node_of, held)
    assert use.published.tolist() == per_node
    assert int(use.allocated.sum()) == len(held) <= sum(per_node)
    assert (use.allocated <= use.published).all() and (use.free >= 0).all()
    assert (use.stranded <= use.free).all()
    refused_keys = {v.pod for v in refused}
    placed_ok = [p for p in range(len(wants)) if node_of[p] >= 0 and state.pods[p].key not in refused_keys]
    assert len(held) == sum(wants[p] for p in placed_ok)
    greedy = greedy_of(state)
    assert (greedy.devices is None) == (sum(per_node) == 0)  # no slice: nothing to hold
    assert len(settled_devices(state, default_config(), greedy.node_of)[0]) == len(greedy.devices or ())


def test_generated_dra_cluster_devices_match_the_run_claims():
    from optisched.datasets.dra import add_dra
    from optisched.datasets.generate import GenerateSpec, generate
    from optisched.greedy.scheduler import GreedyScheduler

    spec = GenerateSpec(nodes=30, gpu_fraction=0.3, load=0.5, pending_fraction=0.8, seed=2)
    state = state_of(add_dra(generate(spec), spec.seed))
    res = GreedyScheduler(state, default_config(), GreedyOptions(record=True)).run()
    run = PlacementRun.from_greedy("greedy", res, 0.0)
    book = claim_book(res.snapshot)
    assert run.devices == set(book.allocated_devices)
    use = m.device_usage(state, run.node_of, run.devices)
    per_node = {state.node_names[n]: int(use.allocated[n]) for n in np.flatnonzero(use.published)}
    counted: dict[str, int] = {}
    for d in book.allocated_devices:
        counted[d.split("/")[1]] = counted.get(d.split("/")[1], 0) + 1
    assert {k: v for k, v in per_node.items() if v} == counted
    assert int(use.published.sum()) == sum(len(s.spec.devices) for s in state.cluster.resource_slices)


def test_compare_command_prints_the_device_rows(capsys):
    from builders import run_cli

    code, out, _ = run_cli(["compare", str(STRANDED), "--time-limit", "10", "--json"], capsys)
    summary = json.loads(out)["summary"]
    assert code == 0
    assert summary["DRA devices allocated (of 8)"]["greedy"] == 2
    assert summary["DRA devices stranded (free, no pending claim fits)"]["greedy"] == 6
    # optimal mode's answer, settled: every pod placed, so nothing left pending to strand devices
    assert summary["placed (of 3 pending)"]["optimal"] == 3
    assert summary["DRA devices allocated (of 8)"]["optimal"] == 6
    assert summary["DRA devices stranded (free, no pending claim fits)"]["optimal"] == 0
