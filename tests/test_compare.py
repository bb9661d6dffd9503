"""PlacementRun from greedy mode and build_comparison's tables, on the strand-large-pod example.

Expected numbers are worked out by hand from the example: four 4-cpu / 16Gi nodes, four api pods of
2 cpu / 4Gi (priority 1000) and two report pods of 4 cpu / 8Gi (priority 0). Greedy puts one api pod
on each node and strands both reports; the better placement packs the api pods two to a node.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from builders import node, pod, state_of

import optisched
from optisched.comparison import PlacementRun, build_comparison, run_greedy
from optisched.comparison.tables import format_value
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.state import compile_cluster
from optisched.profile import default_config

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "strand-large-pod.yaml"
BETTER = {"api-0": "node-1", "api-1": "node-1", "api-2": "node-2", "api-3": "node-2",
          "report-0": "node-3", "report-1": "node-4"}
CERT = {"status": "OPTIMAL", "tiers": [{"name": "placed pods", "objective": 6, "bound": 6, "gap": 0.0}],
        "greedyOptimal": False}


@pytest.fixture(scope="module")
def state():
    return compile_cluster(optisched.load([str(EXAMPLE)]))


def placed(state, placement):
    node_of = state.pod_node.copy()
    for name, n in placement.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[n]
    return node_of


@pytest.fixture(scope="module")
def comparison(state):
    greedy = run_greedy(state, default_config())
    better = PlacementRun("optimal", "optimal", placed(state, BETTER), 1.5, certificate=CERT, score_objective=42.0)
    return build_comparison(state, default_config(), [greedy, better])


# --------------------------------------------------------------------------- PlacementRun
def test_from_greedy_takes_placements_reasons_and_the_chosen_nodes_scores(state):
    result = GreedyScheduler(state, default_config(), GreedyOptions(record=True)).run()
    run = PlacementRun.from_greedy("greedy", result, 0.25)
    names = [state.node_names[n] if n >= 0 else None for n in run.node_of]
    assert names == ["node-1", "node-2", "node-3", "node-4", None, None]
    assert run.mode == "greedy" and run.seconds == 0.25
    assert set(run.unschedulable) == {4, 5} and "Insufficient cpu" in run.unschedulable[4]
    # api-1 on the empty node-2: LeastAllocated (50 + 75) / 2 = 62; BalancedAllocation cpu 1/2 vs
    # memory 1/4: (1 - 0.125) * 100 = 87; TaintToleration 100 x weight 3; ImageLocality 0
    assert run.pod_scores[1] == {"TaintToleration": 300, "NodeResourcesFit": 62,
                                 "NodeResourcesBalancedAllocation": 87, "ImageLocality": 0, "DynamicResources": 0}
    assert set(run.pod_scores) == {0, 1, 2, 3}  # only placed pods


def test_from_greedy_without_records_has_no_scores(state):
    result = GreedyScheduler(state, default_config(), GreedyOptions(record=False)).run()
    run = PlacementRun.from_greedy("greedy", result, 0.0)
    assert run.pod_scores == {} and set(run.unschedulable) == {4, 5}


@pytest.mark.parametrize("why, spec", [
    ("another schedulerName", ("spec.schedulerName", "other")),
    ("schedulingGates", ("spec.schedulingGates", [{"name": "wait"}])),
], ids=["a pod of another scheduler is not handled, not unschedulable",
        "a gated pod is not handled, not unschedulable"])
def test_pods_no_profile_handles_are_reported_not_handled(why, spec):
    st = state_of(node("n1"), pod("p").set(*spec), pod("q").req(cpu="64"))
    greedy = run_greedy(st, default_config())
    assert greedy.node_of.tolist() == [-1, -1] and set(greedy.not_handled) == {0} and set(greedy.unschedulable) == {1}
    cmp = build_comparison(st, default_config(), [greedy])
    assert cmp.summary.loc["unschedulable"].tolist() == [1]
    assert cmp.summary.loc["not handled (gated, other scheduler)"].tolist() == [1]
    doc = cmp.to_json()
    assert list(doc["runs"][0]["notHandled"]) == ["default/p"] and list(doc["runs"][0]["unschedulable"]) == ["default/q"]


# --------------------------------------------------------------------------- summary
@pytest.mark.parametrize("metric, greedy, optimal", [
    ("placed, priority 1000 (of 4)", 4, 4),
    ("placed, priority 0 (of 2)", 0, 2),
    ("placed (of 6 pending)", 4, 6),
    ("unschedulable", 2, 0),
    ("nodes used", 4, 4),
    ("allocated cpu", 8 / 16, 16 / 16),
    ("allocated memory", 16 / 64, 32 / 64),
    ("node cpu utilization mean", 0.5, 1.0),
    ("node cpu utilization std", 0.0, 0.0),
    # free 2 cpu / 12Gi per node: the api shape still fits there; nothing is free after packing
    ("fragmented free cpu", 0.0, None),
    # the report shape (a third of the pending pods) never fits the 2 free cpu
    ("expected fragmented free cpu (FGD)", 1 / 3, None),
    # packing leaves 8Gi per node with no cpu beside it: no shape can use it
    ("fragmented free memory", 0.0, 1.0),
    ("evictions", 0, 0),
    ("moves", 0, 0),
    ("PDB violations", 0, 0),
    ("score objective", None, 42.0),
    ("certificate status", None, "OPTIMAL"),
    ("placed pods: bound", None, 6),
    ("placed pods: gap", None, 0.0),
    ("greedy is optimal for this batch", None, False),
], ids=lambda v: v if isinstance(v, str) else None)
def test_summary_row(comparison, metric, greedy, optimal):
    row = comparison.summary.loc[metric]
    for got, want in ((row["greedy"], greedy), (row["optimal"], optimal)):
        if want is None:
            assert got is None or (isinstance(got, float) and math.isnan(got))
        elif isinstance(want, float):
            assert got == pytest.approx(want)
        else:
            assert got == want


def test_summary_has_one_column_per_run_and_a_format_per_row(comparison):
    assert list(comparison.summary.columns) == ["greedy", "optimal"]
    assert set(comparison.formats) == set(comparison.summary.index)
    assert comparison.summary.loc["run time", "optimal"] == 1.5


# --------------------------------------------------------------------------- pods
def test_pods_diff_lists_only_pods_placed_differently(comparison):
    pods = comparison.pods
    # api-0 is on node-1 in both runs: left out
    assert pods["pod"].tolist() == ["default/api-1", "default/api-2", "default/api-3", "default/report-0",
                                    "default/report-1"]
    report = pods.set_index("pod").loc["default/report-0"]
    assert report["node:optimal"] == "node-3" and report["placed only by"] == "optimal"
    assert report["change"] == "optimal places it"
    assert "Insufficient cpu" in report["reason:greedy"]
    api = pods.set_index("pod").loc["default/api-1"]
    assert (api["node:greedy"], api["node:optimal"], api["change"]) == ("node-2", "node-1", "optimal other node")
    assert api["greedy score:NodeResourcesFit"] == 62 and api["greedy score:total"] == 449


def test_pods_diff_names_evictions_and_moves():
    st = state_of(node("n1"), node("n2"), pod("a").req(cpu="1").on("n1"), pod("b").req(cpu="1").on("n1"),
                  pod("new").req(cpu="3"))
    keep = PlacementRun("greedy", "greedy", np.array([0, 0, -1]), 0.0, unschedulable={2: "0/2 nodes"})
    shuffle = PlacementRun("optimal", "optimal", np.array([1, -1, 0]), 0.0)
    c = build_comparison(st, None, [keep, shuffle])
    got = c.pods.set_index("pod")[["change", "reason:optimal"]].to_dict("index")
    assert got == {"default/a": {"change": "optimal moves it", "reason:optimal": None},
                   "default/b": {"change": "optimal evicts it", "reason:optimal": "evicted"},
                   "default/new": {"change": "optimal places it", "reason:optimal": None}}
    assert c.summary.loc["evictions"].tolist() == [0, 1] and c.summary.loc["moves"].tolist() == [0, 1]


# --------------------------------------------------------------------------- spread
def spread_pod(name, app, max_skew, min_domains=None):
    c = {"maxSkew": max_skew, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": app}}}
    if min_domains:
        c["minDomains"] = min_domains
    return pod(name).label(app=app).set("spec.topologySpreadConstraints", [c])


def test_spread_skews_put_the_worst_constraint_first_and_the_summary_counts_violations():
    st = state_of(node("a1").zone("a"), node("b1").zone("b"),
                  spread_pod("web-0", "web", 1), spread_pod("web-1", "web", 1), spread_pod("web-2", "web", 1),
                  spread_pod("db-0", "db", 2), spread_pod("db-1", "db", 2))
    a, b = 0, 1
    spread_out = PlacementRun("greedy", "greedy", np.array([a, b, a, a, b]), 0.0)
    packed = PlacementRun("packed", "optimal", np.array([a, a, a, a, a]), 0.0)
    c = build_comparison(st, None, [spread_out, packed])
    # web: spread 2/1 -> skew 1, packed 3/0 -> skew 3 (2 over maxSkew 1); db: 1/1 -> 0, 2/0 -> 2 (not over 2)
    got = c.spread_skews[["constraint", "skew:greedy", "skew:packed"]].values.tolist()
    assert got == [["default/app=web zone maxSkew=1 DoNotSchedule", 1, 3],
                   ["default/app=db zone maxSkew=2 DoNotSchedule", 0, 2]]
    assert c.summary.loc["spread constraints over maxSkew (of 2)"].tolist() == [0, 1]
    assert c.summary.loc["worst spread skew over maxSkew"].tolist() == [0, 2]


def test_constraints_differing_only_in_min_domains_keep_distinct_names():
    st = state_of(node("a1").zone("a"), spread_pod("x", "web", 1), spread_pod("y", "web", 1, min_domains=3))
    c = build_comparison(st, None, [PlacementRun("greedy", "greedy", np.array([0, 0]), 0.0)])
    assert sorted(c.spread_skews["constraint"]) == ["default/app=web zone maxSkew=1 DoNotSchedule",
                                                    "default/app=web zone maxSkew=1 DoNotSchedule #2"]


# --------------------------------------------------------------------------- nodes
def test_nodes_table_has_a_row_per_run_and_node(comparison):
    nodes = comparison.nodes.set_index(["run", "node"])
    assert len(nodes) == 8
    g1, o1 = nodes.loc[("greedy", "node-1")], nodes.loc[("optimal", "node-1")]
    assert (g1["pods"], g1["util:cpu"], g1["free:cpu"], g1["fragmented:cpu"]) == (1, 0.5, 2000, 0)
    # 2 cpu / 12Gi free holds one more api pod (cpu allows 1, memory 3)
    assert (g1["largest fitting shape"], g1["copies of it"]) == ("cpu=2, memory=4Gi", 1)
    assert (o1["pods"], o1["util:cpu"], o1["free:cpu"], o1["copies of it"]) == (2, 1.0, 0, 0)
    assert o1["fragmented:memory"] == 8 * 2**30


# --------------------------------------------------------------------------- json and checks
@pytest.mark.parametrize("kind, value, text", [
    ("pct", 0.25, "25.0%"), ("int", 3, "3"), ("float", 1234.5, "1,234.50"), ("seconds", 0.5, "0.500s"),
    ("qty", 2 * 2**30, "2.0 Gi"), ("bool", False, "no"), ("pct", float("nan"), "–"), ("int", None, "–"),
], ids=["a ratio as a percentage", "an integer as is", "a float with two decimals", "seconds with three decimals",
        "memory in human units", "a boolean as yes or no", "NaN as a dash", "None as a dash"])
def test_format_value(kind, value, text):
    assert format_value(kind, value, "memory") == text


def test_format_value_shows_a_missing_score_as_a_dash(comparison):
    scores = comparison.pods.set_index("pod")["greedy score:total"]
    assert format_value("int", scores["default/report-0"]) == "–"


def test_to_json_is_plain_json(comparison):
    doc = json.loads(json.dumps(comparison.to_json()))
    assert [r["name"] for r in doc["runs"]] == ["greedy", "optimal"]
    assert doc["summary"]["unschedulable"] == {"greedy": 2, "optimal": 0}
    assert doc["summary"]["fragmented free cpu"]["optimal"] is None
    assert doc["runs"][1]["certificate"]["status"] == "OPTIMAL"
    assert set(doc["runs"][0]["unschedulable"]) == {"default/report-0", "default/report-1"}


@pytest.mark.parametrize("runs, message", [
    ([], "at least one run"),
    ([PlacementRun("a", "greedy", np.zeros(3, np.int64), 0), PlacementRun("a", "greedy", np.zeros(3, np.int64), 0)],
     "distinct"),
    ([PlacementRun("a", "greedy", np.zeros(2, np.int64), 0)], "shape"),
    ([PlacementRun("a", "greedy", np.array([0, 0, 9]), 0)], "past the"),
], ids=["no runs is refused", "two runs with one name are refused", "a node_of of the wrong length is refused",
        "a node_of naming a node that does not exist is refused"])
def test_bad_runs_are_refused(runs, message):
    st = state_of(node("n1"), pod("a"), pod("b"), pod("c"))
    with pytest.raises(ValueError, match=message):
        build_comparison(st, None, runs)


# --------------------------------------------------------------------------- terminal
def test_render_comparison_prints_the_summary_side_by_side_and_the_diff(comparison):
    from rich.console import Console

    from optisched.comparison.render import render_comparison

    console = Console(record=True, width=200, color_system=None)
    render_comparison(console, comparison, max_pod_rows=3)
    text = console.export_text()
    line = next(x for x in text.splitlines() if "placed, priority 0 (of 2)" in x)
    assert [c.strip() for c in line.split("│")[2:4]] == ["0", "2"]
    assert "50.0%" in next(x for x in text.splitlines() if "allocated cpu" in x)
    assert "default/api-1" in text and "default/report-0" not in text  # only the first 3 diff rows
    assert "first 3 of 5" in text


def test_render_comparison_says_when_every_run_agrees(state):
    from rich.console import Console

    from optisched.comparison.render import render_comparison

    run = run_greedy(state, default_config())
    console = Console(record=True, width=120, color_system=None)
    render_comparison(console, build_comparison(state, default_config(), [run]))
    assert "Every run places every pod as the first run does." in console.export_text()


def test_resources_nobody_requests_are_left_out_of_the_tables():
    from optisched.comparison.tables import shown_resources

    st = state_of(node("n1").alloc(ephemeral_storage="10Gi", nvidia_gpu="2"), pod("p").req(cpu="1", memory="1Gi"),
                  node("n2").alloc(**{"example.com/foo": "3"}).unschedulable(), pod("q").req(**{"example.com/foo": "1"}))
    # ephemeral-storage and GPUs are offered but never requested; example.com/foo only on a cordoned node
    assert shown_resources(st) == ["cpu", "memory"]


def _optimal_tiers(cmp) -> list[str]:  # type: ignore[no-untyped-def]
    return [t["name"] for t in next(r for r in cmp.runs if r.name == "optimal").certificate["tiers"]]


def test_compare_weights_solve_one_weighted_objective_as_compare_weights_does(capsys):
    from builders import run_cli

    cluster = optisched.load([str(EXAMPLE)])
    cmp = optisched.compare(cluster, time_limit=10, weights="placed=1000,disruption=1")
    assert _optimal_tiers(cmp)[0] == "weighted" and "score" not in _optimal_tiers(cmp)
    assert _optimal_tiers(optisched.compare(cluster, time_limit=10, weights={"placed": 1000, "disruption": 1})) \
        == _optimal_tiers(cmp)
    assert _optimal_tiers(optisched.compare(cluster, time_limit=10))[-1] == "score"
    code, stdout, _ = run_cli(["compare", str(EXAMPLE), "--time-limit", "10", "--weights", "placed=1000,disruption=1",
                               "--json"], capsys)
    assert code == 0
    [run] = [r for r in json.loads(stdout)["runs"] if r["name"] == "optimal"]
    assert [t["name"] for t in run["certificate"]["tiers"]] == _optimal_tiers(cmp)


def test_compare_weights_that_are_not_weights_are_an_input_error():
    from optisched.errors import InputError

    with pytest.raises(InputError, match="--weights: 'placed' is not NAME=INTEGER"):
        optisched.compare(optisched.load([str(EXAMPLE)]), time_limit=10, weights="placed")
