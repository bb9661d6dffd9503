"""write_report: the files, their content, and report.html as a real browser renders it.

The browser test opens the page in headless Chromium (the ``chromium`` fixture of conftest.py: skipped
with the reason when it is not installed, a failure under .ci/run, which installs it), lets a probe script record whether every image decoded and what tables the page
holds, and reads the probe's answer back from the dumped DOM.
"""
from __future__ import annotations

import csv
import html
import json
import re
import struct
import subprocess
from pathlib import Path

import pytest
from builders import chromium_command

import optisched
from optisched.comparison import PlacementRun, build_comparison, run_greedy
from optisched.model.state import compile_cluster
from optisched.profile import default_config
from optisched.report import write_report

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "spread-anti-affinity.yaml"
BETTER = {"cache-0": "a-1", "cache-1": "b-1", "web-0": "a-2", "web-1": "b-2", "web-2": "c-1"}
PNGS = ["placed-by-priority.png", "utilization.png", "fragmentation.png", "spread.png"]

PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const out = {
    images: imgs.length,
    decoded: imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0).length,
    widths: imgs.map(i => i.naturalWidth),
    tables: Array.from(document.querySelectorAll("table")).map(t => t.rows.length),
    headings: Array.from(document.querySelectorAll("h2")).map(h => h.textContent),
  };
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    state = compile_cluster(optisched.load([str(EXAMPLE)]))
    node_of = state.pod_node.copy()
    for name, n in BETTER.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[n]
    cert = {"status": "OPTIMAL", "tiers": [{"name": "placed", "objective": 5, "bound": 5, "gap": 0.0}],
            "greedyOptimal": False}
    runs = [run_greedy(state, default_config()), PlacementRun("optimal", "optimal", node_of, 0.2, certificate=cert)]
    out = tmp_path_factory.mktemp("report")
    return write_report(build_comparison(state, default_config(), runs), out)


def png_width(path: Path) -> int:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", data[16:20])[0]


def test_every_file_is_written(report):
    assert sorted(report) == sorted([*PNGS, "summary.json", "pods.csv", "nodes.csv", "spread.csv", "report.html"])
    assert all(p.stat().st_size > 0 for p in report.values())


def test_csv_and_json_hold_the_tables(report):
    with open(report["pods.csv"], newline="") as f:
        pods = list(csv.DictReader(f))
    # cache-0, cache-1 and web-0 / web-1 land elsewhere than greedy put them; web-2 only the better run places
    assert {r["pod"] for r in pods} >= {"default/web-2", "default/cache-0"}
    web2 = next(r for r in pods if r["pod"] == "default/web-2")
    assert (web2["node:greedy"], web2["node:optimal"], web2["placed only by"]) == ("", "c-1", "optimal")
    with open(report["nodes.csv"], newline="") as f:
        assert len(list(csv.DictReader(f))) == 2 * 5  # two runs, five nodes
    with open(report["spread.csv"], newline="") as f:
        assert [(r["maxSkew"], r["skew:greedy"], r["skew:optimal"]) for r in csv.DictReader(f)] == [("1", "1", "0")]
    doc = json.loads(report["summary.json"].read_text())
    assert doc["summary"]["unschedulable"] == {"greedy": 1, "optimal": 0}
    assert doc["summary"]["spread skew: default/app=web zone maxSkew=1 DoNotSchedule"] == {"greedy": 1, "optimal": 0}


def test_report_html_is_self_contained(report):
    page = report["report.html"].read_text()
    assert page.count('src="data:image/png;base64,') == len(PNGS)
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "<script" not in page and "<link" not in page


def test_report_renders_in_headless_chromium(report, chromium, tmp_path):
    probe = tmp_path / "probe.html"
    probe.write_text(report["report.html"].read_text().replace("</body>", PROBE + "</body>"))
    cmd = chromium_command(chromium, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-2000:]
    got = json.loads(html.unescape(found.group(1)))
    assert got["images"] == len(PNGS) and got["decoded"] == len(PNGS)
    assert got["widths"] == [png_width(report[name]) for name in PNGS]
    # summary, spread constraints (header + 1), pods placed differently (header + 5 pods),
    # nodes (header + 2 runs x 5 nodes)
    assert len(got["tables"]) == 4 and got["tables"][1:] == [2, 6, 11]
    assert got["tables"][0] > 20
    assert got["headings"][:2] == ["Pending pods placed, by priority", "Summary"]


def test_report_screenshot_is_drawn(report, chromium, tmp_path):
    shot = tmp_path / "shot.png"
    cmd = chromium_command(chromium, tmp_path / "profile", "--window-size=1200,1600", f"--screenshot={shot}",
                           report["report.html"].as_uri())
    subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=True)
    assert png_width(shot) == 1200
    assert shot.stat().st_size > 50_000  # a blank page compresses to a few kilobytes
