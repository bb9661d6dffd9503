"""Optimal mode from the command line and the Python API, and against every conformance scenario."""
from __future__ import annotations

import json

import numpy as np
import pytest
from builders import run_cli
from helpers.replay import CASES, case_names

import optisched
from optisched.model.state import compile_cluster
from optisched.optimal.check import check_answer
from optisched.optimal.solve import OptimalOptions, placed_per_level, solve_optimal
from optisched.profile import default_config

EXAMPLES = "datasets/examples"


def test_schedule_optimal_writes_placements_and_a_certificate(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "o.json"
    code, stdout, _ = run_cli(["schedule", f"{EXAMPLES}/gpu-fragmentation.yaml", "--mode", "optimal",
                               "--time-limit", "10", "--output", str(out)], capsys)
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["mode"] == "optimal"
    assert all(node is not None for node in doc["placements"].values())  # greedy strands both train pods
    cert = doc["certificate"]
    assert cert["status"] == "OPTIMAL" and cert["greedyOptimal"] is False
    tier = cert["tiers"][0]
    assert tier["objective"] == tier["bound"] == 8 and tier["greedy"] == 6 and tier["gap"] == 0
    assert "Certificate: OPTIMAL" in stdout and "placed at priority 1000" in stdout


def test_schedule_optimal_csv_and_greedy_optimal_message(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "o.csv"
    code, stdout, _ = run_cli(["schedule", f"{EXAMPLES}/quickstart.yaml", "--mode", "optimal", "--time-limit", "10",
                               "--output", str(out)], capsys)
    assert code == 0
    assert out.read_text().splitlines()[0] == '"pod","node","status"'
    assert "kube-scheduler's placement is optimal for this batch." in stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--mode", "best"], "--mode: 'best' is not one of greedy, optimal"),
    (["--mode", "optimal", "--trace", "t.json"], "--trace records greedy mode's cycles"),
], ids=["an unknown mode is refused", "a trace is refused in optimal mode"])
def test_schedule_refuses_bad_mode_options(args: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, stderr = run_cli(["schedule", f"{EXAMPLES}/quickstart.yaml", *args], capsys)
    assert code == 2 and message in stderr and "Traceback" not in stderr


def test_python_api_solve_returns_placements_and_certificate() -> None:
    cluster = optisched.load([f"{EXAMPLES}/strand-large-pod.yaml"])
    result = optisched.solve(cluster, mode="optimal", time_limit=10, seed=3)
    placements = result.placements()
    assert placements["default/report-0"] is not None and placements["default/report-1"] is not None
    assert result.certificate.to_dict()["status"] == "OPTIMAL"
    greedy = optisched.solve(cluster, mode="greedy")
    assert greedy.placements()["default/report-0"] is None
    with pytest.raises(ValueError, match="modes: greedy, optimal"):
        optisched.solve(cluster, mode="fast")


@pytest.mark.parametrize("case", case_names())
def test_optimal_places_at_least_greedys_priority_weight_on_every_conformance_scenario(case: str) -> None:
    """Level by level from the highest priority: the answer's placed pods are lexicographically ≥ greedy's."""
    cluster = optisched.load([str(CASES / f"{case}.yaml")])
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    r = solve_optimal(state, config, OptimalOptions(time_limit=3))
    assert r.violations == []
    assert check_answer(state, config, r.node_of, r.greedy.snapshot.node_of, blocks=r.order, evicted=r.evicted) == []
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, r.greedy.snapshot.node_of)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]
    assert np.all(r.node_of[state.pod_node >= 0][r.batch.fixed[state.pod_node >= 0]] >= 0)


def test_compare_prints_both_runs_and_writes_a_report(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, stdout, stderr = run_cli(["compare", f"{EXAMPLES}/strand-large-pod.yaml", "--time-limit", "10",
                                    "--policies", "MostAllocated", "--report", str(tmp_path / "out")], capsys)
    assert code == 0, stderr
    assert "greedy:MostAllocated" in stdout and "placed at priority 0: gap" in stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary, "summary.json is empty"
    pods = (tmp_path / "out" / "pods.csv").read_text()
    assert "default/report-0" in pods and "default/report-1" in pods
    assert (tmp_path / "out" / "report.html").stat().st_size > 10_000


def test_compare_refuses_an_unknown_policy(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, stderr = run_cli(["compare", f"{EXAMPLES}/strand-large-pod.yaml", "--policies", "Fastest"], capsys)
    assert code == 2 and "'Fastest' is neither a strategy" in stderr


def test_python_api_compare_has_dataframes_and_the_certificate() -> None:
    cmp = optisched.compare(optisched.load([f"{EXAMPLES}/spread-anti-affinity.yaml"]), time_limit=10)
    assert list(cmp.summary.columns) == ["greedy", "optimal"]
    placed = cmp.summary.loc["placed, priority 500 (of 3)"]
    assert int(placed["greedy"]) == 2 and int(placed["optimal"]) == 3
    assert "default/web-2" in set(cmp.pods["pod"])
    assert cmp.runs[1].certificate["status"] == "OPTIMAL"
    assert cmp.plot_utilization() is not None


def _explain(*objs):  # type: ignore[no-untyped-def]
    from builders import state_of

    state = state_of(*objs)
    r = solve_optimal(state, default_config(), OptimalOptions(time_limit=10))
    return {tuple(e.pods): e for e in r.explanations}


def test_minimum_cover_picks_the_fewest_rules_that_exclude_every_node() -> None:
    from optisched.optimal.explain import minimum_cover

    masks = {"A": np.array([1, 1, 0, 0], bool), "B": np.array([0, 0, 1, 1], bool),
             "C": np.array([1, 1, 1, 0], bool), "D": np.array([0, 0, 0, 1], bool)}
    assert sorted(minimum_cover(masks)) in (["A", "B"], ["C", "D"])
    assert minimum_cover({"A": np.array([1, 0], bool), "B": np.array([1, 1], bool)}) == ["B"]


def test_a_pod_no_node_admits_is_explained_by_the_smallest_set_of_rules() -> None:
    from builders import node, pod

    got = _explain(node("a").taint("gpu", "x"), node("b").taint("gpu", "x"), node("c"),
                   pod("p").req(cpu="1").set("spec.nodeSelector", {"disk": "ssd"}))
    e = got[("default/p",)]
    assert e.kind == "excluded" and e.rules == {"NodeAffinity": 3}


def test_a_pod_whose_required_affinity_no_pod_can_meet_is_infeasible() -> None:
    from builders import node, pod

    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
    got = _explain(node("a"), node("b"),
                   pod("p").req(cpu="1").label(app="web").set(
                       "spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}))
    assert got[("default/p",)].kind == "infeasible"


def test_a_low_priority_pod_left_out_for_higher_ones_is_outranked_with_proof() -> None:
    from builders import node, pod

    got = _explain(node("a", cpu="2"), node("b", cpu="2"),
                   *[pod(f"hi-{i}").req(cpu="2").priority(100) for i in range(2)], pod("lo").req(cpu="2").priority(1))
    e = got[("default/lo",)]
    assert e.kind == "outranked" and "no assignment places more" in e.detail
