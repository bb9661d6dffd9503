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


def test_optimal_mode_is_refused_until_it_exists(capsys):
    code, _, err = run_cli(["preempt", str(EXAMPLES / "preemption.yaml"), "--mode", "optimal"], capsys)
    assert code == 2 and "not available yet" in err
