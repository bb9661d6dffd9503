"""Text from the input cannot act on the terminal, the HTML report or a spreadsheet, in any command."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.outputs import csv_text
from optisched.textsafe import csv_cell, html_text, plain, safe, safe_console, unsafe_chars

ZONE = "topology.kubernetes.io/zone"


def cluster(tmp_path: Path, text: str, pod_name: str = "p1") -> Path:
    """Two nodes (one tainted), a low-priority bound pod, a pod no node fits, a preemptor, a pod of another
    scheduler;
    ``text`` sits where the input lets it reach the output: a zone label, an extended resource's name (in
    the reasons pods stay pending), a taint value, a scheduler name."""
    resource = f"example.com/{text}"

    def node(name: str, cpu: str, **extra: object) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {ZONE: text}},
                "spec": extra, "status": {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "10", resource: "1"}}}

    def pod(name: str, cpu: str, more: str = "0", **spec: object) -> dict:
        requests = {"cpu": cpu, resource: more}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}}

    objs = [node("n1", "4", taints=[{"key": "k", "value": text, "effect": "NoSchedule"}]), node("n2", "2"),
            pod("b1", "2", nodeName="n2", priority=1), pod(pod_name, "3", "2", priority=1000),
            pod("p2", "2", priority=1000), pod("o1", "1", schedulerName=text)]
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return f


COMMANDS = [
    ("inspect", ["inspect"]),
    ("inspect --json", ["inspect", "--json"]),
    ("schedule", ["schedule"]),
    ("schedule in optimal mode", ["schedule", "--mode", "optimal", "--time-limit", "2"]),
    ("compare", ["compare", "--time-limit", "2"]),
    ("compare --replay", ["compare", "--replay", "--time-limit", "2"]),
    ("preempt", ["preempt"]),
    ("preempt in optimal mode", ["preempt", "--mode", "optimal", "--time-limit", "2"]),
    ("explain", ["explain", "--pod", "default/p1"]),
]

CONTROLS = ["\x1b[2J", "\x1b]0;owned\x07", "\x07", "\n", "\r", "\x00", "\x9b31m", "\u202e", "\u2028", "[red]",
            "[/]", "[bold", "\\"]
hostile = st.builds(lambda a, c, b: a + c + b,
                    st.text(st.characters(exclude_categories=("Cs",)), max_size=8), st.sampled_from(CONTROLS),
                    st.text(st.characters(exclude_categories=("Cs",)), max_size=8))


def raw_controls(text: str) -> list[str]:
    """Control characters in output other than the newlines the renderer writes itself."""
    return [c for c in unsafe_chars(text) if c != "\n"]


@pytest.mark.parametrize("argv", [c[1] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile, in_name=st.booleans())
def test_no_command_writes_a_raw_control_character(argv, text, in_name, tmp_path, capsys):
    f = cluster(tmp_path, text, pod_name=text if in_name else "p1")
    code, out, err = run_cli([*argv, str(f)], capsys)
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    assert raw_controls(out) == [] and raw_controls(err) == [], (out, err)
    if in_name:  # refused as the API server refuses it, in one line
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    else:
        assert code in (0, 1), err


def test_markup_in_a_label_is_printed_as_typed(tmp_path, capsys):
    code, out, _ = run_cli(["inspect", str(cluster(tmp_path, "[red]eu[/red] [/bold"))], capsys)
    assert code == 0
    assert "[red]eu[/red] [/bold" in out


def test_the_report_shows_input_text_as_typed(tmp_path, capsys):
    """HTML escaped, control characters escaped, and ``$...$`` not parsed as a formula in the plots."""
    report = tmp_path / "report"
    text = "<script>alert(1)</script>\x1b[2J $\\frac{$"
    code, _, err = run_cli(["compare", str(cluster(tmp_path, text)), "--time-limit", "2", "--report", str(report)],
                           capsys)
    assert code == 0, err
    page = (report / "report.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J" in page
    assert raw_controls(page) == []


ESCAPES = [
    ("an escape sequence", "a\x1b[2Jb", "a\\x1b[2Jb"),
    ("a bell", "\x07", "\\x07"),
    ("a newline and a carriage return", "a\nb\rc", "a\\nb\\rc"),
    ("a tab", "a\tb", "a\\tb"),
    ("a C1 control", "\x9b", "\\x9b"),
    ("a right-to-left override", "abc\u202edef", "abc\\u202edef"),
    ("a backslash is kept as typed", "a\\x1b", "a\\x1b"),
    ("printable Unicode unchanged", "zürich-東京", "zürich-東京"),
]


@pytest.mark.parametrize("raw,shown", [e[1:] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_control_characters_are_shown_escaped(raw, shown):
    assert plain(raw) == shown
    assert unsafe_chars(plain(raw)) == []


def test_markup_is_escaped_and_renders_as_typed():
    console = safe_console(width=80, color_system=None, force_terminal=False, record=True)
    console.print(f"[bold]pod[/] {safe('[red]x[/red] [/bold')}")
    assert console.export_text().strip() == "pod [red]x[/red] [/bold"


def test_the_console_replaces_control_characters_that_reach_it():
    console = safe_console(width=80, color_system=None, force_terminal=False, record=True)
    console.print("a\x1b]0;t\x07b", markup=False)
    assert raw_controls(console.export_text()) == []


CSV_CELLS = [
    ("a formula", "=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
    ("a plus", "+1", "'+1"),
    ("a minus", "-1+1", "'-1+1"),
    ("an at sign", "@SUM(A1)", "'@SUM(A1)"),
    ("a leading tab", "\t=1", "'\t=1"),
    ("a leading carriage return", "\r=1", "'\r=1"),
    ("plain text unchanged", "web-1", "web-1"),
    ("numbers unchanged", -5, -5),
]


@pytest.mark.parametrize("raw,cell", [c[1:] for c in CSV_CELLS], ids=[c[0] for c in CSV_CELLS])
def test_spreadsheet_formulas_are_neutralized(raw, cell):
    assert csv_cell(raw) == cell


def test_csv_quotes_every_field():
    assert csv_text(["pod", "node"], [("a,b", "=1"), ("c", "")]) == '"pod","node"\n"a,b","\'=1"\n"c",""\n'


def test_html_text_escapes_markup_and_controls():
    assert html_text('<a href="x">\x1b</a>') == "&lt;a href=&quot;x&quot;&gt;\\x1b&lt;/a&gt;"
