"""`optisched preempt`: the preemptions greedy mode makes, as a table and as Eviction objects."""
from __future__ import annotations

from pathlib import Path

import yaml
from builders import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"


def test_preempt_lists_victims_and_writes_evictions(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    code, out, err = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--output", str(plan)], capsys)
    assert code == 0, err
    assert "default/preemptor" in out and "default/low-a" in out
    docs = list(yaml.safe_load_all(plan.read_text()))
    assert {(d["kind"], d["apiVersion"], d["metadata"]["name"]) for d in docs} == {
        ("Eviction", "policy/v1", "low-a"), ("Eviction", "policy/v1", "low-b")}
    assert all(d["metadata"]["annotations"]["optisched.io/node"] == "n1" for d in docs)


def test_preempt_for_one_pod_and_without_preemptions(capsys):
    code, out, _ = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--pod", "default/preemptor"], capsys)
    assert code == 0 and "low-b" in out
    code, out, _ = run_cli(["preempt", str(EXAMPLES / "topology-spread.yaml")], capsys)
    assert code == 0 and "No preemption" in out


def test_optimal_single_pod_prints_minimal_victims_and_evictions(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    code, out, err = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--mode", "optimal",
                              "--pod", "default/preemptor", "--output", str(plan)], capsys)
    assert code == 0, err
    assert "kube-scheduler" in out and "OPTIMAL" in out and "highestVictimPriority 10 / 10" in out
    docs = list(yaml.safe_load_all(plan.read_text()))
    assert sorted(d["metadata"]["name"] for d in docs) == ["low-a", "low-b"]
    assert all(d["metadata"]["annotations"]["optisched.io/preemptor-node"] == "n1" for d in docs)


def test_optimal_batch_preemption_plan(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    code, out, err = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--mode", "optimal",
                              "--time-limit", "5", "--output", str(plan)], capsys)
    assert code == 0, err
    assert "optimal batch" in out and "2 eviction(s), 0 move(s)" in out and "Certificate" in out
    head, *docs = list(yaml.safe_load_all(plan.read_text()))
    assert head["kind"] == "PreemptionPlan" and head["target"]["default/preemptor"] == "n1"
    assert head["landing"]["default/preemptor"] == "n1" and head["differs"] == []
    assert sorted(d["metadata"]["name"] for d in docs) == ["low-a", "low-b"]
    assert all(d["metadata"]["annotations"]["optisched.io/preemptors"] == "default/preemptor" for d in docs)
    assert "1 of 1 pod(s) land on the plan" in out


def test_preempt_rejects_bad_options(capsys):
    ex = str(EXAMPLES / "preemption.yaml")
    code, _, err = run_cli(["preempt", ex, "--mode", "fastest"], capsys)
    assert code == 2 and "--mode: 'fastest' is not one of greedy, optimal" in err
    code, _, err = run_cli(["preempt", ex, "--cross-node"], capsys)
    assert code == 2 and "--cross-node applies" in err
    code, _, err = run_cli(["preempt", ex, "--mode", "optimal", "--pod", "default/low-a"], capsys)
    assert code == 2 and "already bound" in err


def test_a_json_plan_is_one_list_of_the_same_evictions(tmp_path, capsys):
    """``--output plan.json`` writes JSON (a v1 List, as kubectl writes several objects), not YAML."""
    import json

    as_yaml, as_json = tmp_path / "plan.yaml", tmp_path / "plan.json"
    for path in (as_yaml, as_json):
        code, _, err = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--output", str(path)], capsys)
        assert code == 0, err
    doc = json.loads(as_json.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    assert doc["items"] == list(yaml.safe_load_all(as_yaml.read_text()))
