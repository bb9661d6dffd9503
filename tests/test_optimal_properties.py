"""Invariants of optimal mode on clusters where priorities, preemption, PDBs, affinity and spread meet."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod
from helpers.mixed import mixed_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.objects import PreemptionPolicy
from optisched.model.state import compile_cluster
from optisched.optimal import certify
from optisched.optimal.check import check_answer, check_placement
from optisched.optimal.classes import build_batch
from optisched.optimal.hint import repair_placement
from optisched.optimal.solve import OptimalOptions, placed_per_level, solve_optimal
from optisched.optimal.tier_key import TierKey
from optisched.profile import default_config


def _solve(objs: list[dict], **kw):  # type: ignore[no-untyped-def]
    cluster = cluster_from_objects(objs)
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    return state, config, solve_optimal(state, config, OptimalOptions(time_limit=kw.pop("time_limit", 3), workers=2, **kw))


def _greedy_counts(r, config):  # type: ignore[no-untyped-def]
    """Greedy's own pods per level: kube-scheduler's final placement is the answer's floor."""
    return placed_per_level(r.batch, r.greedy.snapshot.node_of)


def _victims(state, node_of):  # type: ignore[no-untyped-def]
    """Bound pods that lost their node: (pod row, its input node)."""
    gone = (state.pod_node >= 0) & (node_of != state.pod_node)
    return [(int(p), int(state.pod_node[p])) for p in np.flatnonzero(gone)]


def _greedy_run(objs: list[dict]):  # type: ignore[no-untyped-def]
    cluster = cluster_from_objects(objs)
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    return state, config, build_batch(state, config), GreedyScheduler(state, config, GreedyOptions(record=False)).run()


def test_a_victim_put_back_gets_the_pods_of_its_whole_zone_rechecked() -> None:
    """Mixed cluster 782: batch semantics puts preemption victim b29 back on n01 (zone b); its required
    anti-affinity keeps ``tier=web`` pods out of the whole zone, so p14 (``tier=web``, placed on n04 in
    zone b, itself not fragile) must leave as well. Re-checking only the pods of n01 kept p14, and the
    repaired copy failed the checker."""
    state, config, batch, greedy = _greedy_run(mixed_cluster(782))
    raw = greedy.snapshot.node_of
    fixed = repair_placement(batch, config, raw)
    b29, p14 = state.pod_index["default/b29"], state.pod_index["default/p14"]
    assert raw[b29] == -1 and fixed[b29] == state.pod_node[b29] == state.node_index["n01"]
    assert raw[p14] == state.node_index["n04"] and fixed[p14] == -1
    assert check_placement(state, config, fixed, batch.class_of) == []


def test_the_violations_describe_the_placement_returned_not_the_repaired_copy() -> None:
    """When a part has no solution in time, kube-scheduler's own placement is returned; the violations
    must be that placement's (none), not those of the repaired copy the check saw first (here one that
    puts the pod on a tainted node)."""
    from types import SimpleNamespace

    objs = [node("n1", cpu="2").build(), node("n2", cpu="2").taint("dedicated", "x").build(),
            pod("p").req(cpu="1").build()]
    state, config, batch, greedy = _greedy_run(objs)
    raw = greedy.snapshot.node_of.copy()
    p, n2 = state.pod_index["default/p"], state.node_index["n2"]
    assert raw[p] == state.node_index["n1"]
    broken = raw.copy()
    broken[p] = n2
    assert check_placement(state, config, broken, batch.class_of) != []
    unsolved = SimpleNamespace(solver=SimpleNamespace(full=None), reached=None, lns=False, skipped=[], raw_start=False,
                               model=SimpleNamespace(order=SimpleNamespace(note="")))
    r = certify.answer(state, config, batch, [unsolved], [], greedy, broken, raw, 0.0, lambda *_: None)
    assert r.certificate.source == "greedy" and np.array_equal(r.node_of, raw)
    assert r.violations == [] == check_answer(state, config, r.node_of, raw)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_every_answer_passes_the_checker_and_beats_or_ties_greedy(seed: int) -> None:
    state, config, r = _solve(mixed_cluster(seed))
    assert r.violations == []
    assert check_answer(state, config, r.node_of, r.greedy.snapshot.node_of, blocks=r.order, evicted=r.evicted) == []
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), _greedy_counts(r, config)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_a_victim_leaves_only_for_a_higher_priority_preemptor_on_its_node(seed: int) -> None:
    state, _, r = _solve(mixed_cluster(seed))
    if r.certificate.source != "solver":
        return
    arrived = (r.node_of >= 0) & (r.node_of != state.pod_node)
    for victim, at in _victims(state, r.node_of):
        there = np.flatnonzero(arrived & (r.node_of == at))
        preemptors = [p for p in there.tolist() if state.pods[p].spec.preemption_policy != PreemptionPolicy.NEVER]
        assert any(state.pod_priority[p] > state.pod_priority[victim] for p in preemptors), state.pods[victim].key


@pytest.mark.parametrize("seed", [1])
def test_generated_cluster_answer_is_valid_and_at_least_greedy(seed: int) -> None:
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=seed))
    _, _, r = _solve(objs)
    assert r.violations == []
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, r.greedy.snapshot.node_of)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]
    assert {t.name for t in r.certificate.tiers} >= {f"placed[priority={lv}]" for lv in levels}


@pytest.mark.parametrize("presolve_limit", [20_000, 0], ids=["default search", "no presolve: LNS to the part's LP bound"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_candidate_nodes_keep_answers_valid_and_the_lp_bound_holds(presolve_limit: int, seed: int) -> None:
    """With a tiny variable budget every class keeps only candidate nodes: answers stay valid, never
    below greedy, and each placement tier's bound (now from the LP relaxation) is at least the
    unrestricted optimum found with every node. Without presolve (how large batches run) the search is
    LNS, and a placement tier stops once its part reaches the part's own LP bound."""
    objs = mixed_cluster(seed)
    _, config, small = _solve(objs, max_variables=20, presolve_limit=presolve_limit)
    _, _, full = _solve(objs, time_limit=4)
    assert small.violations == []
    levels = small.batch.levels
    mine, greedy = placed_per_level(small.batch, small.node_of), _greedy_counts(small, config)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]
    top = f"placed[priority={levels[0]}]"
    bound = next(t.bound for t in small.certificate.tiers if t.name == top)
    best = next(t for t in full.certificate.tiers if t.name == top)
    if best.status == "OPTIMAL":
        assert bound >= best.objective


def test_independent_parts_are_solved_separately_with_the_same_optimum() -> None:
    """GPU pods only fit tainted GPU nodes, CPU pods only the others: two parts, solved apart."""
    from builders import node, pod, state_of

    objs = [node("g1", cpu="8").alloc(nvidia_gpu="4").taint("gpu"), node("g2", cpu="8").alloc(nvidia_gpu="4").taint("gpu"),
            node("c1", cpu="4"), node("c2", cpu="4")]
    objs += [pod(f"infer-{i}").req(cpu="1", nvidia_gpu="1").tolerate("gpu").label(app="infer") for i in range(4)]
    objs += [pod(f"train-{i}").req(cpu="1", nvidia_gpu="4").tolerate("gpu").label(app="train") for i in range(1)]
    objs += [pod(f"web-{i}").req(cpu="3").label(app="web") for i in range(3)]
    state = state_of(*objs)
    r = solve_optimal(state, default_config(), OptimalOptions(time_limit=10))
    assert "solved as 2 independent parts" in r.certificate.notes
    assert r.violations == []
    placed = {state.pods[p].key for p in state.pending if r.node_of[p] >= 0}
    assert {f"default/infer-{i}" for i in range(4)} | {"default/train-0"} <= placed
    assert len([k for k in placed if "web" in k]) == 2  # 3 cpu each, two 4-cpu nodes
    assert r.certificate.status == "OPTIMAL"


@pytest.mark.parametrize("hint", [True, False], ids=["complete hint: LNS only", "no hint: a first-solution worker"])
def test_the_lns_search_answers_with_or_without_a_complete_hint(hint: bool, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Large restricted models run LNS on every worker from the complete hint; when the hint cannot be
    repaired, a full-problem worker (no LP) looks for the first solution beside LNS. Either way the
    solver answers: valid, at least greedy's on every level."""
    import optisched.optimal.groups as groups_mod
    import optisched.optimal.solve as solve_mod

    if not hint:  # neither a repaired copy nor kube-scheduler's own placement
        monkeypatch.setattr(groups_mod, "repair_hint", lambda *a, **k: None)
        monkeypatch.setattr(groups_mod, "accepts", lambda *a, **k: None)
    used: list[dict] = []
    real = solve_mod.build_groups

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        groups, lp = real(*a, **k)
        used.extend(dict(g.solver.params) for g in groups)
        return groups, lp

    monkeypatch.setattr(solve_mod, "build_groups", spy)
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=2))
    _, config, r = _solve(objs, max_variables=20, presolve_limit=0)
    want, other = (groups_mod.LNS_PARAMS, groups_mod.LNS_FIRST_SOLUTION)[::1 if hint else -1]
    assert want in used and other not in used  # (a part small enough for presolve has neither)
    assert r.violations == []
    assert r.certificate.source == "solver" or not hint
    high = next(t for t in r.certificate.tiers if t.name == "placed[priority=1000]")
    assert high.objective > 0 and high.status in ("OPTIMAL", "FEASIBLE")  # the solver's own solutions
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), _greedy_counts(r, config)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]


def test_pinning_fixes_variables_at_the_incumbent_until_unpinned() -> None:
    """A pinned variable keeps the incumbent's value whatever the objective; unpinned, its domain is
    back (a second pin of the same variable does not overwrite the saved domain)."""
    from ortools.sat.python import cp_model

    from optisched.optimal.tiers import Linear, TierSolver

    cp = cp_model.CpModel()
    x, y = cp.new_int_var(0, 5, "x"), cp.new_int_var(0, 5, "y")
    cp.add(x + y <= 8)
    solver = TierSolver(cp, workers=1, seed=0, deadline=1e18)
    solver.full = [2, 3]
    solver.pin([x])
    solver.full = [4, 3]  # a later incumbent: the first pin's saved domain must survive
    solver.pin([x])
    both = Linear()
    both.add(x, 1, 5)
    both.add(y, 1, 5)
    tier = solver.solve(TierKey("both"), both, "max", 1.0)
    assert tier.objective == 7 and solver.value(x) == 2 and solver.value(y) == 5
    solver.unpin()
    assert list(cp.proto.variables[x.Index()].domain) == [0, 5]
    only_x = Linear()
    only_x.add(x, 1, 5)
    assert solver.solve(TierKey("x"), only_x, "max", 1.0).objective == 5  # free again (the tier before still holds: x + y >= 7)
    assert 7 <= solver.value(x) + solver.value(y) <= 8


def test_smaller_parts_are_solved_first_in_each_phase(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """What a small part closes early goes to the larger parts after it: the placement tiers run level by
    level, each level's tiers from the smallest model up (no part here has its own LP to close a level
    at once), then the tiers after them part by part, smallest first."""
    from builders import node, pod, state_of

    from optisched.optimal import tier_loop

    calls: list[tuple[bool, int, str | None]] = []
    real = tier_loop._solve_group

    def spy(g, deadline, raw, objective, placement, clock, only=None):  # type: ignore[no-untyped-def]
        calls.append((placement, len(g.model.cp.proto.variables), only))
        return real(g, deadline, raw, objective, placement, clock, only)

    monkeypatch.setattr(tier_loop, "_solve_group", spy)
    objs = [node(f"c{i}", cpu="4") for i in range(6)] + [node("g1", cpu="8").alloc(nvidia_gpu="4").taint("gpu")]
    objs += [pod(f"{app}-{i}").req(cpu=cpu).label(app=app).priority(prio)
             for app, cpu, prio in (("web", "3", 0), ("api", "1", 10)) for i in range(4)]  # the larger part first
    objs += [pod(f"infer-{i}").req(cpu="1", nvidia_gpu="1").tolerate("gpu").label(app="infer").priority(prio)
             for i, prio in enumerate((0, 10))]
    r = solve_optimal(state_of(*objs), default_config(), OptimalOptions(time_limit=5))
    assert "solved as 2 independent parts" in r.certificate.notes
    placing = [(n, only) for p, n, only in calls if p]
    assert [str(only) for _, only in placing] == ["placed[priority=10]"] * 2 + ["placed[priority=0]"] * 2
    assert placing[0][0] < placing[1][0] and placing[2][0] < placing[3][0]  # the GPU part first in each level
    after = [n for p, n, _ in calls if not p]
    assert len(after) == 2 and after[0] < after[1]


def test_lns_placement_tiers_pin_the_levels_above(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Under LNS a placement tier searches its own level and the ones below: the classes above are pinned
    at the incumbent (the search is what limits a level there). The last placement level pins nothing
    more (the level just above it may move), and the tiers after placement run with nothing pinned.
    (CP-SAT's LNS: with node neighbourhoods, the default, a level's steps never free the levels above.)"""
    from optisched.optimal import tier_loop
    from optisched.optimal.tiers import TierSolver

    seen: list[tuple[str, bool, int]] = []
    real = TierSolver.solve
    groups: dict[int, object] = {}
    real_group = tier_loop._solve_group

    def group(g, *a, **k):  # type: ignore[no-untyped-def]
        groups[id(g.solver)] = g
        return real_group(g, *a, **k)

    def spy(self, key, *a, **k):  # type: ignore[no-untyped-def]
        g = groups[id(self)]
        if g.lns and key.is_level:
            above = {v.Index() for v in tier_loop._above(g.model, key.level)}
            seen.append((str(key), above <= set(self._pinned), len(above)))
        elif g.lns:
            seen.append((str(key), not self._pinned, 0))
        return real(self, key, *a, **k)

    monkeypatch.setattr(tier_loop, "_solve_group", group)
    monkeypatch.setattr(TierSolver, "solve", spy)
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=2))
    _, _, r = _solve(objs, max_variables=20, presolve_limit=0, node_search=False)
    placing = [s for s in seen if s[0].startswith("placed[")]
    assert len(placing) >= 3 and any(n > 0 for _, _, n in placing[:-1])
    assert all(ok for _, ok, _ in placing[:-1])  # every level but the last: the ones above pinned
    _, last_ok, last_above = placing[-1]
    assert last_above == 0 or not last_ok  # the last placement level may move the level above
    assert all(ok for name, ok, _ in seen if not name.startswith("placed["))
    assert r.violations == []
