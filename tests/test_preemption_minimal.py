"""Optimal mode's single-pod preemption: provably minimal victims over every node at once."""
from __future__ import annotations

from pathlib import Path

import pytest
from builders import node, pod, state_of
from helpers.random_cluster import clusters
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.model.loader import load_cluster
from optisched.model.state import compile_cluster
from optisched.optimal.eviction.minimal import SHIFT, minimal_victims
from optisched.preemption.default_preemption import NEVER
from optisched.profile import default_config

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
ZONE = "topology.kubernetes.io/zone"
CFG = default_config()


def _run(objs, key="default/p", **kw):
    return minimal_victims(state_of(*objs), CFG, key, time_limit=10, **kw)


def _names(victims):
    return sorted(v.pod.split("/")[1] for v in victims)


def test_docs_example_low_priority_pods_on_one_node():
    """The bundled example: kube-scheduler and the optimum agree on n1's two low-priority pods."""
    cl = load_cluster([str(EXAMPLES / "preemption.yaml")])
    m = minimal_victims(compile_cluster(cl), cl.config or CFG, "default/preemptor")
    assert m.status == "OPTIMAL" and m.node == "n1"
    assert _names(m.victims) == ["low-a", "low-b"]
    assert m.key == m.greedy_key == (0, 10, 2 * (10 + SHIFT), 2)
    assert all(v.priority < m.priority for v in m.victims)


def test_fewer_victims_than_kube_reprieve():
    """Reprieve keeps the most important victim first (the 2-cpu pod started earliest), which costs
    three 1-cpu victims; the optimum evicts the 2-cpu pod and one 1-cpu pod."""
    objs = [node("n1", cpu="5"),
            pod("big").req(cpu="2").priority(1).on("n1").set("status.startTime", "2026-01-01T00:00:00Z"),
            *[pod(f"s{i}").req(cpu="1").priority(1).on("n1").set("status.startTime", f"2026-01-01T00:0{i + 1}:00Z")
              for i in range(3)],
            pod("p").req(cpu="3").priority(10)]
    m = _run(objs)
    assert m.greedy_node == "n1" and len(m.greedy_victims) == 3 and _names(m.greedy_victims) == ["s0", "s1", "s2"]
    assert m.status == "OPTIMAL" and m.node == "n1" and len(m.victims) == 2
    assert "big" in _names(m.victims)
    assert m.key < m.greedy_key and m.key[2] == 2 * (1 + SHIFT)


def test_lowest_highest_priority_across_nodes():
    """Over all nodes: evicting two priority-1 pods beats one priority-5 pod (tier 2 before tier 4)."""
    objs = [node("n1", cpu="2"), node("n2", cpu="2"),
            pod("mid").req(cpu="2").priority(5).on("n1"),
            pod("l1").req(cpu="1").priority(1).on("n2"), pod("l2").req(cpu="1").priority(1).on("n2"),
            pod("p").req(cpu="2").priority(10)]
    m = _run(objs)
    assert m.node == "n2" and _names(m.victims) == ["l1", "l2"] and m.key[1] == 1


def test_pdb_violations_come_first():
    """A victim whose budget allows no disruption is avoided even at a higher priority."""
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard", "namespace": "default"},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}}
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), pdb,
            pod("cheap").req(cpu="2").priority(1).label(app="guarded").on("n1"),
            pod("dear").req(cpu="2").priority(5).on("n2"),
            pod("p").req(cpu="2").priority(10)]
    m = _run(objs)
    assert m.node == "n2" and _names(m.victims) == ["dear"] and m.key[0] == 0
    assert m.greedy_node == "n2" and m.key == m.greedy_key
    assert m.tiers[1].name == "pdbViolations" and m.tiers[1].fidelity == "EXACT"


def test_pdb_violation_counted_when_unavoidable():
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard", "namespace": "default"},
           "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}}
    objs = [node("n1", cpu="2"), pdb,
            pod("cheap").req(cpu="2").priority(1).label(app="guarded").on("n1"),
            pod("p").req(cpu="2").priority(10)]
    m = _run(objs)
    assert m.node == "n1" and m.key[0] == 1 and m.victims[0].pdbs == ("default/guard",)


def test_never_preempts_equal_or_higher_priority():
    objs = [node("n1", cpu="2"), pod("same").req(cpu="2").priority(10).on("n1"), pod("p").req(cpu="2").priority(10)]
    m = _run(objs)
    assert m.status == "INFEASIBLE" and m.node is None and not m.victims


def test_preemption_policy_never():
    objs = [node("n1", cpu="2"), pod("low").req(cpu="2").priority(1).on("n1"),
            pod("p").req(cpu="2").priority(10).set("spec.preemptionPolicy", "Never")]
    m = _run(objs)
    assert m.status == "INFEASIBLE" and m.message == NEVER and not m.victims


def test_fits_without_preemption():
    objs = [node("n1", cpu="2"), node("n2", cpu="2"), pod("low").req(cpu="2").priority(1).on("n1"),
            pod("p").req(cpu="1").priority(10)]
    m = _run(objs)
    assert m.fits_without_preemption and m.node == "n2" and m.key == (0, -SHIFT, 0, 0)


def _anti_affinity_cluster() -> list[dict]:
    """n1 is empty but shares zone a with n2, where a low-priority ``db`` pod runs beside a high-priority
    one (the pod cannot fit on n2 even without ``db``); the preemptor's required anti-affinity (zone)
    excludes zone a; zone b is full of high-priority pods."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    return [node("n1", cpu="2").zone("a"), node("n2", cpu="3").zone("a"), node("n3", cpu="2").zone("b"),
            pod("db").req(cpu="1").priority(1).label(app="db").on("n2"),
            pod("vip2").req(cpu="2").priority(100).on("n2"),
            pod("vip").req(cpu="2").priority(100).on("n3"),
            pod("p").req(cpu="2").priority(10).set("spec.affinity", anti)]


def test_cross_node_preemption_for_anti_affinity():
    """kube-scheduler cannot help (its dry run only removes pods on the candidate node); with
    ``cross_node`` the optimum evicts ``db`` on n2 and places the pod on n1."""
    objs = _anti_affinity_cluster()
    plain = _run(objs)
    assert plain.status == "INFEASIBLE" and plain.greedy_node is None
    cross = _run(objs, cross_node=True)
    assert cross.status == "OPTIMAL" and cross.node == "n1"
    assert [(v.pod, v.node) for v in cross.victims] == [("default/db", "n2")]
    assert not cross.violations


def test_cross_node_preemption_for_spread():
    """Spread over zones with maxSkew 1: zone a holds two low-priority matching pods on a node tainted
    against the pod, zone b one, zone b's only node is full of high-priority pods. Landing on a1 needs one
    of the matching pods on a2 gone: only cross-node preemption finds it."""
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    objs = [node("a1", cpu="4").zone("a"), node("a2", cpu="4").zone("a").taint("batch"), node("b1", cpu="2").zone("b"),
            pod("w1").req(cpu="1").priority(1).label(app="web").on("a2"),
            pod("w2").req(cpu="1").priority(1).label(app="web").on("a2"),
            pod("w3").req(cpu="1").priority(100).label(app="web").on("b1"),
            pod("vip").req(cpu="1").priority(100).on("b1"),
            pod("p").req(cpu="1").priority(10).label(app="web").set("spec.topologySpreadConstraints", spread)]
    assert _run(objs).status == "INFEASIBLE"
    cross = _run(objs, cross_node=True)
    assert cross.status == "OPTIMAL" and cross.node == "a1" and len(cross.victims) == 1
    assert cross.victims[0].node == "a2" and not cross.violations


# ---------------------------------------------------------------------------------------- properties
@st.composite
def _preemption_clusters(draw):  # type: ignore[no-untyped-def]
    objs = draw(clusters(max_pending=1, max_nodes=4, max_bound=6))
    for o in objs:
        if o["kind"] == "Pod":
            pending = "nodeName" not in o["spec"]
            o["spec"]["priority"] = draw(st.sampled_from([10, 20])) if pending else draw(st.sampled_from([0, 5, 10]))
    if draw(st.booleans()):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "pdb", "namespace": "default"},
                     "spec": {"maxUnavailable": draw(st.integers(0, 1)), "selector": {"matchLabels": {"app": "a"}}}})
    return objs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_preemption_clusters(), st.booleans())
def test_minimal_victims_properties(objs, cross_node):
    """No victim of equal or higher priority; the answer passes the greedy filters with the victims
    gone; never a worse key than kube-scheduler's for the same pod (so never more priority weight
    evicted at the same PDB violations and highest priority); found whenever kube finds one (proven
    minimal unless kube's answer lies outside the model)."""
    state = state_of(*objs)
    key = state.pods[state.pending[0]].key
    m = minimal_victims(state, CFG, key, time_limit=10, cross_node=cross_node)
    assert not m.violations
    assert all(v.priority < m.priority for v in m.victims)
    if m.greedy_key is not None:
        assert m.node is not None and m.status == ("FEASIBLE" if m.greedy_violations else "OPTIMAL")
        assert m.key <= m.greedy_key
        if m.key[:2] == m.greedy_key[:2]:
            assert m.key[2] <= m.greedy_key[2]
    if not cross_node and m.node is not None and m.victims:
        assert {v.node for v in m.victims} == {m.node}


PORT_8080 = [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]


def _with_port(p):  # type: ignore[no-untyped-def]
    p["spec"]["containers"][0]["ports"] = PORT_8080
    return p


@pytest.mark.parametrize("neighbour_port", [True, False],
                         ids=["a priority-10 neighbour still holds the port", "only the victim holds the port"])
def test_a_victim_freeing_a_shared_host_port_is_inside_the_model(neighbour_port):
    """Two running pods share host port 8080 on n1 (kubelet would not admit that; the generated
    clusters do). kube-scheduler's dry run frees the port when the priority-0 pod goes, as a set,
    although the priority-10 neighbour keeps it; the model and the checker keep ports as that set too
    (``NodePorts``), so kube-scheduler's answer passes the re-check and is proven minimal, as it is
    without the shared port."""
    neighbour = pod("nb").req(cpu="1").priority(10).on("n1")
    objs = [node("n1", cpu="2"), _with_port(pod("low").req(cpu="1").priority(0).on("n1")),
            _with_port(neighbour) if neighbour_port else neighbour, _with_port(pod("p").req(cpu="1").priority(10))]
    for cross_node in (False, True):
        m = _run(objs, cross_node=cross_node)
        assert m.greedy_node == "n1" and _names(m.greedy_victims) == ["low"]
        assert m.node == "n1" and _names(m.victims) == ["low"] and m.key == m.greedy_key and not m.violations
        assert m.status == "OPTIMAL" and not m.greedy_violations


@pytest.mark.parametrize("cross_node", [False, True])
def test_tiers_certify_the_answer(cross_node):
    objs = _anti_affinity_cluster()
    m = _run(objs, cross_node=cross_node)
    names = [t.name for t in m.tiers]
    assert names[0] == "placed"
    if m.node is not None:
        assert names == ["placed", "pdbViolations", "highestVictimPriority", "victimPrioritySum", "victims"]
        assert all(t.gap == 0 for t in m.tiers)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_preemption_clusters())
def test_growing_the_model_by_node_bounds_loses_nothing(objs):
    """Starting from the single most promising node and growing only while a node left out could hold
    a better answer gives the same key as the model over every node at once: the bounds are valid."""
    state = state_of(*objs)
    key = state.pods[state.pending[0]].key
    small = minimal_victims(state, CFG, key, time_limit=10, first_nodes=1)
    whole = minimal_victims(state, CFG, key, time_limit=10, first_nodes=10_000)
    assert small.key == whole.key
    assert (small.node is None) == (whole.node is None)


def test_node_bounds_on_a_hand_computed_cluster():
    """n1: 4 cpu, a priority-1 pod of 2 cpu and two priority-5 pods of 1 cpu; the pod needs 3 cpu:
    priority-1 pods alone free 2 (too little), up to priority 5 all 4: level 5, at least 2 victims
    (2 + 1 cpu), one at priority 5 and one at ≥ 1. n2: 2 cpu, too small even when empty."""
    from optisched.optimal.eviction.minimal import INFEASIBLE_KEY, node_bounds
    from optisched.profile import default_config as cfg

    objs = [node("n1", cpu="4"), node("n2", cpu="2"),
            pod("a").req(cpu="2").priority(1).on("n1"), pod("b").req(cpu="1").priority(5).on("n1"),
            pod("c").req(cpu="1").priority(5).on("n1"), pod("p").req(cpu="3").priority(10)]
    state = state_of(*objs)
    from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler

    sched = GreedyScheduler(state, cfg(), GreedyOptions(record=False))
    rule = sched.framework(cfg().profiles[0]).filter_rules["NodeResourcesFit"]
    bounds = node_bounds(state, rule, state.pod_index["default/p"])
    assert bounds[state.node_index["n1"]] == (0, 5, (5 + SHIFT) + (1 + SHIFT), 2)
    assert bounds[state.node_index["n2"]] == INFEASIBLE_KEY


RS_OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "low", "uid": "u", "controller": True}]


def test_batch_plan_moves_a_victim_that_fits_elsewhere():
    """The preemptor can only use n1 (n2 is tainted against it); n1's low-priority pod (a ReplicaSet's,
    so it is re-created) is not evicted but moved to n2, and the plan and its Eviction objects say so."""
    from optisched.optimal.solve import OptimalOptions, solve_optimal
    from optisched.plans.plan import batch_eviction_objects, batch_preemptions

    objs = [node("n1", cpu="1"), node("n2", cpu="1").taint("reserved"),
            pod("low").req(cpu="1").priority(1).tolerate("reserved").set("metadata.ownerReferences", RS_OWNER)
            .on("n1"),
            pod("p").req(cpu="1").priority(10)]
    state = state_of(*objs)
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=5))
    plan = batch_preemptions(r)
    assert [(b.node, b.preemptors, b.victims) for b in plan] == [
        ("n1", (("default/p", 10),), (("default/low", 1, (), "n2"),))]
    assert plan[0].moves == 1 and plan[0].evictions == 0
    (ev,) = batch_eviction_objects(plan)
    assert ev["metadata"]["annotations"]["optisched.io/target-node"] == "n2"


def test_batch_plan_does_not_re_place_a_bare_victim():
    """The same cluster with a bare victim: nothing re-creates it, so it is evicted, not moved to n2."""
    from optisched.optimal.solve import OptimalOptions, solve_optimal
    from optisched.plans.plan import batch_preemptions

    objs = [node("n1", cpu="1"), node("n2", cpu="1").taint("reserved"),
            pod("low").req(cpu="1").priority(1).tolerate("reserved").on("n1"),
            pod("p").req(cpu="1").priority(10)]
    r = solve_optimal(state_of(*objs), CFG, OptimalOptions(time_limit=5))
    (b,) = batch_preemptions(r)
    assert b.victims == (("default/low", 1, (), None),) and b.evictions == 1
