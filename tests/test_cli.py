"""The command line end to end: schedule outputs, explain, inspect, generate."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from builders import run_cli as run
from helpers.replay import CASES, case_names

from optisched.cli import common

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"




def test_schedule_writes_placements_for_every_pod(tmp_path, capsys):
    out = tmp_path / "p.json"
    code, _, err = run(["schedule", str(EXAMPLES / "quickstart.yaml"), "--output", str(out)], capsys)
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["mode"] == "greedy"
    placements = doc["placements"]
    assert len(placements) == 19
    assert placements["shop/web-7d4b9-0"] == "general-a-0"  # bound pods keep their node
    assert placements["jobs/report-0"] is None  # its nodeSelector matches no node
    assert "didn't match Pod's node affinity/selector" in doc["unschedulable"]["jobs/report-0"]
    assert placements["jobs/train-0"] == "gpu-a-0"  # the only node with GPUs, whose taint it tolerates
    caches = [placements[f"shop/cache-{i}"] for i in range(3)]
    assert None not in caches and len(set(caches)) == 3  # hostname anti-affinity


def test_schedule_csv_output(tmp_path, capsys):
    out = tmp_path / "p.csv"
    assert run(["schedule", str(EXAMPLES / "quickstart.yaml"), "--output", str(out)], capsys)[0] == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 19 and {r["pod"] for r in rows} >= {"jobs/report-0", "shop/cache-0"}
    assert next(r for r in rows if r["pod"] == "jobs/report-0")["node"] == ""


def test_schedule_summary_names_unschedulable_pods(capsys):
    code, out, _ = run(["schedule", str(EXAMPLES / "quickstart.yaml")], capsys)
    assert code == 0
    assert "jobs/report-0" in out and "Utilization" in out


def test_explain_shows_every_node_and_the_rejecting_plugin(capsys, monkeypatch):
    from rich.console import Console

    monkeypatch.setattr(common, "out", Console(width=220))
    code, out, _ = run(["explain", str(EXAMPLES / "quickstart.yaml"), "--pod", "jobs/train-0"], capsys)
    assert code == 0
    assert "gpu-a-0" in out and "chosen" in out
    assert "NodeResourcesFit" in out and "Insufficient" in out  # the nodes without GPUs


def test_explain_unknown_pod_is_an_input_error(capsys):
    code, _, err = run(["explain", str(EXAMPLES / "quickstart.yaml"), "--pod", "shop/ghost"], capsys)
    assert code == 2 and "no pod 'shop/ghost'" in err


@pytest.mark.parametrize("name", case_names())
def test_inspect_reports_requests_kube_scheduler_agreed_with(name, capsys):
    """Every pending pod's effective cpu and memory requests, as inspect reports them, explain each of the
    real scheduler's NodeResourcesFit verdicts in every recorded cycle: a node it called 'Insufficient cpu'
    lacks that much free cpu, a node it let through NodeResourcesFit has it."""
    from helpers.replay import replay

    code, out, _ = run(["inspect", str(CASES / f"{name}.yaml"), "--json"], capsys)
    assert code == 0
    reqs = {p["pod"]: p["requests"] for p in json.loads(out)["pendingPods"]}
    checked = 0
    for step in replay(name):
        state, snap = step.state, step.cycle_state.snapshot
        want = reqs[step.cycle["pod"]]
        for resource in ("cpu", "memory"):
            j = state.resource_col(resource)
            free = state.allocatable[:, j] - snap.requested[:, j]
            need = want.get(resource, 0)
            passed, fails = step.filter_expectation("NodeResourcesFit")
            if need:  # a zero request is not checked upstream, even on an overcommitted node
                for row in passed:
                    assert need <= free[row], (step.index, resource)
                    checked += 1
            for node_name, f in fails.items():
                if f"Insufficient {resource}" in f["reasons"]:
                    assert need > free[state.node_index[node_name]], (step.index, resource)
                    checked += 1
                elif need:
                    assert need <= free[state.node_index[node_name]], (step.index, resource)
    assert checked or not any(reqs.values())  # best-effort pods only: nothing to check against


def test_inspect_reads_stdin(capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO((EXAMPLES / "topology-spread.yaml").read_text()))
    code, out, _ = run(["inspect", "-", "--json"], capsys)
    assert code == 0 and json.loads(out)["sources"] == ["<stdin>"]


def test_generate_is_deterministic(tmp_path, capsys):
    a, b, c = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "c.yaml"
    for f, seed in ((a, 7), (b, 7), (c, 8)):
        assert run(["generate", str(f), "--nodes", "12", "--seed", str(seed)], capsys)[0] == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    code, out, _ = run(["inspect", str(a), "--json"], capsys)
    assert code == 0 and json.loads(out)["nodes"]["total"] == 12


def test_help_on_every_command(capsys):
    for cmd in ([], ["schedule"], ["inspect"], ["explain"], ["generate"]):
        code, out, _ = run([*cmd, "--help"], capsys)
        assert code == 0 and "Usage" in out
