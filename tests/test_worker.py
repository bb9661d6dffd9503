"""The solve's worker process (optisched.worker): a crash of the worker costs the solve, not the answer;
Ctrl-C and SIGTERM reach the work through the parent (docs/cli.md, "When the solver crashes")."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from optisched import interrupt, worker
from optisched.datasets.generate import GenerateSpec, generate

ROOT = Path(__file__).resolve().parents[1]
needs_fork = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the worker process needs fork (Linux)")


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork under pytest too (whose output capture replaces sys.stdout, where the CLI runs in-process)."""
    monkeypatch.setattr(worker, "forks", lambda: True)


def _script() -> str:
    beside = Path(sys.executable).parent / "optisched"
    exe = str(beside) if beside.is_file() else shutil.which("optisched")
    assert exe is not None, "the optisched console script is not installed (pip install -e .)"
    return exe


def _run(args: list[str], abort_after: float | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    env.pop(worker.ABORT_ENV, None)
    if abort_after is not None:
        env[worker.ABORT_ENV] = str(abort_after)
    return subprocess.run([_script(), *args], check=False, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("worker") / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(generate(GenerateSpec(nodes=60, pods=500, load=1.1, seed=3)), sort_keys=False))
    return path


@needs_fork
def test_a_crashed_solve_shows_kube_schedulers_placement_marked_as_such_and_exits_1(cluster: Path,
                                                                                    tmp_path: Path) -> None:
    """The worker aborts (SIGABRT) 1 s into a 30 s solve: one line says so, the answer printed and written
    is greedy mode's placement (the same pods as `schedule` in greedy mode), its certificate says why."""
    out = tmp_path / "placements.json"
    done = _run(["schedule", str(cluster), "--mode", "optimal", "--time-limit", "30", "--json", "--output", str(out)],
                abort_after=1.0)
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: the CP-SAT solver crashed (SIGABRT) after ")
    assert "showing the best answer found before it: kube-scheduler's placement" in errors[0]
    doc = json.loads(done.stdout)
    cert = doc["certificate"]
    assert cert["source"] == "greedy" and cert["tiers"] == [] and "crashed (SIGABRT)" in cert["notes"][0]
    greedy = json.loads(_run(["schedule", str(cluster), "--json"]).stdout)
    assert doc["counts"]["scheduled"] == greedy["counts"]["scheduled"] > 0
    written = json.loads(out.read_text())
    assert sum(node is not None for node in written["placements"].values()) >= doc["counts"]["scheduled"]


@needs_fork
def test_a_crashed_compare_shows_greedy_as_the_optimal_run_and_exits_1(cluster: Path) -> None:
    done = _run(["compare", str(cluster), "--time-limit", "30", "--json"], abort_after=1.0)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "error: the CP-SAT solver crashed (SIGABRT)" in done.stderr
    runs = {run["name"]: run for run in json.loads(done.stdout)["runs"]}
    assert runs["optimal"]["certificate"]["source"] == "greedy"
    assert runs["optimal"]["unschedulable"] == runs["greedy"]["unschedulable"]


@needs_fork
def test_without_a_crash_the_worker_is_invisible(cluster: Path) -> None:
    """The same run without the abort: exit 0, the solver's answer."""
    done = _run(["schedule", str(cluster), "--mode", "optimal", "--time-limit", "10", "--json"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "error:" not in done.stderr
    assert json.loads(done.stdout)["certificate"]["source"] in ("solver", "greedy")
    assert json.loads(done.stdout)["certificate"]["tiers"]


@needs_fork
@pytest.mark.parametrize("work, status", [
    (lambda: 3, 3), (lambda: sys.exit(2), 2), (lambda: sys.exit(None), 0), (lambda: 1 // 0, 1)],
    ids=["its status", "SystemExit(2)", "SystemExit(None)", "an exception: 1"])
def test_the_worker_exits_with_its_works_status(work, status: int, forking: None) -> None:  # type: ignore[no-untyped-def]
    assert worker.guarded(work, lambda crash: pytest.fail(f"no crash expected: {crash}")) == status


@needs_fork
def test_a_worker_ended_by_a_signal_is_rescued_here(forking: None) -> None:
    crashes: list[worker.Crash] = []

    def rescue(crash: worker.Crash) -> int:
        crashes.append(crash)
        return 7

    assert worker.guarded(lambda: os.kill(os.getpid(), signal.SIGKILL), rescue) == 7
    assert crashes[0].signal == "SIGKILL" and crashes[0].seconds < 60


@needs_fork
@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_parent_stops_the_work_in_the_worker(signum: int, status: int, forking: None) -> None:
    """The parent gets the signal and tells the worker: there requested() turns true with that signal's
    status, which the work returns; the worker ignores the signal itself."""
    def work() -> int:
        deadline = time.perf_counter() + 30
        while not interrupt.requested() and time.perf_counter() < deadline:
            time.sleep(0.01)
        return interrupt.exit_status() if interrupt.requested() else 0

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
    timer.start()
    try:
        assert worker.guarded(work, lambda crash: pytest.fail(f"no crash expected: {crash}")) == status
        assert interrupt.requested()
    finally:
        timer.join()
        interrupt.reset()


def test_without_fork_the_work_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "forks", lambda: False)
    pid = os.getpid()
    assert worker.guarded(lambda: 5 if os.getpid() == pid else 0, lambda crash: 9) == 5


def test_a_caller_that_captures_the_output_gets_it_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI called in-process with sys.stdout replaced (as tests do): no worker, the output is caught."""
    assert not worker.forks()
    pid = os.getpid()

    def work() -> int:
        print("from", "here" if os.getpid() == pid else "a worker")
        return 0

    assert worker.guarded(work, lambda crash: 9) == 0
    assert capsys.readouterr().out == "from here\n"
