"""The bundled examples place pods the way their comments (and the Kubernetes docs) say."""
from __future__ import annotations

from pathlib import Path

import pytest

import optisched

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"


def place(name: str, **kw) -> dict:
    return optisched.schedule(optisched.load([str(EXAMPLES / name)]), **kw).placements()


def test_topology_spread_docs_example_goes_to_zone_b():
    assert place("topology-spread.yaml")["default/mypod"] in ("node3", "node4")


def test_bin_packing_docs_example_prefers_the_fuller_node():
    assert place("bin-packing.yaml")["default/newpod"] == "node2"


def test_preemption_evicts_the_least_important_pods():
    res = optisched.schedule(optisched.load([str(EXAMPLES / "preemption.yaml")]))
    p = res.placements()
    assert p["default/preemptor"] == "n1"
    assert p["default/low-a"] is None and p["default/low-b"] is None
    assert p["default/mid"] == "n3" and p["default/high"] == "n2"
    victims = {res.state.pods[v].key for v in res.preempted}
    assert victims == {"default/low-a", "default/low-b"}


@pytest.mark.parametrize("tie_break", ["first", "heap", "random"])
def test_quickstart_places_what_can_be_placed(tie_break):
    p = place("quickstart.yaml", tie_break=tie_break, seed=3)
    assert p["jobs/report-0"] is None
    assert sum(v is None for v in p.values()) == 1


def test_unknown_mode_is_refused():
    cluster = optisched.load([str(EXAMPLES / "quickstart.yaml")])
    with pytest.raises(ValueError, match="schedule\\(\\) is greedy mode"):
        optisched.schedule(cluster, mode="quantum")
    with pytest.raises(ValueError, match="not available"):
        optisched.solve(cluster, mode="quantum")


def test_dra_example_strands_gpus_one_per_node():
    """Each infer pod's claim gets the first GPU of its node; train-0's claim stays unallocated, and three
    GPUs stay free on each node."""
    from optisched.plugins.dynamicresources.claims import claim_book

    res = optisched.schedule(optisched.load([str(EXAMPLES / "dra-stranded-gpus.yaml")]))
    book = claim_book(res.snapshot)
    devices = {res.state.pods[p].key: [d for _, c in book.claims_of(p) if c for d in c.devices]
               for p in range(len(res.state.pods))}
    assert devices == {"default/infer-0": ["gpu.example.com/gpu-1/gpu-0"],
                       "default/infer-1": ["gpu.example.com/gpu-2/gpu-0"], "default/train-0": []}
    assert sorted(book.allocated_devices) == ["gpu.example.com/gpu-1/gpu-0", "gpu.example.com/gpu-2/gpu-0"]
