"""Nodes a PreFilter result leaves out (required node affinity on ``metadata.name``): kube-scheduler v1.35's
``findNodesThatFitPod`` gives them one shared status (``NodeToStatus.SetAbsentNodesStatus``), not a
filter failure per node. Traces carry that status separately; ``explain`` says it once."""
from __future__ import annotations

from builders import node, pod, state_of
from rich.console import Console

from optisched.cli.render import render_explain
from optisched.greedy.explain import explain_pod
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import cycle_to_json
from optisched.profile import default_config

SHARED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def only_on(*names: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in names]}}}


def run_one(p: dict):  # type: ignore[no-untyped-def]
    state = state_of(node("a"), node("b", cpu="1"), node("c"), node("d"), p)
    result = GreedyScheduler(state, default_config(), GreedyOptions(tie_break=TieBreak.FIRST, requeue=False)).run()
    return result, result.cycles[0]


def test_trace_lists_the_left_out_nodes_with_their_shared_status():
    result, rec = run_one(pod("p").req(cpu="2").set("spec.affinity", only_on("b", "ghost")))
    cycle = cycle_to_json(result, rec)
    assert cycle["preFilterNodeNames"] == ["b"]
    assert cycle["absentNodes"] == {"plugins": ["NodeAffinity"], "code": "UnschedulableAndUnresolvable",
                                    "reasons": [SHARED], "nodes": ["a", "c", "d"]}
    assert cycle["evaluatedNodes"] == 1
    assert cycle["filterFailures"]["b"]["plugin"] == "NodeResourcesFit"
    # the conformance traces also expand the shared status node by node; compare.py reads it there
    assert {n: f["plugin"] for n, f in cycle["filterFailures"].items() if n != "b"} == dict.fromkeys("acd", "PreFilterResult")
    assert cycle["message"].startswith(f"0/4 nodes are available: 1 Insufficient cpu, 3 {SHARED}.")


def test_a_pod_without_a_prefilter_result_has_no_absent_nodes():
    result, rec = run_one(pod("p").req(cpu="100"))
    cycle = cycle_to_json(result, rec)
    assert "absentNodes" not in cycle and "preFilterNodeNames" not in cycle
    assert set(cycle["filterFailures"]) == set("abcd")


def test_explain_names_the_left_out_nodes_once_and_not_as_unevaluated():
    result, rec = run_one(pod("p").set("spec.affinity", only_on("a", "c")))
    console = Console(width=200, record=True)
    ex = explain_pod(result, rec.pod)
    render_explain(console, ex)
    text = console.export_text()
    assert ex["attempts"][0]["absentNodes"]["nodes"] == ["b", "d"]
    assert f"PreFilter result of NodeAffinity left out 2 node(s) ({SHARED}): b, d" in text
    assert "not evaluated" not in text
    assert result.placements()["default/p"] in ("a", "c")


def test_a_nominated_node_that_passes_leaves_no_absent_nodes_in_the_trace():
    """``findNodesThatFitPod`` (v1.35.4 ``schedule_one.go``) returns the nominated node once it passes every
    filter, before ``SetAbsentNodesStatus``: the trace lists no node as left out by the PreFilter result."""
    result, rec = run_one(pod("p").set("spec.affinity", only_on("a", "c")).set("status.nominatedNodeName", "c"))
    cycle = cycle_to_json(result, rec)
    assert cycle["chosen"] == "c" and cycle["evaluatedNodes"] == 1
    assert cycle["filterFailures"] == {} and "absentNodes" not in cycle


def test_a_nominated_node_that_fails_is_followed_by_the_prefilter_result():
    """When the nominated node fails, the search over the PreFilter result's nodes runs and records the
    nodes it left out, as without a nomination."""
    result, rec = run_one(pod("p").req(cpu="2").set("spec.affinity", only_on("a", "b")).set(
        "status.nominatedNodeName", "b"))
    cycle = cycle_to_json(result, rec)
    assert cycle["chosen"] == "a"
    assert cycle["absentNodes"]["nodes"] == ["c", "d"]
    assert {n: f["plugin"] for n, f in cycle["filterFailures"].items()} == {
        "b": "NodeResourcesFit", "c": "PreFilterResult", "d": "PreFilterResult"}
