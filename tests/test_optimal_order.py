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
from ortools.sat.python import cp_model

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal import order as order_module
from optisched.optimal.check import check_in_order, check_placement
from optisched.optimal.classes import build_batch
from optisched.optimal.decode import counts_of, variable_values
from optisched.optimal.eviction.batch import encode_eviction_rules
from optisched.optimal.hint import accepts
from optisched.optimal.model import BatchModel
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
    return _has_variables(model, node_of) and accepts(model, variable_values(model, node_of)) is not None


def _has_variables(model: BatchModel, node_of: np.ndarray) -> bool:
    """Every pod the placement puts on a node has its class's variable there (a node the model rules out
    for the class has none, and the placement's values would silently leave the pod out)."""
    arrivals, _ = counts_of(model.batch, node_of)
    return all(set(arrivals[c.index]) <= set(model.vars[c.index].arr_nodes.tolist()) for c in model.classes)


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
    assert _has_variables(model, g.snapshot.node_of)
    assert accepts(model, variable_values(model, g.snapshot.node_of), seconds=30.0) is not None


def _without_host_ports(objs: list[dict]) -> list[dict]:
    for o in objs:
        for c in o.get("spec", {}).get("containers", []) if o["kind"] == "Pod" else ():
            c.pop("ports", None)
    return objs


def _size(state, config, order: bool) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    model = BatchModel(build_batch(state, config), config, arrival_order=order)
    encode_eviction_rules(model)
    return len(model.cp.proto.variables), len(model.cp.proto.constraints)


def test_a_cluster_without_shared_ports_or_cross_selecting_spread_gets_no_larger_model() -> None:
    """A generated cluster (preemption, PDBs, spread and affinity within each workload) without host
    ports: the arrival order adds no variable or constraint, nor does NodePorts' encoding."""
    from optisched.profile import parse_config

    cluster = cluster_from_objects(_without_host_ports(generate(GenerateSpec(nodes=30, load=1.2, seed=5))))
    state = compile_cluster(cluster)
    config = default_config()
    no_ports = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                             "profiles": [{"schedulerName": "default-scheduler",
                                           "plugins": {"filter": {"disabled": [{"name": "NodePorts"}]}}}]})
    assert any(c.running for c in build_batch(state, config).classes)  # preemption is in the model
    assert _size(state, config, order=True) == _size(state, config, order=False) == _size(state, no_ports, order=False)


def test_the_neighbourhood_search_starts_from_kube_schedulers_own_placement(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Batch semantics refuses greedy's placement (the spread pod came first); the arrival order admits
    it, so the large-model path (candidate nodes, no presolve, node neighbourhoods) starts from it, not
    from a repaired copy."""
    from optisched.optimal import groups, solve

    nodes = [node(f"{z}{i}").zone(f"z{z}") for z in "ab" for i in range(6)]
    objs = [*nodes, pod("web-0").label(app="web").priority(10).set("spec.topologySpreadConstraints", SPREAD),
            *[_in_zone_a(pod(f"web-extra-{i}").label(app="web")) for i in range(3)]]
    state = state_of(*objs)
    config = default_config()
    greedy = GreedyScheduler(state, config, GreedyOptions(record=False)).run()
    assert check_placement(state, config, greedy.snapshot.node_of) != []  # batch semantics refuses it
    searches = []

    class Spy(groups.NodeSearch):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            searches.append(self)

    def no_repair(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the search started from a repaired copy")

    monkeypatch.setattr(groups, "NodeSearch", Spy)
    monkeypatch.setattr(groups, "repair_hint", no_repair)
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
        objs += _workload(draw, g, prio, zones, ["podAffinity", None, None, None])
    return objs


def _workload(draw, g: int, prio: int, zones: int, kinds: list) -> list[dict]:  # type: ignore[no-untyped-def]
    """1-3 pods labelled web or db; half spread by zone over web or db, a required (anti-)affinity of
    ``kinds`` selecting web or db, a third bound to one zone."""
    apps = st.sampled_from(["web", "db"])
    app = draw(apps)
    spec: dict = {"priority": prio}
    if draw(st.booleans()):
        spec["topologySpreadConstraints"] = [{
            "maxSkew": draw(st.integers(1, 2)), "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": draw(apps)}}}]
    kind = draw(st.sampled_from(kinds))
    if kind:
        spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": draw(apps)}}}]}}
    if draw(st.integers(0, 2)) == 0:
        spec["nodeSelector"] = {ZONE: f"z{draw(st.integers(0, zones - 1))}"}
    cpu = draw(st.sampled_from(["500m", "1", "2"]))
    out = []
    for r in range(draw(st.integers(1, 3))):
        p = pod(f"g{g}-{r}").label(app=app).req(cpu=cpu)
        for k, v in spec.items():
            p.set(f"spec.{k}", v)
        out.append(p)
    return out


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


def _with_port(p, ip: str):  # type: ignore[no-untyped-def]
    return p.set("spec.containers", [{"name": "c", "image": "x", "resources": p["spec"]["containers"][0].get("resources", {}),
                                      "ports": [{"containerPort": 8080, "hostPort": 8080, "hostIP": ip}]}])


@st.composite
def sharing_ports(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    """1-3 nodes full of running pods of low priorities, some holding host port 8080 (two on one node
    at times, as generated clusters have them), and pending pods of several priorities, some with the
    port: preemptions free ports as kube-scheduler's set does."""
    nodes = draw(st.integers(1, 3))
    objs: list[dict] = [node(f"n{i}", cpu="3") for i in range(nodes)]
    ips = st.sampled_from(["0.0.0.0", "0.0.0.0", "10.0.0.1"])
    for r in range(draw(st.integers(1, 6))):
        p = pod(f"run-{r}").req(cpu=draw(st.sampled_from(["0", "1"]))).priority(draw(st.sampled_from([0, 5, 100])))
        objs.append((_with_port(p, draw(ips)) if draw(st.booleans()) else p).on(f"n{draw(st.integers(0, nodes - 1))}"))
    for g in range(draw(st.integers(1, 4))):
        prio, cpu, port = draw(st.sampled_from([10, 20, 30])), draw(st.sampled_from(["0", "1"])), draw(st.booleans())
        ip = draw(ips)
        for r in range(draw(st.integers(1, 2))):
            p = pod(f"p{g}-{r}").req(cpu=cpu).priority(prio)
            objs.append(_with_port(p, ip) if port else p)
    return objs


def _arrivals_sharing_a_port(state, node_of: np.ndarray) -> bool:  # type: ignore[no-untyped-def]
    """Two pods that arrive on one node hold conflicting host ports (they took it in turn, each after a
    holder left: not encoded)."""
    from optisched.plugins.node_ports import host_ports

    arrived = np.flatnonzero((node_of >= 0) & (node_of != state.pod_node)).tolist()
    for n in set(node_of[arrived].tolist()):
        keys = [k for p in arrived if node_of[p] == n for k in host_ports(state.pods[p])]
        if len(keys) > 1:
            return True
    return False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=sharing_ports(), run=st.integers(0, 1_000))
def test_kube_schedulers_placement_with_shared_host_ports_is_a_solution_of_the_model(objs: list[dict], run: int) -> None:
    """Whatever the tie-breaks and the order within each priority, greedy mode's final placement is a
    solution of the model (every pod on a node where its class has a variable) and passes the re-check,
    unless two pods arriving on one node took one port in turn: that stays admitted only as greedy
    mode's own run."""
    state = state_of(*objs)
    config = default_config()
    node_of = GreedyScheduler(state, config, GreedyOptions(record=False, tie_break=TieBreak.RANDOM, seed=run,
                                                           queue_seed=run)).run().snapshot.node_of
    reachable = not _arrivals_sharing_a_port(state, node_of)
    assert _admits(state, node_of, order=True) == reachable
    assert (check_placement(state, config, node_of) == []) == reachable


WEB = {"app": "web"}


def _victim(preemptor_priority: int, *more: dict) -> list[dict]:
    """s (priority 10) spreads web pods by zone; r (web, priority -10) runs in zone b, where only
    evicting it makes room for t (``preemptor_priority``, zone b only)."""
    return [node("a", cpu="4").zone("za"), node("b", cpu="2").zone("zb"),
            pod("f").label(**WEB).priority(100).req(cpu="1").on("a"),
            pod("r").label(**WEB).priority(-10).req(cpu="2").on("b"),
            pod("s").label(**WEB).priority(10).req(cpu="1").set("spec.topologySpreadConstraints", SPREAD),
            pod("t").priority(preemptor_priority).req(cpu="2").set("spec.nodeSelector", {ZONE: "zb"}), *more]


def _victim_and_db_spread() -> list[dict]:
    """As :func:`_victim` with t at priority 0, r also labelled role=db, and u (priority 10, role=db,
    spread by zone over role=db) on a node of its own in zone b."""
    objs = _victim(0, node("b2", cpu="2").zone("zb"),
                   pod("u").label(role="db").priority(10).req(cpu="1").set(
                       "spec.topologySpreadConstraints", [{**SPREAD[0], "labelSelector": {"matchLabels": {"role": "db"}}}]))
    objs[3]["metadata"]["labels"]["role"] = "db"
    return objs


ANTI_WEB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": ZONE, "labelSelector": {"matchLabels": WEB}}]}}


def _victim_and_anti(on_its_node: bool) -> list[dict]:
    """As :func:`_victim` with t at priority 0, and x (priority 10) whose required anti-affinity selects
    web pods: x is t itself (it evicts r on arrival), or a pod of its own on another node of zone b."""
    if on_its_node:
        objs = _victim(0)
        objs[5].set("spec.affinity", ANTI_WEB)
        return objs
    return _victim(0, node("b2", cpu="2").zone("zb"), pod("x").priority(10).req(cpu="1").set("spec.affinity", ANTI_WEB))


VICTIM_CASES = [
    ("a spread pod that came before the preemptor counted the victim it later evicted",
     _victim(0), [0, -1, 0, 1], True),
    ("the preemptor of the spread pod's own priority may come after it",
     _victim(10), [0, -1, 0, 1], True),
    ("a preemptor of higher priority evicted the victim before the spread pod came",
     _victim(20), [0, -1, 0, 1], False),
    ("two pods before the preemptor both counted the victim: one needs it there, the other gone",
     _victim_and_db_spread(), [0, -1, 0, 1, 2], False),
    ("a preemptor whose anti-affinity selects the victim never sees it, the pods before it do",
     _victim_and_anti(True), [0, -1, 0, 1], True),
    ("a pod before the preemptor whose anti-affinity selects the victim cannot share its zone",
     _victim_and_anti(False), [0, -1, 0, 1, 2], False),
]


@pytest.mark.parametrize("objs,placement,reachable", [c[1:] for c in VICTIM_CASES], ids=[c[0] for c in VICTIM_CASES])
def test_a_victim_stays_until_the_first_higher_priority_pod_lands_on_its_node(objs, placement, reachable) -> None:  # type: ignore[no-untyped-def]
    """The model counts a preemption victim for the pods that came before the first pod of higher
    priority landed on its node, and the re-check evicts it there: exactly the placements some order
    reaches so."""
    state = state_of(*objs)
    config, node_of = default_config(), np.array(placement)
    assert check_placement(state, config, node_of) != []  # batch semantics refuses each
    assert not _admits(state, node_of, order=False)
    model = _model(state, order=True)
    full = accepts(model, variable_values(model, node_of))
    assert (full is not None) == reachable
    if full is not None:
        value = lambda v: full[v.Index()]
        blocks = [np.flatnonzero(model.batch.class_of == k) for k in model.order.blocks(value)]
        evicted = model.order.evicted(value)
        assert check_in_order(state, config, node_of, blocks, model.batch.class_of, evicted) == []
        assert check_in_order(state, config, node_of, blocks, model.batch.class_of) != []  # r counted


def test_kube_schedulers_run_with_a_victim_an_earlier_pods_spread_counted_is_a_solution_of_the_model() -> None:
    """s arrives while r still runs in zone b, so it joins zone a beside f; t evicts r afterwards. At the
    end zone a holds two web pods and b none: batch semantics refuses s, the arrival order admits the
    run as it is (no literal for greedy mode's own run), and the re-check evicts r when t arrives."""
    state = state_of(*_victim(0))
    config = default_config()
    node_of = GreedyScheduler(state, config, GreedyOptions(record=False)).run().snapshot.node_of
    assert node_of.tolist() == [0, -1, 0, 1]  # r evicted for t, s in zone a
    assert [v.pod for v in check_placement(state, config, node_of)] == ["default/s"]
    assert _admits(state, node_of, order=True)


def test_past_the_victim_cap_victims_leave_first_and_the_certificate_says_so(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(order_module, "MAX_VICTIM_TERMS", 1)  # the case needs 2: s sees r on b
    state = state_of(*_victim(0))
    model = _model(state, order=True)
    assert model.order.victims.off and model.order.note.startswith("preemption victims leave before any pod arrives")
    assert not _admits(state, np.array([0, -1, 0, 1]), order=True)
    from optisched.optimal.solve import OptimalOptions, solve_optimal

    r = solve_optimal(state, default_config(), OptimalOptions(time_limit=2))
    assert any(n.startswith("preemption victims leave before any pod arrives: 2 victim terms") for n in r.certificate.notes)


def test_a_pod_that_landed_beside_a_victim_before_its_preemptor_is_admitted_only_as_kube_schedulers_own_run() -> None:
    """s (priority 10) needs a db pod in its zone: r (db, priority -10) runs on b, and s lands beside
    it. t (priority 0, zone b only) then evicts r. At the end no db pod is left in zone b. The order
    times a victim's departure at the first pod of higher priority that lands on its node, s itself
    here, so s never sees r (docs/optimal_trust.md: node-local rules would have to count r at s's
    arrival); only the literal for greedy mode's own run admits this."""
    from optisched.optimal.clock import Clock
    from optisched.optimal.hint import accept_reached

    needs_db = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    objs = [node("a", cpu="4").zone("za"), node("b", cpu="3").zone("zb"),
            pod("r").label(app="db").priority(-10).req(cpu="1").on("b"),
            pod("s").priority(10).req(cpu="1").set("spec.affinity", needs_db),
            pod("t").priority(0).req(cpu="2").set("spec.nodeSelector", {ZONE: "zb"})]
    state = state_of(*objs)
    config = default_config()
    node_of = GreedyScheduler(state, config, GreedyOptions(record=False)).run().snapshot.node_of
    assert node_of.tolist() == [-1, 1, 1]  # s beside r, then r evicted for t
    assert [v.pod for v in check_placement(state, config, node_of)] == ["default/s"]
    assert not _admits(state, node_of, order=True)
    model = _model(state, order=True)
    assert accept_reached(model, variable_values(model, node_of), Clock.wall(), 5.0) is not None


def test_a_pod_retried_after_lower_priority_ones_is_admitted_only_as_kube_schedulers_own_run() -> None:
    """h (priority 20) needs a web pod in its zone and fails first; w (priority 10, web, spread by zone)
    lands, h is retried and joins it, then v (priority 10, web) follows h. w's zone ends with two web pods
    and the other with none. PrioritySort puts h before w, where it fails, so no arrival order reaches
    this; only the literal for greedy mode's own run admits it."""
    from optisched.optimal.clock import Clock
    from optisched.optimal.hint import accept_reached

    needs = lambda app: {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": app}}}]}}
    objs = [*_zones(), pod("h").label(app="db").priority(20).set("spec.affinity", needs("web")),
            pod("w").label(app="web").priority(10).set("spec.topologySpreadConstraints", SPREAD),
            pod("v").label(app="web").priority(10).set("spec.affinity", needs("db"))]
    state = state_of(*objs)
    config = default_config()
    result = GreedyScheduler(state, config, GreedyOptions()).run()
    node_of = result.snapshot.node_of
    tries = [state.pods[r.pod].metadata.name for r in result.cycles]
    assert tries[:2] == ["h", "w"] and tries.count("h") == 2  # h failed, then came back after w
    assert len(set(node_of.tolist())) == 1  # all three in one zone
    assert [v.pod for v in check_placement(state, config, node_of)] == ["default/w"]
    assert not _admits(state, node_of, order=True)
    model = _model(state, order=True)
    assert accept_reached(model, variable_values(model, node_of), Clock.wall(), 5.0) is not None


@st.composite
def preempting(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    """2-3 zones of 1-2 small nodes; running web/db pods of low priorities to preempt; 2-4 workloads,
    priorities repeated, whose spread constraints and required (anti-)affinities select web or db."""
    zones = draw(st.integers(2, 3))
    objs: list[dict] = [node(f"n{z}{i}", cpu=draw(st.sampled_from(["2", "3"]))).zone(f"z{z}")
                        for z in range(zones) for i in range(draw(st.integers(1, 2)))]
    names = [o["metadata"]["name"] for o in objs]
    apps = st.sampled_from(["web", "db"])
    for r in range(draw(st.integers(1, 4))):
        objs.append(pod(f"run-{r}").label(app=draw(apps)).req(cpu=draw(st.sampled_from(["1", "2"])))
                    .priority(draw(st.sampled_from([-10, 0, 5]))).on(draw(st.sampled_from(names))))
    for g in range(draw(st.integers(2, 4))):
        objs += _workload(draw, g, draw(st.sampled_from([0, 10, 10, 20])), zones,
                          ["podAffinity", "podAntiAffinity", None, None])
    return objs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=preempting(), weights=st.lists(st.integers(-3, 5), min_size=40, max_size=40))
def test_every_placement_the_model_admits_by_an_order_passes_the_re_check_with_its_victims_leaving_on_time(
        objs: list[dict], weights: list[int]) -> None:
    """Soundness of the arrival order with preemption victims: any solution of the model under the order
    (a random objective over every variable picks one), decoded, passes the independent re-check — the order's classes
    block by block, each victim leaving just before the block the model times it for, every other pod
    against the final cluster."""
    from optisched.optimal.check import check_answer
    from optisched.optimal.decode import decode

    state = state_of(*objs)
    config = default_config()
    model = _model(state, order=True)
    if not model.order.enabled:
        return
    model.cp.add(model.order.ordered == 1)
    every = [model.cp.get_int_var_from_proto_index(i) for i in range(len(model.cp.proto.variables))]
    model.cp.maximize(sum(weights[i % len(weights)] * v for i, v in enumerate(every)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 5.0
    solver.parameters.num_workers = 1
    assert solver.solve(model.cp) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    node_of = state.pod_node.copy()
    node_of[model.batch.class_of >= 0] = -1
    rows = model.batch.class_of >= 0
    node_of[rows] = decode(model.batch, *model.counts(solver.value))[rows]
    order = model.order.blocks(solver.value)
    blocks = [np.flatnonzero(model.batch.class_of == k) for k in order]
    never = np.full(len(node_of), -2)  # not kube-scheduler's run: every pod is checked
    assert check_answer(state, config, node_of, never, model.batch.class_of, None, blocks,
                        model.order.evicted(solver.value)) == []
