"""Tiers in plain words: the report's and the terminal's rows say "placed at priority 1000", and what a
tier counts is said once, in the report's glossary or under the terminal table."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from builders import run_cli

import optisched
from optisched.comparison import PlacementRun, build_comparison, run_greedy
from optisched.model.state import compile_cluster
from optisched.optimal.tier_labels import tier_glossary, tier_label
from optisched.profile import default_config
from optisched.report import write_report

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "strand-large-pod.yaml"
PLACED_UNIT = "pods of this priority on a node after the batch (pending placed + running batch pods kept)"


@pytest.mark.parametrize("name,label", [
    ("placed[priority=1000]", "placed at priority 1000"),
    ("placed[priority=-5]", "placed at priority -5"),
    ("score", "score"),
    ("disruption", "disruption"),
    ("objective:pack", "pack objective"),
    ("weighted:placed[priority=0]", "placed at priority 0, weighted"),
    ("placed pods", "placed pods"),
], ids=lambda v: v)
def test_a_tier_name_reads_as_words(name, label):
    assert tier_label(name) == label


def test_the_glossary_says_each_kind_of_tier_once():
    assert tier_glossary(["placed[priority=1000]", "placed[priority=0]", "score"]) == [
        ("placed at priority N", PLACED_UNIT), ("score", "score points")]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> str:
    state = compile_cluster(optisched.load([str(EXAMPLE)]))
    optimal = optisched.solve(optisched.load([str(EXAMPLE)]), time_limit=10)
    runs = [run_greedy(state, default_config()),
            PlacementRun("optimal", "optimal", optimal.node_of, 0.1, certificate=optimal.certificate.to_dict())]
    out = tmp_path_factory.mktemp("report")
    write_report(build_comparison(state, default_config(), runs), out)
    return (out / "report.html").read_text()


def test_the_report_table_has_the_plain_label_and_the_glossary_its_definition(report_html):
    cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", report_html)]
    assert "placed at priority 1000: objective" in cells and "placed at priority 0: gap" in cells
    assert not any("placed[priority=" in c or PLACED_UNIT in c for c in cells)
    defs = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", html.unescape(report_html)))
    assert PLACED_UNIT in defs["placed at priority N"] and "score points" in defs["score"]


def test_the_terminal_tables_use_the_plain_label(capsys):
    code, out, _ = run_cli(["schedule", str(EXAMPLE), "--mode", "optimal", "--time-limit", "10"], capsys)
    assert code == 0 and "placed[priority=" not in out
    (row,) = [line for line in out.splitlines() if "placed at priority 1000 " in line]
    assert "OPTIMAL" in row
    assert f"  placed at priority N: {PLACED_UNIT}" in out.splitlines()
    code, out, _ = run_cli(["compare", str(EXAMPLE), "--time-limit", "10"], capsys)
    assert code == 0 and "placed at priority 0: gap" in out and "placed[priority=" not in out
    assert f"  placed at priority N: {PLACED_UNIT}" in out.splitlines()
