"""Usage errors through the installed ``optisched`` console script: one line on stderr, exit status 2.

These run the script the package installs (not ``cli.main`` in-process), so a dependency change that
breaks the error handler (as typer 0.26 dropping click did) fails here."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import optisched

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = str(ROOT / "datasets" / "examples" / "quickstart.yaml")


def _script(*args: str) -> subprocess.CompletedProcess:
    # the script installed beside this python (an environment used without activating it), else on PATH
    beside = Path(sys.executable).parent / "optisched"
    exe = str(beside) if beside.is_file() else shutil.which("optisched")
    assert exe is not None, "the optisched console script is not installed (pip install -e .)"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=120, check=False)


USAGE_ERRORS = [
    pytest.param(["schedul", QUICKSTART], "No such command 'schedul'", id="a misspelt command"),
    pytest.param(["generate"], "Missing argument", id="a missing argument"),
    pytest.param(["schedule", QUICKSTART, "--time-limit", "abc"], "--time-limit", id="a number option given letters"),
    pytest.param(["schedule", QUICKSTART, "--workers", "0"], "--workers", id="a number below its minimum"),
    pytest.param(["explain", QUICKSTART, "--no-such-flag"], "No such option", id="an unknown option"),
    pytest.param(["schedule", QUICKSTART, "--mode", "fast"], "--mode", id="a mode that does not exist"),
    pytest.param(["explain", QUICKSTART], "--pod", id="explain without --pod"),
    pytest.param(["inspect", "/no/such/file.yaml"], "/no/such/file.yaml", id="a cluster file that does not exist"),
]


def _module(*args: str) -> subprocess.CompletedProcess:
    """``python -m optisched``, for an environment without the console script on PATH."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "optisched", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.mark.parametrize("run", [_script, _module], ids=["the console script", "python -m optisched"])
@pytest.mark.parametrize(("args", "says"), USAGE_ERRORS)
def test_usage_error_prints_one_line_and_exits_2(args: list[str], says: str, run) -> None:  # type: ignore[no-untyped-def]
    run = run(*args)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert says in lines[0]
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_version_prints_the_package_version_and_exits_0() -> None:
    run = _script("--version")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[:2] == ["optisched", optisched.__version__]
    assert optisched.KUBE_VERSION in run.stdout


def test_version_is_the_installed_package_metadata() -> None:
    from importlib.metadata import version

    assert optisched.__version__ == version("optisched") != ""


def test_no_command_prints_the_help_with_the_exit_statuses() -> None:
    run = _script()
    assert run.returncode == 0, run.stderr
    assert "Usage: optisched" in run.stdout
    assert "130 interrupted" in " ".join(run.stdout.replace("│", " ").split())


def test_help_documents_every_exit_status() -> None:
    run = _script("--help")
    text = " ".join(run.stdout.split())
    assert run.returncode == 0
    for status in ("0 done", "1 a check failed", "2 bad input or usage", "130 interrupted"):
        assert status in text
