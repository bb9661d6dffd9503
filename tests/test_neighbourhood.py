"""Node neighbourhoods: the sub-models are exact restrictions of the batch model, and the search built on
them never makes a tier (or, on a tie, the tiers after it) worse."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.mixed import mixed_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.classes import build_batch
from optisched.optimal.decode import variable_values
from optisched.optimal.eviction.batch import encode_eviction_rules
from optisched.optimal.hint import repair_hint, repair_placement
from optisched.optimal.model import BatchModel
from optisched.optimal.neighbourhood import LinearView, NodeSearch
from optisched.optimal.solve import OptimalOptions, placed_per_level, solve_optimal
from optisched.optimal.tier_key import TierKey
from optisched.optimal.tiers import Linear, TierSolver
from optisched.profile import default_config


def _model(objs: list[dict], movable: bool = False) -> tuple[BatchModel, np.ndarray]:
    """The batch model of a cluster (eviction rules in) and a feasible assignment of it (the repaired
    greedy placement)."""
    cluster = cluster_from_objects(objs)
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    batch = build_batch(state, config, movable=movable)
    fallback = repair_placement(batch, config, greedy.snapshot.node_of.copy())
    m = BatchModel(batch, config)
    encode_eviction_rules(m)
    full = repair_hint(m, variable_values(m, fallback), seconds=5)
    assert full is not None
    return m, np.asarray(full, dtype=np.int64)


def _feasible(m: BatchModel, x: np.ndarray) -> bool:
    """CP-SAT's own verdict on ``x``: every variable of the model fixed at it."""
    probe = m.cp.clone()
    for i, v in enumerate(x.tolist()):
        dom = probe.proto.variables[i].domain
        dom.clear()
        dom.extend([v, v])
    probe.clear_hints()
    probe.clear_objective()
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 10
    solver.parameters.num_workers = 1
    return solver.solve(probe) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), share=st.floats(0.05, 0.6))
def test_a_sub_model_admits_the_incumbent_and_each_of_its_solutions_fits_the_whole_model(seed: int, share: float) -> None:
    """Any set of free variables (not only a neighbourhood's): the sub-model has the incumbent as a
    solution (hinted), and its answer to a random objective, the rest at the incumbent, satisfies every
    constraint of the whole model by CP-SAT's own check (spread, affinity, ports, eviction rules)."""
    m, x = _model(mixed_cluster(seed))
    view = LinearView(m.cp)
    assert view.linear and view.satisfied(x)
    rng = np.random.default_rng(seed)
    free = rng.random(len(x)) < share
    sub, fv = view.sub(free, x)
    assert len(fv) == int(free.sum())
    coefs = rng.integers(-3, 4, size=len(fv))
    sub.proto.objective.vars.extend(range(len(fv)))
    sub.proto.objective.coeffs.extend((-coefs).tolist())
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 10
    solver.parameters.num_workers = 1
    status = solver.solve(sub)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    y = x.copy()
    y[fv] = np.asarray(solver.response_proto.solution, dtype=np.int64)
    assert int(coefs @ y[fv]) >= int(coefs @ x[fv])  # the incumbent was a solution of the sub-model
    assert _feasible(m, y)
    assert view.satisfied(y) and view.satisfied(y, np.flatnonzero(free).tolist())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), changes=st.integers(1, 4))
def test_the_constraint_check_agrees_with_cp_sat(seed: int, changes: int) -> None:
    """An assignment changed in a few variables: the array check (over every constraint, or only those
    over the changed variables) says what CP-SAT says."""
    m, x = _model(mixed_cluster(seed % 50))
    view = LinearView(m.cp)
    rng = np.random.default_rng(seed)
    y = x.copy()
    changed = np.zeros(len(x), dtype=bool)
    for i in rng.choice(len(x), size=min(changes, len(x)), replace=False).tolist():
        dom = list(m.cp.proto.variables[i].domain)
        y[i] = int(rng.integers(dom[0], dom[-1] + 1))
        changed[i] = True
    want = _feasible(m, y)
    assert view.satisfied(y) == want
    assert view.satisfied(y, np.flatnonzero(changed).tolist()) == want


def _levels(m: BatchModel) -> dict[int, Linear]:
    """Pods placed per priority level, as tier objectives."""
    per = {lv: Linear() for lv in m.batch.levels}
    for c in m.classes:
        for _, v, u in m.vars[c.index].terms():
            per[c.priority].add(v, 1, u)
    return per


def test_a_neighbourhood_of_every_node_reaches_the_level_optimum() -> None:
    """With every node in one neighbourhood a step is the whole level: the search ends at the optimum
    CP-SAT proves on the whole model, the levels above held at their counts (as their tiers leave them)."""
    m, x = _model(generate(GenerateSpec(nodes=8, pods=80, load=1.2, seed=3)))
    values = dict(enumerate(x.tolist()))
    per = _levels(m)
    for top in sorted(m.batch.levels, reverse=True):
        whole = m.cp.clone()
        whole.maximize(per[top].expr())
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = 30
        solver.parameters.num_workers = 2
        assert solver.solve(whole) == cp_model.OPTIMAL
        optimum = round(solver.objective_value)
        if per[top].value(values) < optimum:  # the first level greedy's placement leaves room at
            break
        m.cp.add(per[top].expr() >= per[top].value(values))  # the tier, fixed
    else:
        pytest.fail("greedy's placement is optimal on every level: no room for the search")
    search = NodeSearch(m, seed=1)
    search.START_NODES = m.state.num_nodes
    search.STEP_SECONDS = 10.0
    y, stats = search.run(x, top, per[top], (), budget=20.0, cap=optimum)  # stops once there
    assert per[top].value(dict(enumerate(y.tolist()))) == optimum
    assert stats.improving >= 1 and _feasible(m, y)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_step_that_ties_the_tier_is_kept_only_when_no_worse_after_it(seed: int) -> None:
    """The search's answer is lexicographically at least the incumbent on (level, next level), keeps the
    level above at its count (its tier's constraint), and stays feasible; small neighbourhoods make many
    tying steps."""
    m, x = _model(generate(GenerateSpec(nodes=20, pods=240, load=1.1, seed=seed)))
    levels = sorted(m.batch.levels, reverse=True)
    per = _levels(m)
    values = dict(enumerate(x.tolist()))
    m.cp.add(per[levels[0]].expr() >= per[levels[0]].value(values))
    search = NodeSearch(m, seed=seed)
    search.START_NODES = 3
    y, stats = search.run(x, levels[1], per[levels[1]], (per[levels[2]],), budget=3.0)
    after = dict(enumerate(y.tolist()))
    before_key = (per[levels[1]].value(values), per[levels[2]].value(values))
    after_key = (per[levels[1]].value(after), per[levels[2]].value(after))
    assert after_key >= before_key
    assert stats.steps > 5
    assert per[levels[0]].value(after) >= per[levels[0]].value(values)
    assert _feasible(m, y)


def test_large_models_search_placement_tiers_by_node_neighbourhoods(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A model restricted to candidate nodes without presolve (how large batches run) searches its
    placement tiers by node neighbourhoods; with ``node_search=False`` by CP-SAT's LNS. Both answers are
    valid and at least greedy's on every level."""
    calls: list[int] = []
    real = NodeSearch.run

    def spy(self, x, level, *a, **k):  # type: ignore[no-untyped-def]
        calls.append(level)
        return real(self, x, level, *a, **k)

    monkeypatch.setattr(NodeSearch, "run", spy)
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=2))
    cluster = cluster_from_objects(objs)
    state = compile_cluster(cluster)
    config = default_config()
    for node_search in (True, False):
        calls.clear()
        r = solve_optimal(state, config, OptimalOptions(time_limit=4, workers=2, max_variables=20, presolve_limit=0,
                                                        node_search=node_search))
        assert bool(calls) == node_search
        assert r.violations == []
        fixed = repair_placement(r.batch, config, r.greedy.snapshot.node_of)
        mine, greedy = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, fixed)
        assert [mine[lv] for lv in r.batch.levels] >= [greedy[lv] for lv in r.batch.levels]


def test_a_step_worse_on_the_next_level_is_rejected(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A step whose answer ties the tier but drops pods of the next level is not taken: here every
    step's answer keeps the tier's own variables and empties the others of its neighbourhood."""
    import optisched.optimal.neighbourhood as nb

    real = cp_model.CpSolver

    class Emptying:
        def __init__(self) -> None:
            self.parameters = real().parameters

        def solve(self, sub):  # type: ignore[no-untyped-def]
            hint = list(sub.proto.solution_hint.values)
            mine = set(sub.proto.objective.vars)
            self.response_proto = type("R", (), {"solution": [h if i in mine else 0 for i, h in enumerate(hint)]})
            return cp_model.OPTIMAL

        def stop_search(self) -> None:  # (Ctrl-C stops a solve through it)
            pass

    m, x = _model(generate(GenerateSpec(nodes=20, pods=240, load=1.1, seed=1)))
    levels = sorted(m.batch.levels, reverse=True)
    per = _levels(m)
    monkeypatch.setattr(nb.cp_model, "CpSolver", Emptying)
    search = NodeSearch(m, seed=1)
    y, stats = search.run(x, levels[1], per[levels[1]], (per[levels[2]],), budget=0.5)
    values, after = dict(enumerate(x.tolist())), dict(enumerate(y.tolist()))
    assert per[levels[1]].value(after) == per[levels[1]].value(values)
    assert per[levels[2]].value(after) == per[levels[2]].value(values) > 0
    assert stats.rejected > 0


def test_a_model_with_a_constraint_that_is_not_linear_is_not_searched_by_neighbourhoods() -> None:
    """Steps are built from linear constraints only: once the model holds another kind (a maximum, as the
    score tier's terms add), the search says it is not ready and the tier is left to CP-SAT."""
    m, _ = _model(generate(GenerateSpec(nodes=6, pods=40, load=1.0, seed=4)))
    search = NodeSearch(m, seed=0)
    assert search.ready()
    v = m.vars[m.classes[0].index].arr_vars[0]
    top = m.cp.new_int_var(0, 100, "top")
    m.cp.add_max_equality(top, [v, 3])
    assert not search.ready()


def test_running_pods_let_go_at_equal_count_come_back() -> None:
    """A running pod moved elsewhere by hand (a valid answer: its pods may move) is put back by the
    restore pass: every level's count unchanged, more running pods kept, the answer still feasible, and
    the check of the few rows it changes agrees with CP-SAT on every trial change."""
    m, x = _model(generate(GenerateSpec(nodes=12, pods=160, load=0.9, seed=5)), movable=True)
    per = _levels(m)
    rng = np.random.default_rng(0)
    moved = None
    for c in rng.permutation(len(m.classes)).tolist():
        cv = m.vars[c]
        for kv, ub in zip(cv.keep_vars, cv.keep_ub.tolist()):
            for av in cv.arr_vars:
                y = x.copy()
                k, a = kv.Index(), av.Index()
                if y[k] != ub:
                    continue
                y[k] -= 1
                y[a] += 1
                ok = _feasible(m, y)
                assert LinearView(m.cp).satisfied(y, [k, a]) == ok
                if ok:
                    moved = y
                    break
            if moved is not None:
                break
        if moved is not None:
            break
    assert moved is not None, "no running pod of this cluster can move"
    kept = sum(int(moved[v.Index()]) for cv in m.vars for v in cv.keep_vars)
    search = NodeSearch(m, seed=0)
    back, count = search.restore(moved, deadline=1e18)
    assert count >= 1
    assert sum(int(back[v.Index()]) for cv in m.vars for v in cv.keep_vars) == kept + count
    before, after = dict(enumerate(moved.tolist())), dict(enumerate(back.tolist()))
    assert all(per[lv].value(after) == per[lv].value(before) for lv in per)
    assert _feasible(m, back)


def test_placement_runs_level_by_level_and_a_level_one_part_closes_leaves_its_time_to_another(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Across independent parts the placement tiers go level by level, highest first; within a level a
    part whose incumbent already reaches its own LP bound goes first (its tier ends at once) and leaves
    the level's whole time to the next part, not to its own lower levels; else the smaller part first."""
    from types import SimpleNamespace

    from optisched.optimal import tier_loop
    from optisched.optimal.clock import Clock

    clock = Clock(100.0)
    calls: list[tuple[str, str, float, float]] = []

    def fake(g, until, raw, objective, placement, clk, only=None):  # type: ignore[no-untyped-def]
        calls.append((g.name, str(only), clk.now(), until))
        if not (g.name == "big" and only == TierKey.placed(10)):  # an open tier uses its whole time
            clk.charge(until - clk.now())

    monkeypatch.setattr(tier_loop, "_solve_group", fake)
    monkeypatch.setattr(tier_loop, "_closed", lambda g, level, *a: g.name == "big" and level == 10)
    big = SimpleNamespace(name="big", batch=SimpleNamespace(levels=[10, 0]))
    small = SimpleNamespace(name="small", batch=SimpleNamespace(levels=[10, 0]))
    tier_loop._place_by_level([small, big], [1.0, 4.0], np.zeros(0), None, 30.0, clock)
    assert [(name, only) for name, only, _, _ in calls] == [
        ("big", "placed[priority=10]"), ("small", "placed[priority=10]"),
        ("small", "placed[priority=0]"), ("big", "placed[priority=0]")]
    _, (_, _, start, until), (_, _, start0, until0), (_, _, start1, until1) = calls
    assert start == 0.0 and until == pytest.approx(20.0)  # the top level's two thirds, all of them
    assert (start0, until0) == (pytest.approx(20.0), pytest.approx(22.0))  # by size: a fifth of the rest
    assert (start1, until1) == (pytest.approx(22.0), pytest.approx(30.0))


def test_a_part_closed_by_its_own_lp_bound_is_seen_before_its_tier_runs() -> None:
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=2))
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    from optisched.optimal import groups as groups_mod
    from optisched.optimal import tier_loop
    from optisched.optimal.bound import LevelBound
    from optisched.optimal.clock import Clock

    batch = build_batch(state, config)
    m = BatchModel(batch, config)
    encode_eviction_rules(m)
    raw = GreedyScheduler(state, config, GreedyOptions(record=False)).run().snapshot.node_of.copy()
    solver = TierSolver(m.cp, workers=1, seed=0, deadline=10.0)
    solver.full = repair_hint(m, variable_values(m, repair_placement(batch, config, raw)))
    g = groups_mod.Group(batch, m, solver, None, lp=LevelBound(m, clock=Clock(1e9)))
    top = batch.levels[0]
    lin = next(x for key, _, x in tier_loop._ensure_objectives(g, raw, None, Clock(1e9)) if key == TierKey.placed(top))
    reached = solver.evaluate(lin) >= g.lp.bound(top)
    assert tier_loop._closed(g, top, raw, None, Clock(1e9)) == reached
    g.lp.fix(top, solver.evaluate(lin) + 10**6)  # no placement reaches it: the next level's LP refuses
    assert not tier_loop._closed(g, batch.levels[1], raw, None, Clock(1e9))
