"""Ctrl-C: a long run stops promptly, prints the best answer so far marked interrupted, and exits 130;
the files it writes are whole (docs/cli.md)."""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from optisched import interrupt
from optisched.cli.summaries import greedy_summary, placements_text
from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.clock import Clock
from optisched.outputs import write_text
from optisched.profile import default_config

ROOT = Path(__file__).resolve().parents[1]


def _script() -> str:
    beside = Path(sys.executable).parent / "optisched"
    exe = str(beside) if beside.is_file() else shutil.which("optisched")
    assert exe is not None, "the optisched console script is not installed (pip install -e .)"
    return exe


def _interrupt_when(args: list[str], cue: str, presses: int = 1, sig: int = signal.SIGINT,
                    env: dict[str, str] | None = None) -> tuple[int, str, list[str], float]:
    """Run the console script, send ``presses`` signals ``sig`` (SIGINT: Ctrl-C) once a stderr line holds
    ``cue``; returns the exit status, stdout, stderr lines and the seconds from the first signal to the exit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **(env or {})}
    proc = subprocess.Popen([_script(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    cued = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip())
            if cue in line:
                cued.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    stdout: list[str] = []
    out_reader = threading.Thread(target=lambda: stdout.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    out_reader.start()
    assert cued.wait(600), f"no progress line with {cue!r}: {lines[-5:]}"
    for _ in range(presses):
        proc.send_signal(sig)
        time.sleep(0.3)
    sent = time.perf_counter()
    code = proc.wait(timeout=600)
    took = time.perf_counter() - sent
    out_reader.join(60)
    reader.join(60)
    return code, stdout[0] if stdout else "", lines, took


def _cluster_file(tmp_path: Path, **spec: object) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(generate(GenerateSpec(**spec)), sort_keys=False))  # type: ignore[arg-type]
    return path


def test_ctrl_c_stops_optimal_mode_prints_the_answer_so_far_and_exits_130(tmp_path: Path) -> None:
    """Interrupted while CP-SAT solves a placement tier (a 300 s limit), the run ends within seconds: the
    JSON summary parses and says interrupted, the certificate too, and --output is a whole JSON file."""
    cluster = _cluster_file(tmp_path, nodes=100, pods=900, load=1.1, seed=1)
    out = tmp_path / "placements.json"
    code, stdout, lines, took = _interrupt_when(
        ["schedule", str(cluster), "--mode", "optimal", "--time-limit", "300", "--json", "--output", str(out)],
        "placed[")
    assert code == 130, lines[-5:]
    doc = json.loads(stdout)
    assert doc["interrupted"] is True and doc["certificate"]["interrupted"] is True
    assert any("interrupted" in n for n in doc["certificate"]["notes"])
    assert doc["counts"]["scheduled"] > 0
    written = json.loads(out.read_text())
    assert written["interrupted"] is True and len(written["placements"]) > 0
    assert took < 120, f"{took:.0f} s from Ctrl-C to the exit"
    assert lines[-1] == "interrupted"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_second_ctrl_c_exits_at_once_without_an_answer(tmp_path: Path) -> None:
    """The second press does not wait for the run to print: exit 130, nothing on stdout, no file left."""
    cluster = _cluster_file(tmp_path, nodes=100, pods=900, load=1.1, seed=1)
    out = tmp_path / "placements.json"
    code, stdout, lines, _ = _interrupt_when(
        ["schedule", str(cluster), "--mode", "optimal", "--time-limit", "300", "--json", "--output", str(out)],
        "optimal mode:", presses=2)
    assert code == 130, lines[-5:]  # wherever the second press lands: while solving or while printing
    assert "interrupted" in lines
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # the run is cut off: either before it printed (nothing written) or, when the first press already
    # ended it, after a whole answer (never half a file)
    assert (stdout == "" and not out.exists()) or json.loads(out.read_text())["interrupted"] is True


def test_sigterm_stops_optimal_mode_like_ctrl_c_and_exits_143(tmp_path: Path) -> None:
    """SIGTERM (kubectl delete, systemd, CI) is the first Ctrl-C: the answer so far is printed and written,
    marked interrupted, and the exit status is 143 (128 + SIGTERM)."""
    cluster = _cluster_file(tmp_path, nodes=100, pods=900, load=1.1, seed=1)
    out = tmp_path / "placements.json"
    code, stdout, lines, took = _interrupt_when(
        ["schedule", str(cluster), "--mode", "optimal", "--time-limit", "300", "--json", "--output", str(out)],
        "placed[", sig=signal.SIGTERM)
    assert code == 143, lines[-5:]
    doc = json.loads(stdout)
    assert doc["interrupted"] is True and doc["certificate"]["interrupted"] is True
    assert doc["counts"]["scheduled"] > 0
    assert json.loads(out.read_text())["interrupted"] is True
    assert took < 60, f"{took:.0f} s from SIGTERM to the exit"
    assert lines[-1] == "interrupted (SIGTERM)"


def test_a_second_signal_of_the_other_kind_exits_at_once(tmp_path: Path) -> None:
    """SIGTERM then Ctrl-C: the second signal ends the run at once, with its own status (130)."""
    cluster = _cluster_file(tmp_path, nodes=100, pods=900, load=1.1, seed=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    proc = subprocess.Popen([_script(), "schedule", str(cluster), "--mode", "optimal", "--time-limit", "300",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "placed[" in line:
            break
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    stdout, _ = proc.communicate(timeout=120)
    # 130: the Ctrl-C ended it, while solving or while it printed; 143: the run had ended before it came
    assert proc.returncode in (130, 143)
    assert proc.returncode == 130 or json.loads(stdout)["interrupted"] is True
    assert time.perf_counter() - sent < 60


def test_sigterm_requests_a_stop_and_remembers_its_status() -> None:
    """In-process: SIGTERM sets requested() like Ctrl-C; the exit status is 143 and the cause SIGTERM;
    after the block SIGTERM is the second signal; reset() gives the system default back."""
    try:
        with interrupt.catching():
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.perf_counter() + 5
            while not interrupt.requested() and time.perf_counter() < deadline:
                time.sleep(0.01)
            assert interrupt.requested()
        assert interrupt.exit_status() == 143 and interrupt.cause() == "SIGTERM"
        assert signal.getsignal(signal.SIGTERM) is interrupt._press_again
    finally:
        interrupt.reset()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert not interrupt.requested() and interrupt.exit_status() == 130


def _kill_self_after(pods: int):  # type: ignore[no-untyped-def]
    def progress(done: int, total: int) -> None:
        if done == pods:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the watcher thread reads the signal
    return progress


def test_ctrl_c_stops_greedy_mode_between_cycles_and_lists_the_pods_not_attempted() -> None:
    """Greedy mode keeps the pods bound so far; the others are "not attempted" in the summary and in the
    CSV, never "pending" (unschedulable) pods."""
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=20, pods=200, load=0.8, seed=2)))
    state = compile_cluster(cluster)
    try:
        with interrupt.catching():
            result = GreedyScheduler(state, cluster.config or default_config(),
                                     GreedyOptions(interruptible=True)).run(progress=_kill_self_after(10))
        assert interrupt.requested()
    finally:
        interrupt.reset()  # (the request would stop every later run in this process)
    assert result.interrupted
    tried = 10  # the signal came after the tenth cycle: the queue stops before the next
    untried = result.not_attempted
    placed = int(np.count_nonzero(result.snapshot.node_of[state.pending] >= 0))
    assert placed + len(result.unschedulable) == tried
    assert len(untried) == len(state.pending) - tried - len(result.skipped) > 0
    summary = greedy_summary(result)
    assert summary["interrupted"] is True and summary["counts"]["notAttempted"] == len(untried)
    rows = list(csv.DictReader(placements_text("csv", "greedy", state, result.snapshot.node_of, result.skipped, {},
                                               untried).splitlines()))
    assert sum(r["status"] == "not attempted" for r in rows) == len(untried)


def test_an_interrupted_clock_has_passed_every_deadline_and_gives_solvers_no_time() -> None:
    from ortools.sat.python import cp_model

    clock = Clock(60.0)
    assert not clock.past(30.0)
    try:
        with interrupt.catching():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)
            assert clock.past(30.0) and not clock.wall_allows(0.0) and not clock.affords(10)
            solver = cp_model.CpSolver()
            clock.set_limits(solver.parameters, 10.0, workers=2, variables=100)
            assert solver.parameters.max_time_in_seconds == 0.0
            assert not solver.parameters.catch_sigint_signal
    finally:
        interrupt.reset()
    assert not clock.past(30.0)


def test_outputs_are_replaced_whole(tmp_path: Path) -> None:
    """A file is written beside and renamed over the old one: never a mix of old and new, no leftovers,
    the old file's mode kept; /dev/null still takes a write."""
    path = tmp_path / "out.json"
    path.write_text("old content that is longer than the new one\n")
    path.chmod(0o640)
    write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    write_text("/dev/null", "nothing\n")


def test_a_press_after_a_stopped_run_ended_its_block_is_the_second_press() -> None:
    """Once stopped, the command prints its answer outside the solving block: Ctrl-C then exits 130 at
    once (it used to reach Python's default handler and end the process by SIGINT, status -2)."""
    try:
        with interrupt.catching():
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.perf_counter() + 5
            while not interrupt.requested() and time.perf_counter() < deadline:
                time.sleep(0.01)
        assert interrupt.requested()
        assert signal.getsignal(signal.SIGINT) is interrupt._press_again
    finally:
        interrupt.reset()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
