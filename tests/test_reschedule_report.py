"""``reschedule --report DIR``: the files, their content, the manifest rules shared with compare's report,
and report.html as headless Chromium renders it (the ``chromium`` fixture of conftest.py: skipped with
the reason when it is not installed, a failure under .ci/run). A probe script records whether every
image decoded, the page's tables and headings and its text; the test reads the probe's answer back from
the dumped DOM."""
from __future__ import annotations

import csv
import html
import json
import re
import subprocess
from pathlib import Path

import pytest
from builders import chromium_command, node, pod, run_cli, state_of
from test_report import PROBE as COMPARE_PROBE

from optisched.profile import default_config
from optisched.reschedule import plan_reschedule
from optisched.reschedule.report import write_reschedule_report

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
PNGS = ["utilization.png", "waves.png", "pareto.png"]
PROBE = COMPARE_PROBE.replace("headings:", "text: document.body.innerText,\n    headings:")


def owned(name: str):  # type: ignore[no-untyped-def]
    return pod(name).set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                                        "uid": "web", "controller": True}]).label(app="web")


def three_waves():  # type: ignore[no-untyped-def]
    """Three web pods alone on n2, n3, n4 all fit on n1 beside a bare pod; a PodDisruptionBudget allows
    one disruption, so the three moves take three waves."""
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)] + [pod("anchor").req(cpu="1").on("n1")]
    objs += [owned(f"w{i}").req(cpu="1").on(f"n{i}") for i in (2, 3, 4)]
    objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}})
    return state_of(*objs)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    state = three_waves()
    plan = plan_reschedule(state, default_config(), "consolidate", time_limit=10, pareto=True)
    plan.staging.notes.append("a note with <b>markup</b> and \x1b[31mescapes")
    out = tmp_path_factory.mktemp("report")
    return plan, write_reschedule_report(plan, state, out)


def test_every_file_is_written_and_listed_in_the_manifest(report):
    _, files = report
    assert sorted(files) == sorted([*PNGS, "reschedule.json", "waves.csv", "nodes.csv", "landings.csv",
                                    "pareto.csv", "report.html"])
    manifest = json.loads((files["report.html"].parent / ".optisched-report").read_text())
    assert manifest["writtenBy"] == "optisched" and sorted(manifest["files"]) == sorted(files)


def test_the_csv_files_hold_the_waves_the_budget_use_and_the_nodes(report):
    plan, files = report
    with open(files["waves.csv"], newline="") as f:
        waves = list(csv.DictReader(f))
    assert [(r["wave"], r["pod"], r["from"], r["predicted"]) for r in waves] == \
        [("1", "default/w2", "n2", "n1"), ("2", "default/w3", "n3", "n1"), ("3", "default/w4", "n4", "n1")]
    with open(files["nodes.csv"], newline="") as f:
        nodes = {r["node"]: r for r in csv.DictReader(f)}
    assert {n for n, r in nodes.items() if r["emptied"] == "True"} == {"n2", "n3", "n4"} == set(plan.removable)
    assert (nodes["n1"]["before:cpu"], nodes["n1"]["after:cpu"]) == ("0.25", "1.0")
    doc = json.loads(files["reschedule.json"].read_text())
    assert [w["budgets"] for w in doc["waves"]] == [{"default/web": 1}] * 3 and "pareto" in doc


def test_the_page_is_self_contained_and_escapes_text(report):
    _, files = report
    page = files["report.html"].read_text()
    assert page.count('src="data:image/png;base64,') == len(PNGS)
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<script" not in page
    assert "&lt;b&gt;markup&lt;/b&gt;" in page and "\\x1b[31m" in page and "\x1b" not in page


def test_the_page_says_how_far_each_goal_gets(report):
    plan, files = report
    page = files["report.html"].read_text()
    [r] = plan.reach
    assert r.reached and html.escape(r.line()) in page and "4 -&gt; 1 nodes used" in page


def _render(chromium: str, page: Path, tmp_path: Path) -> dict:
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    cmd = chromium_command(chromium, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


def test_the_report_renders_in_headless_chromium_with_the_waves_and_every_evicted_pod(report, chromium, tmp_path):
    plan, files = report
    got = _render(chromium, files["report.html"], tmp_path)
    assert got["images"] == got["decoded"] == len(PNGS)
    assert got["headings"] == ["Certificate", "Before and after", "Node utilization", "Waves",
                               "Predicted landings that differ from the target", "Removable nodes",
                               "Goal against moves (--pareto)", "Notes", "Definitions"]
    # certificate (header + 4 tiers), metrics, waves (header + 3 evictions), budget use (header + 3
    # waves), removable nodes (header + 3), pareto (header + 4 points)
    tables = got["tables"]
    assert tables[0] == 5 and tables[2:] == [4, 4, 4, 5]
    evicted = [m.key for w in plan.staging.waves for m in w.moves]
    assert len(evicted) == 3 and all(key in got["text"] for key in evicted)
    assert "Hourly saving" not in got["text"]  # no node carries a cost


def test_reschedule_pareto_report_from_the_command_line(tmp_path, capsys, chromium):
    out = tmp_path / "rep"
    code, stdout, err = run_cli(["reschedule", str(EXAMPLES / "reschedule-repair.yaml"), "--goal", "repair",
                                 "--pareto", "--time-limit", "8", "--report", str(out)], capsys)
    assert code == 0 and "wrote 9 files" in err and "pareto (objective:repair" in stdout
    with open(out / "landings.csv", newline="") as f:
        landings = list(csv.DictReader(f))
    # the landings the terminal names as differing from the target, and only those
    said = re.findall(r"^(\S+): kube-scheduler puts it on (\S+), not (\S+);", stdout, re.MULTILINE)
    assert said and sorted((r["pod"], r["planned"], r["predicted"]) for r in landings) == \
        sorted((pod, planned, predicted) for pod, predicted, planned in said)
    got = _render(chromium, out / "report.html", tmp_path)
    assert got["decoded"] == 3 and all(pod in got["text"] for pod, _, _ in said)


def test_a_folder_holding_a_users_file_of_a_report_name_is_refused_and_left_as_it_was(tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "waves.csv").write_text("mine\n")
    code, _, err = run_cli(["reschedule", str(EXAMPLES / "reschedule-consolidate.yaml"), "--time-limit", "3",
                            "--report", str(out)], capsys)
    assert code == 2 and "waves.csv" in err and "Traceback" not in err
    assert (out / "waves.csv").read_text() == "mine\n" and sorted(p.name for p in out.iterdir()) == ["waves.csv"]


def test_a_report_is_written_again_over_its_own_files_and_beside_a_compare_report(tmp_path, capsys):
    out = tmp_path / "rep"
    example = str(EXAMPLES / "reschedule-consolidate.yaml")
    assert run_cli(["compare", example, "--time-limit", "3", "--report", str(out)], capsys)[0] == 0
    (out / "mine.txt").write_text("kept\n")
    for _ in range(2):
        code, _, err = run_cli(["reschedule", example, "--time-limit", "3", "--report", str(out)], capsys)
        assert code == 0, err
    manifest = json.loads((out / ".optisched-report").read_text())
    assert {"pods.csv", "waves.csv", "nodes.csv", "report.html"} <= set(manifest["files"])
    assert "mine.txt" not in manifest["files"] and (out / "mine.txt").read_text() == "kept\n"
    page = (out / "report.html").read_text()
    assert "Rescheduling plan" in page and (out / "pods.csv").exists()
    assert "Hourly saving: <b>0.300</b>" in page and "<td>n3</td>" in page
