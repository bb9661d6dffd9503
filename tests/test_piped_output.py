"""Output to a pipe or a file is never wrapped: a table's row stays on one line with every name whole, as
``kubectl get`` prints it; a terminal (or a width given, or ``COLUMNS``) keeps rich's wrapping."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from builders import node, pod

from optisched.textsafe import PIPED_WIDTH, safe_console

ROOT = Path(__file__).resolve().parents[1]
NAME = "reporting-pipeline-with-a-rather-long-name-0"


def piped(args: list[str], **env: str) -> str:
    """``python -m optisched ARGS`` with stdout and stderr to pipes, no COLUMNS, no terminal."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    proc = subprocess.run([sys.executable, "-m", "optisched", *args], capture_output=True, stdin=subprocess.DEVNULL,
                          text=True, timeout=300, check=False, env={**base, "PYTHONPATH": str(ROOT), **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def cluster(tmp_path: Path) -> str:
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps([node("n1", cpu="2"), pod(NAME, "analytics").req(cpu="4")]))
    return str(f)


def test_a_piped_table_keeps_a_long_pod_name_and_its_reason_on_one_line(tmp_path):
    out = piped(["schedule", cluster(tmp_path)])
    (row,) = [line for line in out.splitlines() if "analytics/" in line]
    assert f"analytics/{NAME}" in row
    assert "0/1 nodes are available: 1 Insufficient cpu." in row and "Preemption is not helpful" in row


def test_compare_piped_keeps_its_rows_whole():
    out = piped(["compare", str(ROOT / "datasets" / "examples" / "strand-large-pod.yaml"), "--time-limit", "5"])
    (row,) = [line for line in out.splitlines() if "default/report-0" in line]
    assert "optimal places it" in row and row.rstrip(" │").endswith("preemption: not eligible due to preemptionPolicy=Never.")


def test_columns_still_sets_the_width(tmp_path):
    out = piped(["schedule", cluster(tmp_path)], COLUMNS="80")
    assert max(len(line) for line in out.splitlines()) <= 80


def test_the_console_is_wide_only_when_nothing_gives_it_a_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert safe_console(file=io.StringIO()).width == PIPED_WIDTH
    assert safe_console(file=io.StringIO(), width=80).width == 80
    assert safe_console(file=io.StringIO(), force_terminal=True).width != PIPED_WIDTH
    monkeypatch.setenv("COLUMNS", "120")
    assert safe_console(file=io.StringIO()).width == 120
