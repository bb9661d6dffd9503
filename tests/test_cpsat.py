"""The one place every CP-SAT solve goes through (optisched.cpsat): out of OR-Tools' abort window, the
model's hint given back, and no other CP-SAT solve in the package (docs/optimal.md, "When CP-SAT aborts")."""
from __future__ import annotations

import ast
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from optisched import cpsat

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "optisched"

# The smallest model found that aborts (OR-Tools 9.14, 9.15): a complete feasible hint, interleaved search with
# two workers and presolve on, and a stop at the first solution, which is the hint itself.
ABORT_MODEL = textwrap.dedent("""
    from ortools.sat.python import cp_model
    model = cp_model.CpModel()
    x = [model.new_int_var(0, 10, f"x{i}") for i in range(6)]
    b = [model.new_bool_var(f"b{i}") for i in range(6)]
    for xi, bi in zip(x, b):
        model.add(xi >= 3).only_enforce_if(bi)
    model.add(sum(x) <= 30)
    model.maximize(sum(x) + sum(b))
    for v in x:
        model.add_hint(v, 2)
    for v in b:
        model.add_hint(v, 0)

    class StopAtFirst(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            print("first solution:", self.response_proto.solution_info, flush=True)
            self.stop_search()

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.cp_model_presolve = True
""")


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def test_the_abort_configuration_solved_through_the_one_place_ends_with_a_solution() -> None:
    """Five runs in a fresh process: exit 0, a solution of every variable, the model's hint and the
    solver's two workers the same after each call."""
    code = ABORT_MODEL + textwrap.dedent("""
        from optisched import cpsat
        hint = (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values))
        for _ in range(5):
            status = cpsat.solve(solver, model, StopAtFirst())
            assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE), solver.status_name(status)
            assert len(solver.response_proto.solution) == 12
            assert (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values)) == hint
            assert solver.parameters.num_workers == 2
        print("done")
    """)
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "done"


def test_the_same_configuration_solved_directly_aborts_on_this_or_tools() -> None:
    """The test above can fail: bypassing the one place, this OR-Tools aborts (SIGABRT) on that model."""
    done = _run(ABORT_MODEL + "solver.solve(model, StopAtFirst())\n")
    if done.returncode != -signal.SIGABRT:
        from ortools import __version__

        pytest.skip(f"OR-Tools {__version__} does not abort on the model (exit {done.returncode}): fixed upstream")
    assert "complete_hint" in done.stdout
    assert "postsolve_mapping" in done.stderr


# the abort model with one more variable, defined by an equality and left out of the hint
DERIVED = ABORT_MODEL + textwrap.dedent("""
    total = model.new_int_var(0, 60, "total")
    model.add(total == sum(x))
""")


def test_a_hint_presolve_completes_aborts_too_and_the_one_place_still_solves_it() -> None:
    """Leaving a variable out of the hint is not enough: presolve completes it (here a sum an equality
    defines) and CP-SAT takes the presolved hint as complete_hint, then aborts. Through the one place the
    same model ends with a solution."""
    raw = _run(DERIVED + "solver.solve(model, StopAtFirst())\n")
    if raw.returncode != -signal.SIGABRT:
        pytest.skip(f"this OR-Tools does not abort on the model (exit {raw.returncode})")
    assert "complete_hint" in raw.stdout
    done = _run(DERIVED + textwrap.dedent("""
        from optisched import cpsat
        status = cpsat.solve(solver, model, StopAtFirst())
        assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and len(solver.response_proto.solution) == 13
        print("done")
    """))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "done"



def _interleaved(workers: int = 2, presolve: bool = True) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.interleave_search = True
    solver.parameters.cp_model_presolve = presolve
    solver.parameters.max_time_in_seconds = 5.0
    return solver


@pytest.mark.parametrize("workers, interleave, presolve, expected", [
    (2, True, True, True), (8, True, True, True), (0, True, True, None), (1, True, True, False),
    (2, False, True, False), (2, True, False, False)],
    ids=["2 interleaved workers with presolve", "8 workers", "0 workers is every core",
         "one worker", "not interleaved", "presolve off"])
def test_the_abort_window_is_interleaved_search_with_two_workers_and_presolve(
        workers: int, interleave: bool, presolve: bool, expected: bool | None) -> None:
    import os

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.interleave_search = interleave
    solver.parameters.cp_model_presolve = presolve
    assert cpsat.abort_window(solver.parameters) is (expected if expected is not None else (os.cpu_count() or 1) >= 2)


def _abort_family(lows: list[int], hinted: list[int]) -> cp_model.CpModel:
    """The abort model's family: ``x_i`` in ``[low_i, 10]`` (fixed at 10 when ``low_i`` is 10), ``b_i``
    forcing ``x_i >= 3``, ``Σx`` at most the hint's plus ``3·n``, maximize ``Σx + Σb``; ``hinted`` (indices into ``x + b``) hinted at
    ``x_i = max(low_i, 2)``, ``b_i = 0`` (feasible, not optimal)."""
    model = cp_model.CpModel()
    x = [model.new_int_var(lo, 10, f"x{i}") for i, lo in enumerate(lows)]
    b = [model.new_bool_var(f"b{i}") for i in range(len(lows))]
    for xi, bi in zip(x, b):
        model.add(xi >= 3).only_enforce_if(bi)
    values = [max(lo, 2) for lo in lows] + [0] * len(lows)
    model.add(sum(x) <= sum(values) + 3 * len(lows))
    model.maximize(sum(x) + sum(b))
    for i in hinted:
        model.add_hint((x + b)[i], values[i])
    return model


def _first_solution(solver: cp_model.CpSolver, model: cp_model.CpModel) -> str:
    seen: list[str] = []

    class First(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            seen.append(self.response_proto.solution_info)

    status = cpsat.solve(solver, model, First())
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE), solver.status_name(status)
    return seen[0]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 10]), min_size=1, max_size=6), st.data())
def test_a_solve_in_the_window_with_a_hint_runs_on_one_worker_and_gives_everything_back(
        lows: list[int], data: st.DataObject) -> None:
    """Whatever variables are fixed and which are hinted, the call runs on one worker exactly when there is
    a hint (one worker makes a hint taken whole safe), ends with a solution, and leaves the model's hint and
    the solver's workers as they were."""
    order = data.draw(st.permutations(range(2 * len(lows))))
    hinted = list(order[:data.draw(st.integers(0, len(order)))])
    model = _abort_family(lows, hinted)
    before = (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values))
    solver = _interleaved()
    assert cpsat.one_worker(solver.parameters, model) is bool(hinted)
    _first_solution(solver, model)
    assert solver.parameters.num_workers == 2
    assert (list(model.proto.solution_hint.vars), list(model.proto.solution_hint.values)) == before


def test_outside_the_window_the_complete_hint_is_handed_over_whole() -> None:
    """Without interleaved search CP-SAT takes the complete hint as its first solution; the one place runs
    a call on one worker exactly in the window with a hint."""
    solver = _interleaved()
    solver.parameters.interleave_search = False
    assert _first_solution(solver, _abort_family([0] * 6, list(range(12)))) == "complete_hint"
    model = _abort_family([0] * 6, list(range(12)))
    assert cpsat.one_worker(_interleaved().parameters, model)
    assert not cpsat.one_worker(_interleaved(workers=1).parameters, model)
    assert not cpsat.one_worker(_interleaved().parameters, _abort_family([0] * 6, []))


def test_a_solve_leaves_sigint_to_python() -> None:
    """CP-SAT's own SIGINT handler stays off: Python's handler is the same after a solve."""
    before = signal.getsignal(signal.SIGINT)
    solver = cp_model.CpSolver()
    cpsat.solve(solver, _abort_family([0], [0, 1]))
    assert signal.getsignal(signal.SIGINT) is before
    assert not solver.parameters.catch_sigint_signal


def test_the_packages_own_entry_points_leave_sigint_as_it_was() -> None:
    """gpu_share's packing and the wave packing solve through the one place (a direct solve used to leave
    SIGINT at the system default afterwards, so a Ctrl-C killed the process)."""
    import numpy as np

    from optisched.plugins.gpu.share import GpuNodes, GpuPod, pack_node
    from optisched.reschedule.wave_pack import Flows, fewest_waves

    before = signal.getsignal(signal.SIGINT)
    nodes = GpuNodes.build(["n-0"], [64000], [65536], [2], ["T4"])
    assert pack_node(nodes, 0, [GpuPod(1, 1, 1, 600), GpuPod(1, 1, 1, 600)]) is not None
    assert signal.getsignal(signal.SIGINT) is before
    flows = Flows(np.array([0, 1]), np.array([1, 2]), np.array([[2], [2]]), np.array([[0], [0], [4]]))
    assert fewest_waves([[0], [0]], [1], flows).wave_of == [1, 0]
    assert signal.getsignal(signal.SIGINT) is before


SOLVE_METHODS = {"solve", "Solve", "solve_with_solution_callback", "SolveWithSolutionCallback"}


def _cp_solver_solves(path: Path) -> list[int]:
    """Lines in ``path`` that call a solve method on a ``CpSolver`` (a name bound to ``CpSolver()``, an
    attribute of that name, or the constructor's result itself)."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call) and \
                _is_cp_solver(node.value.func):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.add(ast.unparse(target))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SOLVE_METHODS:
            receiver = node.func.value
            if ast.unparse(receiver) in names or (isinstance(receiver, ast.Call) and _is_cp_solver(receiver.func)):
                lines.append(node.lineno)
    return lines


def _is_cp_solver(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "CpSolver") or \
        (isinstance(func, ast.Name) and func.id == "CpSolver")


def test_no_cp_sat_solve_in_the_package_outside_the_one_place() -> None:
    found = {str(p.relative_to(ROOT)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if p.name != "cpsat.py" and (lines := _cp_solver_solves(p))}
    assert found == {}, f"CP-SAT solves outside optisched/cpsat.py (call cpsat.solve): {found}"


def test_the_source_check_finds_a_direct_solve(tmp_path: Path) -> None:
    """The check above can fail: each way of writing a direct solve is found."""
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent("""
        from ortools.sat.python import cp_model
        from ortools.sat.python.cp_model import CpSolver
        solver = cp_model.CpSolver()
        solver.solve(model)
        other = CpSolver()
        other.Solve(model)
        cp_model.CpSolver().solve(model)
        self.solver = cp_model.CpSolver()
        self.solver.solve_with_solution_callback(model, cb)
        tiers.solve("placed", lin, "max", 1.0)
    """))
    assert _cp_solver_solves(path) == [5, 7, 8, 10]


def test_a_tier_that_reaches_its_target_at_the_hint_does_not_stop_there() -> None:
    """A tier's watch stops the search at its target, never at the hint's own solution: here the hint's
    value (12) is the target, the search goes on to a solution past it and stops there."""
    from optisched.optimal.tiers import _Watch

    seen: list[tuple[str, int | None]] = []
    watch = _Watch("tier", 0.0, lambda name, value, bound, elapsed: seen.append((name, value)), target=12)
    model = _abort_family([0] * 6, list(range(12)))
    solver = _interleaved(workers=1)
    infos: list[str] = []
    original = watch.on_solution_callback

    def record() -> None:
        infos.append(watch.response_proto.solution_info)
        original()

    watch.on_solution_callback = record  # type: ignore[method-assign]
    status = cpsat.solve(solver, model, watch)
    assert "hint" in infos[0] and seen[0][1] == 12
    assert len(seen) >= 2 and seen[-1][1] > 12
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and solver.objective_value > 12


STRESS = textwrap.dedent("""
    import random, threading, time
    from optisched import interrupt
    from optisched.datasets.generate import GenerateSpec, generate
    from optisched.model.loader import cluster_from_objects
    from optisched.model.state import compile_cluster
    from optisched.optimal import tiers
    from optisched.optimal.solve import OptimalOptions, solve_optimal
    from optisched.profile import default_config

    rng = random.Random(SEED)
    config = default_config()
    states = [compile_cluster(cluster_from_objects(generate(GenerateSpec(nodes=n, pods=p, load=1.2, seed=s))))
              for n, p, s in ((6, 40, 1), (10, 80, 2), (8, 60, 3))]
    calls = [0]
    solve = tiers.TierSolver.solve

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return solve(self, *args, **kwargs)

    tiers.TierSolver.solve = counted

    def stopper():  # what Ctrl-C's watcher does to every running solve, at random moments
        while True:
            time.sleep(rng.uniform(0.0, 0.02))
            interrupt._stop_all()

    threading.Thread(target=stopper, daemon=True).start()
    start = time.perf_counter()
    while calls[0] < CALLS and time.perf_counter() - start < 50:
        options = OptimalOptions(time_limit=rng.choice([0.01, 0.03, 0.1, 0.3, 1.0]), workers=2,
                                 seed=rng.randrange(100), deterministic=rng.random() < 0.7)
        result = solve_optimal(rng.choice(states), config, options, explain=False)
        assert not result.violations
    print("tier calls", calls[0], flush=True)
""")


def test_hundreds_of_tier_calls_stopped_at_random_moments_never_abort() -> None:
    """300 optimal-mode tier calls (2 interleaved workers, presolve on, the incumbent as hint: the abort
    window's configuration) on small generated clusters, with time limits near zero (the wall-clock net)
    and every running solve stopped at random moments (as Ctrl-C's watcher does), in a subprocess so an
    abort fails this test only."""
    done = _run(STRESS.replace("SEED", "7").replace("CALLS", "300"), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) >= 300
