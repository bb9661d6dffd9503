"""The clock's accounting: built work charged as counted, the limit kept when the building takes it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import run_cli

from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal import clock, groups, solve, tier_loop
from optisched.optimal.classes import build_batch
from optisched.optimal.eviction.minimal import minimal_victims
from optisched.optimal.model import BatchModel, BuildTimeout
from optisched.profile import default_config


def _state(spec: GenerateSpec):  # type: ignore[no-untyped-def]
    cluster = cluster_from_objects(generate(spec))
    return compile_cluster(cluster), cluster.config or default_config()


def _built(spec: GenerateSpec) -> tuple[BatchModel, clock.Clock]:
    state, config = _state(spec)
    c = clock.Clock(60.0)
    with c.phase("model"):
        model = BatchModel(build_batch(state, config), config, clock=c, deadline=60.0)
    return model, c


def test_building_a_model_charges_the_clock_for_every_variable_constraint_and_term_it_wrote() -> None:
    small, c_small = _built(GenerateSpec(nodes=10, seed=3, load=1.1))
    large, c_large = _built(GenerateSpec(nodes=40, seed=3, load=1.1))
    for model, c in ((small, c_small), (large, c_large)):
        assert model.terms == clock.model_terms(model.cp.proto)  # nothing written is left uncounted
        assert c.ledger["model"]["term"] == model.terms
        assert c.now() == pytest.approx(clock.WORK_COST["term"] * model.terms)
    assert large.terms > 2 * small.terms and c_large.now() > 2 * c_small.now()


def test_the_ledger_counts_a_phase_inside_another_apart() -> None:
    c = clock.Clock(10.0)
    with c.phase("outer"):
        c.charge(1.0)
        with c.phase("inner"):
            c.charge(2.0)
        c.charge(0.5)
    assert c.ledger["outer"]["nominal"] == pytest.approx(1.5)
    assert c.ledger["inner"]["nominal"] == pytest.approx(2.0)
    assert all(row["cpu"] >= 0 for row in c.ledger.values())


def test_a_build_stops_between_rules_once_its_deadline_has_passed() -> None:
    state, config = _state(GenerateSpec(nodes=10, seed=3))
    c = clock.Clock(60.0)
    c.charge(5.0)
    with pytest.raises(BuildTimeout):
        BatchModel(build_batch(state, config), config, clock=c, deadline=4.0)


def _lex(r: solve.OptimalResult, node_of: np.ndarray) -> list[int]:
    per = solve.placed_per_level(r.batch, node_of)
    return [per[lv] for lv in r.batch.levels]


def test_counted_work_that_uses_up_the_limit_gives_kube_schedulers_placement_the_same_way_every_run(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A model too large for the limit, as counted (not as timed): no model, greedy's placement, a note
    that is not the wall clock's (the run repeats)."""
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    monkeypatch.setitem(clock.WORK_COST, "term", 1.0)
    state, config = _state(GenerateSpec(nodes=12, seed=5, load=1.1))
    runs = [solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5)) for _ in range(2)]
    for r in runs:
        assert r.certificate.source == "greedy" and (r.node_of == r.greedy.snapshot.node_of).all()
        assert any("used up before the model was built" in n for n in r.certificate.notes)
        assert not any("wall-clock" in n for n in r.certificate.notes)
    assert runs[0].certificate.to_dict()["notes"] == runs[1].certificate.to_dict()["notes"]


def test_a_run_that_solved_no_tier_says_it_has_no_bound_instead_of_an_empty_table(
        monkeypatch, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The limit used up before the model was built: the terminal says no tier was solved (no bound, no
    gap) rather than printing an empty certificate table, and the report's run card says the same."""
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    monkeypatch.setitem(clock.WORK_COST, "term", 1.0)
    example = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "quickstart.yaml"
    code, out, _ = run_cli(["schedule", str(example), "--mode", "optimal", "--time-limit", "5"], capsys)
    assert code == 0
    assert "no tier solved, so no bound and no gap" in " ".join(out.split())
    assert "┏━━━━━━┳" not in out  # no empty certificate table
    code, out, _ = run_cli(["compare", str(example), "--time-limit", "5", "--report", str(tmp_path / "r")], capsys)
    assert code == 0
    assert "no tier solved: no bound, no gap" in (tmp_path / "r" / "report.html").read_text()


def test_when_the_wall_clock_passes_after_the_placement_tiers_the_optional_tiers_are_left_out(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A loaded machine: the wall-clock limit passes once the placement tiers are solved. The score tier
    is not built (said so), the safety net's note is there, and the answer still places at least
    kube-scheduler's pods on every level."""
    passed = {"wall": False}
    real = tier_loop._settle_reached

    def placement_done(g):  # type: ignore[no-untyped-def]
        passed["wall"] = True
        return real(g)

    monkeypatch.setattr(tier_loop, "_settle_reached", placement_done)
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: -1.0 if passed["wall"] else 1e9)
    state, config = _state(GenerateSpec(nodes=15, seed=4, load=1.1))
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5))
    notes = " | ".join(r.certificate.notes)
    assert passed["wall"] and "score tier(s): left out" in notes
    assert "the wall-clock limit stopped the search" in notes
    assert not any(t.name == "score" for t in r.certificate.tiers)
    assert r.violations == [] and _lex(r, r.node_of) >= _lex(r, r.greedy.snapshot.node_of)


def test_when_the_wall_clock_passes_during_the_build_no_lp_or_tier_is_started(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    passed = {"wall": False}
    real = BatchModel.build

    def build(self, *a, **k):  # type: ignore[no-untyped-def]
        real(self, *a, **k)
        passed["wall"] = True

    monkeypatch.setattr(BatchModel, "build", build)
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: -1.0 if passed["wall"] else 1e9)
    monkeypatch.setattr(groups, "LevelBound", lambda *a, **k: pytest.fail("an LP was built past the limit"))
    state, config = _state(GenerateSpec(nodes=12, seed=6, load=1.2))
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5))
    assert r.certificate.source == "greedy" and (r.node_of == r.greedy.snapshot.node_of).all()
    assert any("wall-clock limit had passed before the model was built" in n for n in r.certificate.notes)


def _preemptor(state) -> str:  # type: ignore[no-untyped-def]
    pending = sorted(state.pending, key=lambda p: -int(state.pod_priority[p]))
    return state.pods[pending[0]].key


def test_minimal_victims_whose_model_the_limit_cannot_build_give_kube_schedulers_victims(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    state, config = _state(GenerateSpec(nodes=20, seed=5, load=1.5))
    key = "shop/app021-77d91"  # the first pending pod, by priority, that kube-scheduler preempts for
    normal = minimal_victims(state, config, key, time_limit=3)
    assert normal.greedy_victims, "the case needs kube-scheduler to preempt"
    monkeypatch.setitem(clock.WORK_COST, "term", 1.0)
    starved = minimal_victims(state, config, key, time_limit=3)
    assert starved.status == "FEASIBLE" and "model was built" in starved.message
    assert (starved.node, starved.victims) == (normal.greedy_node, normal.greedy_victims)


def test_preempt_optimal_for_one_pod_writes_the_same_json_twice(tmp_path: Path, capsys,
                                                               monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)  # (a loaded machine's safety net aside)
    spec = GenerateSpec(nodes=20, seed=5, load=1.2)
    path = tmp_path / "cluster.json"
    with path.open("w") as f:
        dump(generate(spec), f, "json")
    key = _preemptor(_state(spec)[0])
    docs = []
    for _ in range(2):
        code, out, _ = run_cli(["preempt", str(path), "--pod", key, "--mode", "optimal", "--time-limit", "3",
                                "--json"], capsys)
        assert code == 0
        doc = json.loads(out)
        doc["answer"].pop("seconds")
        for tier in doc["answer"]["tiers"]:
            tier.pop("seconds")
        docs.append(doc)
    assert docs[0] == docs[1]


def test_counting_a_models_terms_leaves_every_kind_of_constraint_as_it_was() -> None:
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    a, b, x = m.new_bool_var("a"), m.new_bool_var("b"), m.new_int_var(0, 5, "x")
    m.add_bool_or([a, b])
    m.add_at_most_one([a, b])
    m.add(x + a <= 4).only_enforce_if(b)
    assert clock.model_terms(m.proto) == 3 + (1 + 0) + (1 + 0) + (1 + 1 + 2)
    kinds = [(ct.has_bool_or(), ct.has_at_most_one(), ct.has_linear()) for ct in m.proto.constraints]
    assert kinds == [(True, False, False), (False, True, False), (False, False, True)]
    assert cp_model.CpSolver().solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
