"""What the commands print: --json agrees with the tables, warnings are the same in every command, the
preemptions schedule made, evicted pods in --output, names never cut at 80 columns, human units, the
profile as rows, exit statuses, progress lines in pipes."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml
from builders import node, pod
from builders import run_cli as run
from rich.console import Console

from optisched.cli import common, progress
from optisched.model.quantity import human_quantity

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
QUICKSTART = str(EXAMPLES / "quickstart.yaml")
PREEMPTION = str(EXAMPLES / "preemption.yaml")


@pytest.fixture(autouse=True)
def _width_80(monkeypatch):
    monkeypatch.setattr(common, "out", Console(width=80))


def _words(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


# ----------------------------------------------------------------------------- --json and the tables
def test_schedule_json_has_the_tables_numbers(capsys):
    code, table, _ = run(["schedule", QUICKSTART], capsys)
    assert code == 0
    code, out, _ = run(["schedule", QUICKSTART, "--json"], capsys)
    doc = json.loads(out)
    c = doc["counts"]
    assert f"│ {c['pending']} │ {c['scheduled']} │ {c['unschedulable']} │ {c['notHandled']} │" in re.sub(
        r" +", " ", table)
    for u in doc["utilization"]:
        r = u["resource"]
        row = f"{r} {human_quantity(r, u['requested'])} {human_quantity(r, u['allocatable'])} {u['percent']:.1f} " \
              f"{u['maxNodePercent']:.1f}"
        assert row in _words(table)
    assert set(doc["unschedulable"]) == {"jobs/report-0"}  # keyed by namespace/name, not by row
    assert doc["unschedulable"]["jobs/report-0"]["priority"] == 1000


def test_optimal_schedule_json_has_the_certificate_and_the_same_counts(capsys):
    code, out, _ = run(["schedule", PREEMPTION, "--mode", "optimal", "--time-limit", "5", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["mode"] == "optimal" and doc["certificate"]["status"] in ("OPTIMAL", "FEASIBLE")
    assert doc["counts"]["scheduled"] + doc["counts"]["unschedulable"] + doc["counts"]["notHandled"] \
        == doc["counts"]["pending"]


def test_compare_json_has_the_tables_numbers(capsys):
    args = ["compare", PREEMPTION, "--time-limit", "5"]
    code, table, _ = run(args, capsys)
    assert code == 0
    code, out, _ = run([*args, "--json"], capsys)
    doc = json.loads(out)
    placed = doc["summary"]["placed (of 1 pending)"]
    assert f"placed (of 1 pending) {placed['greedy']} {placed['optimal']}" in _words(table)


def test_inspect_json_and_table_agree(capsys):
    _, table, _ = run(["inspect", QUICKSTART], capsys)
    _, out, _ = run(["inspect", QUICKSTART, "--json"], capsys)
    doc = json.loads(out)
    for r in doc["resources"]:
        res = r["resource"]
        assert f"{res} {human_quantity(res, r['allocatable'])} {human_quantity(res, r['requestedBound'])}" \
            in _words(table)


def test_explain_on_a_preemptor_shows_both_attempts(capsys):
    code, table, _ = run(["explain", PREEMPTION, "--pod", "preemptor"], capsys)
    assert code == 0
    text = _words(table)
    assert "Attempt 1" in text and "Attempt 2, nominated node n1" in text
    assert "Preemption: nominated n1, evicting default/low-a (priority 10), default/low-b (priority 10)" in text
    code, out, _ = run(["explain", PREEMPTION, "--pod", "preemptor", "--json"], capsys)
    doc = json.loads(out)
    first, second = doc["attempts"]
    assert [v["pod"] for v in first["preemption"]["victims"]] == ["default/low-a", "default/low-b"]
    assert second["chosen"] == "n1" and doc["node"] == "n1"


def test_preempt_json_lists_victims_per_preemptor(capsys):
    code, out, _ = run(["preempt", PREEMPTION, "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    (p,) = doc["preemptions"]
    assert p["preemptor"] == "default/preemptor" and p["node"] == "n1"
    assert [v[0] for v in p["victims"]] == ["default/low-a", "default/low-b"]


def test_preempt_optimal_for_one_pod_says_it_is_the_head_of_the_queue(capsys):
    code, out, _ = run(["preempt", PREEMPTION, "--mode", "optimal", "--pod", "preemptor", "--time-limit", "5"],
                       capsys)
    assert code == 0
    assert "default/preemptor is treated as the head of the queue" in _words(out)


# ----------------------------------------------------------------------------- schedule's preemptions
def test_schedule_shows_its_preemptions_and_marks_evicted_pods_in_output(tmp_path, capsys):
    out_json, out_csv = tmp_path / "p.json", tmp_path / "p.csv"
    code, table, _ = run(["schedule", PREEMPTION, "--output", str(out_json)], capsys)
    assert code == 0
    assert "default/low-a 10 n1 default/preemptor" in _words(table)
    doc = json.loads(out_json.read_text())
    assert set(doc["evicted"]) == {"default/low-a", "default/low-b"}
    assert doc["evicted"]["default/low-a"] == {"node": "n1", "priority": 10, "preemptor": "default/preemptor"}
    assert "default/low-a" not in doc["placements"] and doc["placements"]["default/preemptor"] == "n1"
    assert run(["schedule", PREEMPTION, "--output", str(out_csv)], capsys)[0] == 0
    status = {r["pod"]: r["status"] for r in csv.DictReader(out_csv.open())}
    assert status == {"default/low-a": "evicted", "default/low-b": "evicted", "default/high": "bound",
                      "default/mid": "bound", "default/preemptor": "scheduled"}


def test_trace_does_not_silence_the_summary(tmp_path, capsys):
    code, out, _ = run(["schedule", QUICKSTART, "--trace", str(tmp_path / "t.json")], capsys)
    assert code == 0 and "Utilization" in out and (tmp_path / "t.json").exists()


@pytest.mark.parametrize("flag, status", [([], 0), (["--fail-on-pending"], 1)],
                         ids=["pods left pending exit 0 by default", "--fail-on-pending makes them exit 1"])
def test_fail_on_pending(flag, status, capsys):
    code, _, err = run(["schedule", QUICKSTART, *flag], capsys)
    assert code == status
    assert ("stayed pending" in err) == bool(status)


def test_keyboard_interrupt_exits_130(monkeypatch, capsys):
    from optisched.greedy.scheduler import GreedyScheduler

    def interrupted(self, progress=None):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(GreedyScheduler, "run", interrupted)
    code, _, err = run(["schedule", QUICKSTART], capsys)
    assert code == 130 and "interrupted" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- 80 columns, units, profile
LONG_POD = "a-pod-whose-name-is-far-too-long-for-an-eighty-column-table-to-hold-0"
LONG_NODE = "a-node-whose-name-is-also-very-long-indeed-zone-a-0"


def _first_cells(table: str) -> str:
    return "".join(line.split("│")[1].strip() for line in table.splitlines() if line.count("│") >= 3)


def test_names_wrap_and_are_never_cut_at_80_columns(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump_all([node(LONG_NODE, cpu="1").build(), pod(LONG_POD).req(cpu="8").build()]))
    code, table, _ = run(["schedule", str(f)], capsys)
    assert code == 0
    assert "…" not in table and max(len(line) for line in table.splitlines()) <= 80
    assert f"default/{LONG_POD}" in _first_cells(table)


def _tables_are_whole(text: str) -> bool:
    """Every table line has both its edges (rich crops a table too wide for the console)."""
    edges = ("│", "┃", "┏", "┗", "┡", "└", "┌")
    return all(line.rstrip()[-1] in "│┃┓┛┩┘┐" for line in text.splitlines() if line.lstrip()[:1] in edges)


@pytest.mark.parametrize("args", [
    ["compare", str(EXAMPLES / "strand-large-pod.yaml"), "--time-limit", "3"],
    ["schedule", QUICKSTART], ["inspect", QUICKSTART], ["explain", PREEMPTION, "--pod", "preemptor"],
    ["preempt", PREEMPTION],
], ids=["compare fits 80 columns", "schedule fits 80 columns", "inspect fits 80 columns",
        "explain fits 80 columns", "preempt fits 80 columns"])
def test_tables_fit_80_columns_uncropped(args, capsys):
    code, out, _ = run(args, capsys)
    assert code == 0 and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80 and _tables_are_whole(out)


def test_summaries_show_human_units(capsys):
    _, out, _ = run(["schedule", QUICKSTART], capsys)
    assert re.search(r"\d cores", out) and re.search(r"\d\.\d Gi", out) and "Ki " not in out


def test_inspect_shows_the_profile_as_rows_with_its_strategy(capsys):
    _, out, _ = run(["inspect", QUICKSTART], capsys)
    text = _words(out)
    assert "TaintToleration 3" in text and "NodeResourcesFit 1" in text
    assert "scoring strategy LeastAllocated" in text
    assert "percentageOfNodesToScore adaptive (kube's default)" in text


# ----------------------------------------------------------------------------- warnings
def _messy_cluster(path: Path) -> str:
    objs = [
        node("n1", cpu="2").build(),
        pod("hog").req(cpu="3").on("n1").build(),  # overcommitted in the input
        pod("gone").on("removed-node").build(),  # its node is not in the dump
        pod("done").on("n1").set("status.phase", "Succeeded").build(),
        pod("gated").set("spec.schedulingGates", [{"name": "wait"}]).build(),
        pod("other").set("spec.schedulerName", "my-scheduler").build(),
        pod("claims").set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]).build(),
    ]
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


COMMANDS = [
    pytest.param(["schedule"], id="schedule"),
    pytest.param(["schedule", "--mode", "optimal", "--time-limit", "3"], id="schedule in optimal mode"),
    pytest.param(["compare", "--time-limit", "3"], id="compare"),
    pytest.param(["inspect"], id="inspect"),
    pytest.param(["explain", "--pod", "claims"], id="explain"),
    pytest.param(["preempt"], id="preempt"),
]


@pytest.mark.parametrize("args", COMMANDS)
def test_every_command_prints_the_same_warnings(args, tmp_path, capsys):
    f = _messy_cluster(tmp_path / "messy.yaml")
    code, _, err = run([args[0], f, *args[1:]], capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    expected = [
        ("Pod/default/gone .spec.nodeName: bound to node 'removed-node', which is not in the input; "
         "the pod is left out"),
        "Pod/default/claims uses PersistentVolumeClaims ['data']",
        "Node/n1 is overcommitted in the input: bound pods request cpu 3 cores of 2 cores",
        "1 finished pod(s) (Succeeded/Failed) hold nothing and are left out: default/done",
        "1 pending pod(s) gated (schedulingGates) not handled: default/gated",
        "1 pending pod(s) of another schedulerName not handled: default/other",
    ]
    assert len(warnings) == len(expected)
    for w, fragment in zip(warnings, expected):
        assert fragment in w


def test_compare_reports_gated_and_other_scheduler_pods_as_not_handled(tmp_path, capsys):
    f = _messy_cluster(tmp_path / "messy.yaml")
    _, out, _ = run(["compare", f, "--time-limit", "3", "--json"], capsys)
    doc = json.loads(out)
    for r in doc["runs"]:
        assert set(r["notHandled"]) == {"default/gated", "default/other"}
        assert not set(r["unschedulable"]) & {"default/gated", "default/other"}
    assert doc["summary"]["not handled (gated, other scheduler)"] == {"greedy": 2, "optimal": 2}


# ----------------------------------------------------------------------------- progress in pipes
def test_long_runs_print_plain_progress_lines_when_not_a_terminal(monkeypatch, capsys):
    import threading

    import optisched.optimal.solve as solve_module

    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.02)
    real = solve_module.solve_optimal

    def slow(*args, **kwargs):  # a small example solves in milliseconds: hold it until a line was printed
        result = real(*args, **kwargs)
        kwargs["progress"]("placed[priority=1000]", 1, 1, 0.0)
        threading.Event().wait(0.3)
        return result

    monkeypatch.setattr(solve_module, "solve_optimal", slow)
    code, _, err = run(["schedule", PREEMPTION, "--mode", "optimal", "--time-limit", "2"], capsys)
    assert code == 0
    assert re.search(r"^optimal mode: .*, \d+ s$", err, re.MULTILINE), err


def test_greedy_progress_prints_plain_lines_until_done(monkeypatch):
    import io
    import time

    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.02)
    buf = io.StringIO()
    console = Console(file=buf, width=80)
    with progress.progress_bar(console, "scheduling", 10) as advance:
        advance(3, 10)
        time.sleep(0.1)
        advance(10, 10)
        seen = buf.getvalue()
        time.sleep(0.1)
    assert "scheduling: 3/10 pods, 0 s" in seen
    assert buf.getvalue().count("\n") - seen.count("\n") <= 1  # nothing more once every pod is done


def test_an_experiment_progress_line_counts_cells_not_pods(monkeypatch):
    import io
    import time

    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.02)
    buf = io.StringIO()
    with progress.progress_bar(Console(file=buf, width=80), "experiment", 1020, unit="cells", every=1) as advance:
        advance(7, 1020)
        time.sleep(0.1)
    assert "experiment: 7/1020 cells" in buf.getvalue() and "pods" not in buf.getvalue()


def test_inspect_counts_finished_pods_as_holding_nothing(tmp_path, capsys):
    f = _messy_cluster(tmp_path / "messy.yaml")
    _, out, _ = run(["inspect", f, "--json"], capsys)
    doc = json.loads(out)
    assert doc["pods"]["finished"] == 1 and "default/done" not in {p["pod"] for p in doc["pendingPods"]}
    _, table, _ = run(["inspect", f], capsys)
    assert "1 finished (Succeeded/Failed), holding nothing" in _words(table)
