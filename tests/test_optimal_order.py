"""The arrival order: optimal mode's model admits the placements kube-scheduler reaches pod by pod.

Batch semantics checks every pod against the final cluster; kube-scheduler checks it when it arrives.
The cases below are placements kube-scheduler reaches (a pod's spread or affinity counted only the pods
that came before it) that batch semantics alone (``arrival_order=False``, the model before the order
existed) refuses, and placements no queue order reaches, which both refuse.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal import order as order_module
from optisched.optimal.check import check_in_order, check_placement
from optisched.optimal.classes import build_batch
from optisched.optimal.decode import variable_values
from optisched.optimal.hint import accepts
from optisched.optimal.model import BatchModel
from optisched.preemption.batch import encode_eviction_rules
from optisched.profile import default_config

ZONE = "topology.kubernetes.io/zone"
SPREAD = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]
AFFINE = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}]}}


def _zones() -> list[dict]:
    return [node("a").zone("za"), node("b").zone("zb")]


def _in_zone_a(p):  # type: ignore[no-untyped-def]
    return p.set("spec.nodeSelector", {ZONE: "za"})


def _spread(carrier_priority: int, others_priority: int) -> list[dict]:
    """A web pod spread by zone, and two web pods without the constraint that only zone a takes."""
    return [*_zones(), pod("web-0").label(app="web").priority(carrier_priority).set("spec.topologySpreadConstraints", SPREAD),
            _in_zone_a(pod("web-extra-1").label(app="web").priority(others_priority)),
            _in_zone_a(pod("web-extra-2").label(app="web").priority(others_priority))]


def _affinity(first_priority: int, other_priority: int) -> list[dict]:
    """A db pod with required affinity to db pods (itself included), and a db pod for zone b only."""
    return [*_zones(), pod("db-0").label(app="db").priority(first_priority).set("spec.affinity", AFFINE),
            pod("db-1").label(app="db").priority(other_priority).set("spec.nodeSelector", {ZONE: "zb"})]


def _model(state, order: bool) -> BatchModel:  # type: ignore[no-untyped-def]
    config = default_config()
    model = BatchModel(build_batch(state, config), config, arrival_order=order)
    encode_eviction_rules(model)
    return model


def _admits(state, node_of: np.ndarray, order: bool) -> bool:  # type: ignore[no-untyped-def]
    model = _model(state, order)
    return accepts(model, variable_values(model, node_of)) is not None


CASES = [
    ("a spread pod that came first keeps its zone when pods without the constraint fill it after",
     _spread(10, 0), [0, 0, 0], True),
    ("within one priority a spread pod may come before the pods it counts",
     _spread(0, 0), [0, 0, 0], True),
    ("a spread pod that came after those pods cannot be in the zone they skewed",
     _spread(0, 10), [0, 0, 0], False),
    ("the first pod of a self-affine group goes anywhere when the group's other pods come after",
     _affinity(10, 0), [0, 1], True),
    ("an affine pod that came after a matching pod must join its zone",
     _affinity(0, 10), [0, 1], False),
]


@pytest.mark.parametrize("objs,placement,reachable", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_model_admits_exactly_the_placements_some_arrival_order_reaches(objs, placement, reachable) -> None:  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    node_of = np.array(placement)
    assert check_placement(state, default_config(), node_of) != []  # batch semantics refuses each
    assert not _admits(state, node_of, order=False)
    assert _admits(state, node_of, order=True) == reachable


@pytest.mark.parametrize("objs", [_spread(10, 0), _spread(0, 0), _affinity(10, 0), _affinity(0, 0)],
                         ids=["spread, the carrier first", "spread, one priority",
                              "affinity, the first pod first", "affinity, one priority"])
def test_every_tie_break_and_queue_order_ends_where_the_model_admits_and_the_order_check_passes(objs) -> None:  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    config = default_config()
    ends = set()
    for seed in range(6):
        g = GreedyScheduler(state, config, GreedyOptions(record=False, tie_break=TieBreak.RANDOM, seed=seed,
                                                         queue_seed=seed)).run()
        node_of = g.snapshot.node_of
        ends.add(tuple(node_of.tolist()))
        model = _model(state, order=True)
        full = accepts(model, variable_values(model, node_of))
        assert full is not None
        order = model.order.blocks(lambda v, full=full: full[v.Index()])
        if order is not None:
            blocks = [np.flatnonzero(model.batch.class_of == k) for k in order]
            assert check_in_order(state, config, node_of, blocks, model.batch.class_of) == []
    assert len(ends) > 1  # the tie-breaks reached more than one placement


def test_past_the_cap_the_model_keeps_batch_semantics_and_says_so(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(order_module, "MAX_ORDER_CLASSES", 1)
    state = state_of(*_spread(10, 0))
    model = _model(state, order=True)
    assert not model.order.enabled and "arrival order not encoded" in model.order.note
    assert not _admits(state, np.array([0, 0, 0]), order=True)
    from optisched.optimal.solve import OptimalOptions, solve_optimal

    r = solve_optimal(state, default_config(), OptimalOptions(time_limit=2))
    assert any(n.startswith("arrival order not encoded: 2 interacting classes") for n in r.certificate.notes)


def test_the_order_check_refuses_a_block_checked_before_the_pods_it_needs() -> None:
    state = state_of(*_affinity(10, 0))
    config, node_of = default_config(), np.array([1, 1])
    batch = build_batch(state, config)
    first, other = (np.flatnonzero(batch.class_of == k) for k in (batch.class_of[0], batch.class_of[1]))
    assert check_in_order(state, config, node_of, [other, first], batch.class_of) == []
    # db-0 checked first, with db-1 in place already on another zone's node: its affinity finds no db pod there
    assert check_in_order(state, config, np.array([0, 1]), [other, first], batch.class_of) != []


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(6, 20), load=st.floats(0.6, 1.4), pending=st.floats(0.2, 0.9),
       gpu=st.sampled_from([0.0, 0.1, 0.3]), zones=st.integers(1, 3), seed=st.integers(0, 10_000),
       run=st.integers(0, 1_000))
def test_kube_schedulers_placement_under_any_tie_break_and_queue_order_is_a_solution_of_the_model(
        nodes: int, load: float, pending: float, gpu: float, zones: int, seed: int, run: int) -> None:
    """Generated clusters (priorities and preemption, PDBs, spread, affinity, host ports, GPUs, bound pods):
    greedy mode with a seeded tie-break among equal scores and a seeded order within each priority ends
    in a placement the batch model takes as a complete solution, without the literal that admits
    greedy mode's own default run."""
    cluster = cluster_from_objects(generate(GenerateSpec(nodes=nodes, load=load, pending_fraction=pending,
                                                         gpu_fraction=gpu, zones=zones, seed=seed)))
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    g = GreedyScheduler(state, config, GreedyOptions(record=False, tie_break=TieBreak.RANDOM, seed=run,
                                                     queue_seed=run)).run()
    model = BatchModel(build_batch(state, config), config, arrival_order=True)
    encode_eviction_rules(model)
    assert accepts(model, variable_values(model, g.snapshot.node_of), seconds=30.0) is not None


def test_the_neighbourhood_search_starts_from_kube_schedulers_own_placement(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Batch semantics refuses greedy's placement (the spread pod came first); the arrival order admits
    it, so the large-model path (candidate nodes, no presolve, node neighbourhoods) starts from it, not
    from a repaired copy."""
    from optisched.optimal import solve

    nodes = [node(f"{z}{i}").zone(f"z{z}") for z in "ab" for i in range(6)]
    objs = [*nodes, pod("web-0").label(app="web").priority(10).set("spec.topologySpreadConstraints", SPREAD),
            *[_in_zone_a(pod(f"web-extra-{i}").label(app="web")) for i in range(3)]]
    state = state_of(*objs)
    config = default_config()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    assert check_placement(state, config, greedy.snapshot.node_of) != []  # batch semantics refuses it
    searches = []

    class Spy(solve.NodeSearch):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            searches.append(self)

    def no_repair(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the search started from a repaired copy")

    monkeypatch.setattr(solve, "NodeSearch", Spy)
    monkeypatch.setattr(solve, "repair_hint", no_repair)
    r = solve.solve_optimal(state, config, solve.OptimalOptions(time_limit=3, max_variables=4, presolve_limit=4),
                            greedy=greedy)
    assert searches  # the neighbourhood path was taken
    assert r.violations == []
    assert any("the solver's start" in n for n in r.certificate.notes)
    mine, theirs = solve.placed_per_level(r.batch, r.node_of), solve.placed_per_level(r.batch, greedy.snapshot.node_of)
    assert [mine[lv] for lv in r.batch.levels] >= [theirs[lv] for lv in r.batch.levels]


@st.composite
def interacting(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    """2-3 zones of 1-2 nodes; 2-4 workloads of distinct priorities whose spread constraints and required
    affinities select each other's labels (web or db), some bound to one zone by a node selector."""
    zones = draw(st.integers(2, 3))
    objs: list[dict] = [node(f"n{z}{i}", cpu="4").zone(f"z{z}") for z in range(zones) for i in range(draw(st.integers(1, 2)))]
    groups = draw(st.integers(2, 4))
    priorities = draw(st.permutations([0, 10, 20, 30]))[:groups]
    for g, prio in enumerate(priorities):
        app = draw(st.sampled_from(["web", "db"]))
        spec: dict = {"priority": prio}
        if draw(st.booleans()):
            spec["topologySpreadConstraints"] = [{
                "maxSkew": draw(st.integers(1, 2)), "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}}]
        if draw(st.integers(0, 3)) == 0:
            spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["web", "db"]))}}}]}}
        if draw(st.integers(0, 2)) == 0:
            spec["nodeSelector"] = {ZONE: f"z{draw(st.integers(0, zones - 1))}"}
        cpu = draw(st.sampled_from(["500m", "1", "2"]))
        for r in range(draw(st.integers(1, 3))):
            p = pod(f"g{g}-{r}").label(app=app).req(cpu=cpu)
            for k, v in spec.items():
                p.set(f"spec.{k}", v)
            objs.append(p)
    return objs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=interacting(), run=st.integers(0, 1_000))
def test_where_priorities_order_the_workloads_every_tie_break_ends_in_a_solution_of_the_model(
        objs: list[dict], run: int) -> None:
    """Workloads of distinct priorities arrive one after another (no retries): whatever node each tie
    among equal scores picks, the final placement is a solution of the model, and its order check passes."""
    state = state_of(*objs)
    config = default_config()
    g = GreedyScheduler(state, config, GreedyOptions(record=False, tie_break=TieBreak.RANDOM, seed=run,
                                                     requeue=False)).run()
    model = _model(state, order=True)
    full = accepts(model, variable_values(model, g.snapshot.node_of))
    assert full is not None
    order = model.order.blocks(lambda v: full[v.Index()])
    if order is not None:
        blocks = [np.flatnonzero(model.batch.class_of == k) for k in order]
        assert check_in_order(state, config, g.snapshot.node_of, blocks, model.batch.class_of) == []
