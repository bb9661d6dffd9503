"""``generate --dra``: GPU and NIC slices, classes, templates and a shared claim that load, and greedy mode
allocating their devices without giving one twice."""
from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from builders import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.datasets.dra import GPU_DRIVER, SHARED_CLAIM, add_dra
from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import trace_of
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.plugins.dynamicresources.claims import claim_book
from optisched.profile import default_config

SPEC = GenerateSpec(nodes=30, gpu_fraction=0.3, load=0.5, pending_fraction=0.8, seed=2)


def cluster(spec: GenerateSpec = SPEC) -> list[dict]:
    return add_dra(generate(spec), spec.seed)


def text(objs: list[dict]) -> str:
    buf = io.StringIO()
    dump(objs, buf, "yaml")
    return buf.getvalue()


@pytest.fixture(scope="module")
def run():
    objs = cluster()
    state = compile_cluster(cluster_from_objects(objs))
    result = GreedyScheduler(state, default_config(), GreedyOptions(record=True)).run()
    return objs, state, result


def test_same_seed_same_bytes_and_other_seeds_differ():
    assert text(cluster()) == text(cluster())
    other = GenerateSpec(nodes=30, gpu_fraction=0.3, load=0.5, pending_fraction=0.8, seed=3)
    assert text(cluster(other)) != text(cluster())


def test_without_dra_the_cluster_keeps_its_bytes():
    """DRA draws from a stream of its own: the same seed without it is the generator's cluster."""
    plain = generate(SPEC)
    assert text(plain) == text(generate(SPEC))
    assert not any(o["kind"].startswith(("Resource", "Device")) for o in plain)


def test_gpu_nodes_publish_4_or_8_devices_with_attributes_and_memory(run):
    objs, state, _ = run
    gpu_nodes = {o["metadata"]["name"] for o in objs
                 if o["kind"] == "Node" and o["metadata"]["labels"]["pool"] == "gpu"}
    slices = [o for o in objs if o["kind"] == "ResourceSlice" and o["spec"]["driver"] == GPU_DRIVER]
    assert {s["spec"]["nodeName"] for s in slices} == gpu_nodes and len(slices) == len(gpu_nodes) > 0
    for s in slices:
        devices = s["spec"]["devices"]
        assert len(devices) in (4, 8)
        for d in devices:
            assert set(d["attributes"]) == {"model", "productName", "index", "driverVersion"}
            assert "version" in d["attributes"]["driverVersion"]
            assert d["capacity"]["memory"]["value"].endswith("Gi")
    assert any(o["kind"] == "ResourceSlice" and o["spec"]["driver"] == "nic.example.com" for o in objs)
    assert "nvidia.com/gpu" not in state.resources or \
        not state.allocatable[:, state.resource_col("nvidia.com/gpu")].any()


def test_bound_pods_hold_their_devices_and_none_is_given_twice(run):
    """Every device appears in at most one claim's allocation, before and after the run (the shared claim
    is one claim for two pods), and every bound pod with claims has them allocated on its node."""
    objs, state, result = run
    book = claim_book(result.snapshot)
    held = Counter(d for c in book.claims.values() for d in c.devices)
    assert held and max(held.values()) == 1
    for o in objs:
        if o["kind"] == "ResourceClaim" and "allocation" in o.get("status", {}):
            term = o["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]
            node = term["matchFields"][0]["values"][0]
            assert all(r["pool"] == node for r in o["status"]["allocation"]["devices"]["results"])
    for p in range(len(state.pods)):
        if state.pods[p].spec.resource_claims and result.snapshot.node_of[p] >= 0:
            node = state.node_names[result.snapshot.node_of[p]]
            for _, claim in book.claims_of(p):
                assert claim is not None and claim.devices
                assert all(d.split("/")[1] == node for d in claim.devices)


def test_greedy_places_pending_pods_with_devices_from_the_trace(run):
    """The trace's cycles name the devices each placed pod got; no device is in two cycles' allocations
    unless it is the same claim (the shared claim's second pod), and none was held before the run."""
    objs, _, result = run
    trace = trace_of(result, default_config(), TieBreak.FIRST)
    got: dict[str, str] = {}
    placed = 0
    for cycle in trace["cycles"]:
        for key, alloc in cycle.get("allocations", {}).items():
            placed += 1
            assert alloc["node"] == cycle["chosen"]
            for d in alloc["devices"]:
                assert got.setdefault(d, key) == key, f"{d} given to {got[d]} and {key}"
    assert placed >= 3
    results = [r for o in objs if o["kind"] == "ResourceClaim"
               for r in o.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])]
    before = {f"{r['driver']}/{r['pool']}/{r['device']}" for r in results}
    assert before and not before & set(got)


def test_the_shared_claim_serves_both_its_pods_on_one_node(run):
    _, state, result = run
    rows = [p for p, pod in enumerate(state.pods) if any(e.resource_claim_name == SHARED_CLAIM
                                                         for e in pod.spec.resource_claims)]
    assert len(rows) == 2
    nodes = {int(result.snapshot.node_of[p]) for p in rows}
    assert len(nodes) == 1 and nodes != {-1}
    claim = claim_book(result.snapshot).claims[f"{state.pods[rows[0]].metadata.namespace}/{SHARED_CLAIM}"]
    assert len(claim.devices) == 1 and len(claim.reserved_for) == 2


def test_templates_cover_counts_all_first_available_and_match_attribute(run):
    objs, _, _ = run
    specs = {o["metadata"]["name"]: o["spec"]["spec"]["devices"] for o in objs
             if o["kind"] == "ResourceClaimTemplate"}
    exact = [r["exactly"] for d in specs.values() for r in d["requests"] if "exactly" in r]
    assert {e.get("count") for e in exact if e["allocationMode"] == "ExactCount"} >= {1, 2}
    assert any(e["allocationMode"] == "All" for e in exact)
    assert any("firstAvailable" in r for d in specs.values() for r in d["requests"])
    assert any(c.get("matchAttribute") for d in specs.values() for c in d.get("constraints", []))
    classes = [o["spec"]["selectors"][0]["cel"]["expression"] for o in objs if o["kind"] == "DeviceClass"]
    assert any("compareTo(quantity(" in c for c in classes) and any(".model ==" in c for c in classes)


def test_cli_writes_the_same_cluster_and_schedule_reads_it(tmp_path, capsys):
    out = tmp_path / "dra.yaml"
    args = ["generate", str(out), "--nodes", "30", "--gpu-fraction", "0.3", "--load", "0.5",
            "--pending-fraction", "0.8", "--seed", "2", "--dra"]
    assert run_cli(args, capsys)[0] == 0
    assert out.read_text() == text(cluster())
    code, stdout, _ = run_cli(["schedule", str(out), "--json"], capsys)
    assert code == 0 and json.loads(stdout)


@settings(max_examples=15, deadline=None)
@given(nodes=st.integers(5, 40), gpu_fraction=st.sampled_from([0.1, 0.3, 0.6]),
       pending=st.sampled_from([0.2, 0.5, 0.9]), seed=st.integers(0, 10_000))
def test_any_generated_dra_cluster_loads_and_holds_each_device_once(nodes, gpu_fraction, pending, seed):
    """Whatever the size and seed: the cluster loads, every bound pod with claims holds devices on its own
    node through claims that exist, and no device is in two claims."""
    spec = GenerateSpec(nodes=nodes, gpu_fraction=gpu_fraction, pending_fraction=pending, seed=seed)
    objs = cluster(spec)
    state = compile_cluster(cluster_from_objects(objs))
    book = claim_book(Snapshot(state))
    held = Counter(d for c in book.claims.values() for d in c.devices)
    assert not held or max(held.values()) == 1
    for p in range(len(state.pods)):
        if state.pods[p].spec.resource_claims and state.pod_node[p] >= 0:
            assert book.not_ready(p) is None
            for _, claim in book.claims_of(p):
                assert claim is not None and claim.devices
                assert {d.split("/")[1] for d in claim.devices} == {state.node_names[state.pod_node[p]]}
