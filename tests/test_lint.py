"""The code passes its linters: ruff over the package, the tests and the benchmarks, and mypy over the
package (the settings in pyproject.toml). Each runs as its own process, as a developer would run it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [
    pytest.param(["ruff", "check", "optisched", "tests", "benchmarks"], id="ruff"),
    pytest.param(["mypy", "optisched"], id="mypy"),
])
def test_the_linters_find_nothing(command: list[str]) -> None:
    run = subprocess.run([sys.executable, "-m", *command], check=False, cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
