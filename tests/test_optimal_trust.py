"""Optimal mode a user can rely on: the same answer twice, never below greedy, inside the time limit."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from builders import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal import clock, solve
from optisched.optimal.check import check_answer
from optisched.optimal.decode import variable_values
from optisched.optimal.eviction.batch import encode_eviction_rules
from optisched.optimal.hint import accept_reached
from optisched.optimal.model import BatchModel
from optisched.optimal.tier_key import TierKey
from optisched.optimal.tiers import Tier, tier_unit
from optisched.profile import default_config


def _cluster(tmp_path: Path, spec: GenerateSpec) -> Path:
    path = tmp_path / "cluster.json"
    with path.open("w") as f:
        dump(generate(spec), f, "json")
    return path


def _timeless(doc: object) -> object:
    """``doc`` without its ``seconds`` fields (wall time taken, the one thing that may differ)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if k != "seconds"}
    if isinstance(doc, list):
        return [_timeless(x) for x in doc]
    return doc


@pytest.mark.parametrize("spec,lns", [
    (GenerateSpec(nodes=12, seed=5, load=1.0), False),
    (GenerateSpec(nodes=25, seed=2, load=1.1, gpu_fraction=0.2), False),
    (GenerateSpec(nodes=30, seed=7, load=1.0), True),
], ids=["a small cluster solved whole repeats exactly",
        "an overloaded cluster with gpus repeats exactly",
        "a cluster searched by node neighbourhoods repeats exactly"])
def test_two_runs_with_the_same_seed_write_the_same_json(spec, lns, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the wall-clock safety net is what a loaded machine may trip; the deterministic budget alone decides here
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    if lns:  # candidate nodes and no presolve: the large-model path (CP-SAT's LNS and node neighbourhoods)
        monkeypatch.setattr(solve, "OptimalOptions",
                            functools.partial(solve.OptimalOptions, max_variables=600, presolve_limit=600))
    path = _cluster(tmp_path, spec)
    docs = []
    for run in (1, 2):
        out = tmp_path / f"o{run}.json"
        code, _, _ = run_cli(["schedule", str(path), "--mode", "optimal", "--time-limit", "2", "--seed", "3",
                              "--output", str(out)], capsys)
        assert code == 0
        docs.append(json.loads(out.read_text()))
    assert _timeless(docs[0]) == _timeless(docs[1])
    assert not any("wall-clock" in n for n in docs[0]["certificate"]["notes"])


@pytest.mark.parametrize("tier,gap", [
    (Tier(TierKey.parse("placed[priority=0]"), "max", 0, 5, "FEASIBLE", 1.0), 1.0),
    (Tier(TierKey.parse("placed[priority=0]"), "max", 90, 100, "FEASIBLE", 1.0), 0.1),
    (Tier(TierKey.parse("score"), "max", -1_122_324, 589_708_362, "FEASIBLE", 1.0, fidelity="SURROGATE"), None),
    (Tier(TierKey.parse("disruption"), "min", 38, 0, "FEASIBLE", 1.0), None),
    (Tier(TierKey.parse("disruption"), "min", 38, 19, "FEASIBLE", 1.0), 0.5),
    (Tier(TierKey.parse("disruption"), "min", 0, 0, "OPTIMAL", 1.0), 0.0),
], ids=["a placement tier's bound always counts pods, even against nothing placed",
        "a placement tier ten pods short has a ten percent gap",
        "a surrogate score bounded by a value of the other sign has no useful bound",
        "a minimized tier bounded by zero has no useful bound",
        "a minimized tier bounded by half its value has a fifty percent gap",
        "an optimal tier has a zero gap"])
def test_a_gap_is_shown_only_where_the_bound_means_something(tier: Tier, gap: float | None) -> None:
    assert tier.to_dict()["gap"] == gap


def test_the_score_tier_is_shown_in_score_points_everywhere() -> None:
    d = Tier(TierKey.parse("score"), "max", 151_000, 160_000, "FEASIBLE", 1.0, greedy=150_000).to_dict()
    assert (d["objective"], d["bound"], d["greedy"], d["unit"]) == (1510, 1600, 1500, "score points")
    assert tier_unit(TierKey.placed(1000))[0].startswith("pods of this priority on a node after the batch")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(6, 24), load=st.floats(0.6, 1.4), pending=st.floats(0.2, 0.9),
       gpu=st.sampled_from([0.0, 0.1, 0.3]), zones=st.integers(1, 3), seed=st.integers(0, 10_000),
       movable=st.booleans())
def test_every_answer_places_at_least_kube_schedulers_pods_level_by_level(
        nodes: int, load: float, pending: float, gpu: float, zones: int, seed: int, movable: bool) -> None:
    """Generated clusters with every feature the generator mixes (priorities and preemption, PDBs, spread,
    affinity, host ports, GPUs, bound pods): kube-scheduler's own final placement (greedy mode, preemption
    included) is the floor, and the answer passes the independent re-check."""
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=nodes, load=load, pending_fraction=pending,
                                                         gpu_fraction=gpu, zones=zones, seed=seed)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=2, movable=movable))
    kube = r.greedy.snapshot.node_of
    assert r.violations == []
    assert check_answer(state, config, r.node_of, kube, r.batch.class_of, blocks=r.order, evicted=r.evicted) == []
    mine, theirs = solve.placed_per_level(r.batch, r.node_of), solve.placed_per_level(r.batch, kube)
    assert [mine[lv] for lv in r.batch.levels] >= [theirs[lv] for lv in r.batch.levels]
    # the batch model itself takes kube-scheduler's placement as a complete solution (CP-SAT checks the
    # hint with every variable fixed to it)
    model = BatchModel(r.batch, config)
    encode_eviction_rules(model)
    assert accept_reached(model, variable_values(model, kube), clock.Clock(60.0), 10.0) is not None


def test_stop_after_placed_solves_only_the_placement_tiers(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _cluster(tmp_path, GenerateSpec(nodes=10, seed=4, load=1.1))
    out = tmp_path / "o.json"
    code, _, _ = run_cli(["schedule", str(path), "--mode", "optimal", "--time-limit", "3", "--stop-after", "placed",
                          "--output", str(out)], capsys)
    assert code == 0
    names = [t["name"] for t in json.loads(out.read_text())["certificate"]["tiers"]]
    assert names and all(n.startswith("placed[") for n in names)
    code, _, err = run_cli(["schedule", str(path), "--mode", "optimal", "--stop-after", "score"], capsys)
    assert code == 2 and "--stop-after" in err


@pytest.mark.parametrize("seconds,bounded", [(0.0, False), (5.0, True)],
                         ids=["an LP without time keeps the cheaper bound and says so",
                              "an LP with its share bounds every level"])
def test_the_lp_bound_runs_inside_its_share(seconds: float, bounded: bool) -> None:
    from optisched.optimal.bound import LevelBound
    from optisched.optimal.classes import build_batch
    from optisched.optimal.model import BatchModel

    cluster = cluster_from_objects(generate(GenerateSpec(nodes=15, seed=3, load=1.2)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    lb = LevelBound(BatchModel(build_batch(state, config), config, build=False),
                    clock=clock.Clock(60.0), seconds=seconds)
    found = [lb.bound(level) for level in lb.levels]
    assert all(b is not None for b in found) == bounded
    assert bool(lb.notes) != bounded
    if not bounded:
        assert all("did not finish in its share of the time limit" in n for n in lb.notes)


def test_with_moves_the_answer_is_never_below_the_plain_answer_it_starts_from(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    plain: list = []
    real = solve._plain_first

    def spy(*a, **k):  # type: ignore[no-untyped-def]
        out = real(*a, **k)
        plain.append(out)
        return out

    monkeypatch.setattr(solve, "_plain_first", spy)
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=20, seed=9, load=1.2)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=4, movable=True))
    assert r.violations == [] and plain[-1] is not None  # the outer call's (the plain run's own is None)
    levels = r.batch.levels
    mine, before = solve.placed_per_level(r.batch, r.node_of), solve.placed_per_level(r.batch, plain[-1])
    assert [mine[lv] for lv in levels] >= [before[lv] for lv in levels]


@pytest.mark.parametrize("spec", [
    GenerateSpec(nodes=24, seed=11, load=1.2),
    GenerateSpec(nodes=30, seed=12, load=1.1, gpu_fraction=0.2),
    GenerateSpec(nodes=30, seed=13, load=1.0, zones=1, pending_fraction=0.8),
], ids=["overloaded", "gpus", "one zone, mostly pending"])
def test_with_moves_the_answer_is_never_below_a_separate_plain_run_under_the_same_limit(
        spec: GenerateSpec, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every plain answer is allowed with moves, and the movable run starts from the plain run's own
    placement tiers (same limit, same budgets), so it places at least as many pods on every level."""
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)  # the deterministic budgets decide
    cluster = cluster_from_objects(generate(spec))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    plain = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=4))
    moved = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=4, movable=True))
    assert moved.violations == [] and plain.violations == []
    levels = plain.batch.levels
    mine, theirs = solve.placed_per_level(moved.batch, moved.node_of), solve.placed_per_level(plain.batch, plain.node_of)
    assert [mine[lv] for lv in levels] >= [theirs[lv] for lv in levels]


def test_past_the_wall_clock_limit_before_any_model_kube_schedulers_placement_is_the_answer(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """When the greedy hint took the whole limit (a loaded machine), nothing is built or repaired: the
    answer is greedy mode's placement, and the certificate says why."""
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: -1.0)
    monkeypatch.setattr(solve, "build_groups", lambda *a, **k: pytest.fail("a model was built past the limit"))
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=12, seed=5, load=1.1)))
    state = compile_cluster(cluster)
    r = solve.solve_optimal(state, cluster.config or default_config(), solve.OptimalOptions(time_limit=5))
    assert r.certificate.source == "greedy" and (r.node_of == r.greedy.snapshot.node_of).all()
    assert any("before the model was built" in n for n in r.certificate.notes)
    assert not r.certificate.interrupted


@pytest.mark.parametrize("small,large", [(400, 4_000), (4_000, 15_000), (15_000, 45_000)])
def test_a_larger_model_gets_fewer_units_of_work_per_second(small: int, large: int) -> None:
    """The deterministic rate falls with the model's size, as measured (docs/optimal_trust.md)."""
    assert clock.RATE_MIN <= clock.det_rate(large) < clock.det_rate(small) <= clock.RATE_MAX


def test_minimal_victims_gives_the_same_answer_twice(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The single-pod preemption search budgets by the deterministic clock too."""
    from optisched.optimal.eviction.minimal import minimal_victims

    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)  # (a loaded machine's safety net aside)

    cluster = cluster_from_objects(generate(GenerateSpec(nodes=30, seed=5, load=1.2)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    pending = sorted(state.pending, key=lambda p: -int(state.pod_priority[p]))
    key = state.pods[pending[0]].key
    answers = [_timeless(minimal_victims(state, config, key, time_limit=3).to_dict()) for _ in range(2)]
    assert answers[0] == answers[1]


def test_the_live_line_names_each_tier_before_its_first_solution() -> None:
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=8, seed=6, load=1.1)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    heard: list[str] = []
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=3, stop_after="placed"),
                            progress=lambda name, *_: heard.append(name))
    solved = {n for n in heard if n.startswith("solving ")}
    assert solved == {f"solving {t.name}" for t in r.certificate.tiers}
    assert all(t.name.startswith("placed[") for t in r.certificate.tiers)


def test_nondeterministic_mode_is_an_explicit_choice(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = _cluster(tmp_path, GenerateSpec(nodes=8, seed=4))
    out = tmp_path / "o.json"
    code, _, _ = run_cli(["schedule", str(path), "--mode", "optimal", "--time-limit", "2", "--nondeterministic",
                          "--output", str(out)], capsys)
    assert code == 0 and json.loads(out.read_text())["certificate"]["status"] in ("OPTIMAL", "FEASIBLE")
    assert solve.OptimalOptions().deterministic  # and the default is the reproducible one
