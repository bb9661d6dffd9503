"""Optimal mode's long phases stop part-way once the limit has passed (docs/optimal_trust.md, "The time
limit is a promise"): a rule's encoding between node batches, the rules' restrictions between classes,
the batch's classes, the repair of greedy's placement, the rules' states. Each stop ends as the stop
between rules does: kube-scheduler's placement is the answer and the certificate says why. A stop decided
by counted work falls at the same point on every run."""
from __future__ import annotations

import numpy as np
import pytest

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.optimal import check, classes, clock, hint, model, solve
from optisched.optimal.model import BatchModel, BuildTimeout
from optisched.plugins.noderesources.fit import NodeResourcesFit
from optisched.profile import default_config

COUNTED = "the time limit was used up before the model was built (its work counted"
WALL = "the wall-clock limit had passed before the model was built"


def _case(spec: GenerateSpec):  # type: ignore[no-untyped-def]
    cluster = cluster_from_objects(generate(spec))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    return state, config, GreedyScheduler(state, config, GreedyOptions(record=False)).run()


def _greedy_answer(r: solve.OptimalResult, why: str) -> None:
    assert r.certificate.source == "greedy" and r.certificate.tiers == []
    assert (r.node_of == r.greedy.snapshot.node_of).all()
    assert any(why in n for n in r.certificate.notes), r.certificate.notes


class _Wall:
    """The wall-clock safety net, passed when :attr:`passed` is set (a loaded machine)."""

    def __init__(self, monkeypatch) -> None:  # type: ignore[no-untyped-def]
        self.passed = False
        monkeypatch.setattr(clock.Clock, "wall_left", lambda c: -1.0 if self.passed else 1e9)


def _encoding_probe(monkeypatch, stop_after_first: bool) -> list[tuple[str, float, int]]:  # type: ignore[no-untyped-def]
    """Record (event, clock, constraints) when the first NodeResourcesFit encoding starts, ends or is stopped."""
    seen: list[tuple[str, float, int]] = []
    real = NodeResourcesFit.encode_filter

    def encode(self, m, cls):  # type: ignore[no-untyped-def]
        first = not seen
        if first:
            seen.append(("in", m.clock.now(), len(m.cp.proto.constraints)))
        try:
            real(self, m, cls)
        except BuildTimeout:
            seen.append(("stopped", m.clock.now(), len(m.cp.proto.constraints)))
            raise
        if first:
            seen.append(("out", m.clock.now(), len(m.cp.proto.constraints)))
            if stop_after_first:
                raise BuildTimeout

    monkeypatch.setattr(NodeResourcesFit, "encode_filter", encode)
    return seen


def test_node_resources_fits_encoding_stops_between_node_batches_by_counted_work_at_the_same_point_every_run(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The limit (as counted, never as timed) falls in the middle of NodeResourcesFit's encoding: the
    build stops there, part-way through its nodes, at the same constraint on two runs."""
    _Wall(monkeypatch)
    monkeypatch.setattr(BatchModel, "CHECK_EVERY", 4)
    state, config, greedy = _case(GenerateSpec(nodes=40, seed=3, load=1.1))
    with monkeypatch.context() as m:  # where the encoding starts and ends on the counted clock
        whole = _encoding_probe(m, stop_after_first=True)
        m.setattr(solve, "solver_deadline", lambda limit, pending: 1e6)
        solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
    (_, start, before), (_, end, after) = whole
    assert after - before > 20  # enough constraints to stop among them
    monkeypatch.setattr(solve, "solver_deadline", lambda limit, pending: (start + end) / 2)
    stops = []
    for _ in range(2):
        with monkeypatch.context() as m:
            seen = _encoding_probe(m, stop_after_first=False)
            r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
        _greedy_answer(r, COUNTED)
        assert not any("wall-clock" in n for n in r.certificate.notes)
        assert [e for e, _, _ in seen] == ["in", "stopped"]
        stops.append(seen[1][2])
    assert before < stops[0] < after and stops[0] == stops[1]


def test_a_rules_restriction_stops_at_the_next_class_once_the_wall_clock_has_passed(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    wall = _Wall(monkeypatch)
    state, config, greedy = _case(GenerateSpec(nodes=20, seed=4, load=1.1))
    limited = []
    real = NodeResourcesFit.fit_count

    def fit_count(self, pod, nodes, used):  # type: ignore[no-untyped-def]
        limited.append(pod)  # (once per class in NodeResourcesFit's restriction)
        wall.passed = wall.passed or len(limited) == 3
        return real(self, pod, nodes, used)

    monkeypatch.setattr(NodeResourcesFit, "fit_count", fit_count)
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
    _greedy_answer(r, WALL)
    assert len(limited) == 8 < len(r.batch.classes)  # the next check (every 8 classes there)


def test_the_batchs_classes_stop_part_way_once_the_wall_clock_has_passed_and_the_answer_keeps_every_pod(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Grouping pods into classes stops between pods; the answer (kube-scheduler's) is accounted for with a
    class per pod, so every pending and leaving pod is still in the batch."""
    wall = _Wall(monkeypatch)
    state, config, greedy = _case(GenerateSpec(nodes=30, seed=5, load=1.2))
    signed = []
    real = classes.signature

    def signature(pod):  # type: ignore[no-untyped-def]
        signed.append(pod.key)
        wall.passed = wall.passed or len(signed) == 70
        return real(pod)

    monkeypatch.setattr(classes, "signature", signature)
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
    _greedy_answer(r, WALL)
    rows = int(np.count_nonzero(r.batch.class_of >= 0))
    assert len(signed) == 128 < rows  # stopped at the next check (every 64 pods)
    assert len(r.batch.classes) == rows and rows >= len(state.pending)
    grouped = classes.build_batch(state, config)
    assert (np.flatnonzero(grouped.class_of >= 0) == np.flatnonzero(r.batch.class_of >= 0)).all()


def _repairs(spec: GenerateSpec) -> tuple:  # type: ignore[type-arg]
    """A case whose repair puts many pods through the greedy filters."""
    state, config, greedy = _case(spec)
    batch = classes.build_batch(state, config)
    raw = greedy.snapshot.node_of
    rows = check.checked_rows(state, raw, batch.class_of, hint.fragile(state))
    return state, config, greedy, rows


SPREAD = GenerateSpec(nodes=30, seed=6, load=1.0)


def test_the_repair_stops_between_two_pods_it_checks_once_the_wall_clock_has_passed(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    state, config, greedy, rows = _repairs(SPREAD)
    assert rows > 10
    wall = _Wall(monkeypatch)
    monkeypatch.setattr(check, "TICK_EVERY", 2)
    checked = []
    real = check._check_one

    def check_one(*a, **k):  # type: ignore[no-untyped-def]
        checked.append(a[2])
        wall.passed = wall.passed or len(checked) == 5
        return real(*a, **k)

    monkeypatch.setattr(check, "_check_one", check_one)
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
    _greedy_answer(r, WALL)
    assert len(checked) == 6 < rows  # the pair under way ends, the next tick stops


def test_a_repair_round_whose_counted_work_passes_the_limit_is_not_started(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The round's checks are counted before it starts: past the limit by them, no pod is checked, the
    same on every run."""
    state, config, greedy, rows = _repairs(SPREAD)
    _Wall(monkeypatch)
    monkeypatch.setitem(clock.WORK_COST, "check", 1.0)
    checked = []
    monkeypatch.setattr(check, "_check_one", lambda *a, **k: checked.append(a[2]))
    for _ in range(2):
        r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5), greedy=greedy)
        _greedy_answer(r, COUNTED)
        assert checked == [] and r.ledger["repair"]["check"] == rows


def test_the_rules_states_stop_part_way_through_the_fixed_pods_once_the_wall_clock_has_passed(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    wall = _Wall(monkeypatch)
    monkeypatch.setattr(BatchModel, "CHECK_EVERY", 8)
    state, config, greedy = _case(GenerateSpec(nodes=20, seed=7, load=0.8))
    added = []

    class Counting(Snapshot):
        def add(self, pod: int, node: int) -> None:
            added.append(pod)
            wall.passed = wall.passed or len(added) == 10
            super().add(pod, node)

    monkeypatch.setattr(model, "Snapshot", Counting)
    restricted = []
    monkeypatch.setattr(BatchModel, "forbid", lambda self, c, mask: restricted.append(c))
    # (without preemption every running pod is fixed: one of the rules' states)
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=5, preemption=False), greedy=greedy)
    _greedy_answer(r, WALL)
    fixed = int(np.count_nonzero(r.batch.fixed))
    assert len(added) == 16 < fixed and restricted == []


def test_checking_the_time_inside_the_rules_changes_neither_the_model_nor_what_it_is_charged() -> None:
    """The checks only read: the model and the counted work are those of a build without a deadline."""
    state, config, _ = _case(GenerateSpec(nodes=25, seed=8, load=1.1))
    built = []
    for deadline in (None, 1e6):
        c = clock.Clock(60.0)
        with c.phase("model"):
            m = BatchModel(classes.build_batch(state, config), config, clock=c, deadline=deadline)
        built.append((str(m.cp.proto), c.ledger["model"]["term"], m.terms))
    assert built[0] == built[1]
    assert built[0][1] == clock.model_terms(m.cp.proto)


@pytest.mark.parametrize("after, net", [(0.2, 9.0), (3.0, 7.0), (8.0, 5.0)],
                         ids=["a machine that keeps up leaves the net at the deadline",
                              "a loaded machine moves it earlier by the re-check's wall time",
                              "never earlier than half the limit"])
def test_the_safety_net_keeps_the_wall_time_the_re_check_will_take_at_the_runs_cpu_share(
        monkeypatch, after: float, net: float) -> None:  # type: ignore[no-untyped-def]
    state, config, greedy = _case(GenerateSpec(nodes=12, seed=9, load=1.1))
    monkeypatch.setattr(clock.Clock, "wall_for", lambda self, cpu: after)
    seen = []
    monkeypatch.setattr(solve, "solve_tiers", lambda groups, raw, options, deadline, c: seen.append((c.limit, deadline)))
    solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=10), greedy=greedy, explain=False)
    assert seen == [(pytest.approx(net), pytest.approx(9.0))]  # the deterministic deadline stays


def test_a_runs_cpu_share_stretches_the_wall_time_of_the_work_after_the_solvers(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    now = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(clock.time, "perf_counter", lambda: now["wall"])
    monkeypatch.setattr(clock.time, "process_time", lambda: now["cpu"])
    c = clock.Clock(10.0)
    now.update(wall=0.3, cpu=0.03)
    assert c.wall_for(0.4) == 0.4  # too early to tell
    now.update(wall=4.0, cpu=0.4)  # a tenth of a core
    assert c.wall_for(0.4) == pytest.approx(4.0)
    now.update(wall=4.0, cpu=6.0)  # two workers: never less than the CPU time itself
    assert c.wall_for(0.4) == pytest.approx(0.4)
    now.update(wall=4.0, cpu=3.5)  # an idle machine's noise: a whole core
    assert c.wall_for(0.4) == pytest.approx(0.4)
    now.update(wall=4.0, cpu=2.0)
    assert c.wall_for(0.4) == pytest.approx(0.8)
    now.update(wall=100.0, cpu=0.1)
    assert c.wall_for(0.4) == pytest.approx(0.4 / clock.MIN_SHARE)
