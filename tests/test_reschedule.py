"""Rescheduling: per goal, a hand-built cluster whose best plan is known; waves under budgets; loops."""
from __future__ import annotations

import pytest
from builders import node, pod, state_of

from optisched.errors import InputError
from optisched.profile import default_config
from optisched.reschedule import Budgets, parse_goals, plan_reschedule, stage


def owned(name: str, owner: str = "web", kind: str = "ReplicaSet"):  # type: ignore[no-untyped-def]
    return pod(name).set("metadata.ownerReferences",
                         [{"apiVersion": "apps/v1", "kind": kind, "name": owner, "uid": owner, "controller": True}]
                         ).label(app=owner)


def ds(name: str, on: str):  # type: ignore[no-untyped-def]
    return pod(name).req(cpu="100m").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "ds"}]).on(on)


def half_full(cost: bool = False) -> list:
    """Three 4-cpu nodes, each with two 1-cpu web pods and a DaemonSet pod: two nodes can hold all six."""
    objs = []
    for i in (1, 2, 3):
        n = node(f"n{i}")
        objs.append(n.label(**{"optisched.io/hourly-cost": f"0.{i}"}) if cost else n)
        objs += [owned(f"w{i}{j}").req(cpu="1").on(f"n{i}") for j in (1, 2)] + [ds(f"ds{i}", f"n{i}")]
    return objs


def test_consolidate_empties_one_of_three_half_full_nodes_in_two_moves():
    plan = plan_reschedule(state_of(*half_full()), default_config(), "consolidate", time_limit=5)
    assert plan.moves == 2 and len(plan.staging.waves) == 1
    assert plan.removable == plan.staging.cordoned and len(plan.removable) == 1
    assert plan.before.empty_nodes == 0 and plan.after.empty_nodes == 1
    assert plan.consistent
    gone = plan.removable[0]
    assert all(m.source == gone and m.target != gone for m in plan.staging.waves[0].moves)


def test_consolidate_keeps_an_already_empty_node_cordoned_for_the_plan_so_replacements_land_on_target():
    """LeastAllocated scores the empty n4 highest: without it cordoned, both replacements would land there
    (a node the plan leaves empty), and no move would be kept."""
    plan = plan_reschedule(state_of(*half_full(), node("n4")), default_config(), "consolidate", time_limit=5)
    assert plan.staging.held == ["n4"] and plan.to_dict()["cordonDuringPlan"] == ["n4"]
    assert plan.moves == 2 and plan.consistent and plan.staging.dropped == []
    assert "n4" not in plan.staging.final.values()
    assert any(line.startswith("cordon during the plan") and "n4" in line for line in plan.summary())


def test_consolidate_by_cost_empties_the_most_expensive_node_and_reports_the_saving():
    plan = plan_reschedule(state_of(*half_full(cost=True)), default_config(), "consolidate", time_limit=5)
    assert plan.removable == ["n3"] and plan.saving == pytest.approx(0.3)
    assert plan.before.hourly_cost == pytest.approx(0.6) and plan.after.hourly_cost == pytest.approx(0.3)


@pytest.mark.parametrize("extra,why", [
    (pod("bare").req(cpu="100m"), "a bare pod"),
    (owned("scratch", "s").req(cpu="100m").set("spec.volumes", [{"name": "t", "emptyDir": {}}]), "an emptyDir pod"),
    (owned("crit", "c").req(cpu="100m").priority(2_000_000_000), "a system-critical pod"),
    (owned("db", "db").req(cpu="100m").set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}]),
     "a pod with a claim"),
], ids=["a bare pod keeps every node in use", "an emptyDir pod keeps every node in use",
        "a system-critical pod keeps every node in use", "a pod with a claim keeps every node in use"])
def test_pods_the_policy_keeps_pin_their_node(extra, why):
    """One kept pod per node: no node can be emptied, so consolidation moves nothing."""
    objs = half_full()
    for i in (1, 2, 3):
        objs.append(_renamed(extra, f"{i}").on(f"n{i}"))
    plan = plan_reschedule(state_of(*objs), default_config(), "consolidate", time_limit=5)
    assert plan.moves == 0 and plan.removable == [], why


def _renamed(builder, suffix: str):  # type: ignore[no-untyped-def]
    import copy
    b = copy.deepcopy(builder)
    b["metadata"]["name"] = b["metadata"]["name"] + suffix
    return b


def test_a_pdb_allowing_one_disruption_over_three_moves_takes_three_waves():
    """Four 4-cpu nodes; three 1-cpu web pods alone on n2, n3, n4 beside a 3-cpu pod on n1 (bare, so it
    stays): packing puts... the three moves under one PDB with disruptionsAllowed 1 go one per wave."""
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)]
    objs += [owned(f"w{i}").req(cpu="1").on(f"n{i}") for i in (2, 3, 4)]
    objs += [pod("anchor").req(cpu="1").on("n1")]
    objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}})
    plan = plan_reschedule(state_of(*objs), default_config(), "consolidate", time_limit=5)
    assert plan.moves == 3 and [len(w.moves) for w in plan.staging.waves] == [1, 1, 1]
    assert all(w.budgets == {"default/web": 1} for w in plan.staging.waves)
    assert plan.consistent and plan.after.empty_nodes == 3


def test_per_workload_budget_splits_a_wave():
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)]
    objs += [owned(f"w{i}").req(cpu="1").on(f"n{i}") for i in (2, 3, 4)] + [pod("anchor").req(cpu="1").on("n1")]
    plan = plan_reschedule(state_of(*objs), default_config(), "consolidate", time_limit=5,
                           budgets=Budgets(max_unavailable_per_workload="2"))
    assert [len(w.moves) for w in plan.staging.waves] == [2, 1]


def test_max_moves_drops_the_moves_of_a_given_target_beyond_it_and_says_so():
    """The planner solves within --max-moves (tests/test_reschedule_pareto.py); a target given to the
    staging as it is keeps its first moves in queue order and drops the rest."""
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)]
    objs += [owned(f"w{i}").req(cpu="1").on(f"n{i}") for i in (2, 3, 4)] + [pod("anchor").req(cpu="1").on("n1")]
    state = state_of(*objs)
    target = state.pod_node.copy()
    target[[state.pod_index[f"default/w{i}"] for i in (2, 3, 4)]] = state.node_index["n1"]
    staging = stage(state, default_config(), target, {}, Budgets(max_moves=1), frozenset({"n2", "n3", "n4"}))
    assert [m.key for w in staging.waves for m in w.moves] == ["default/w2"]
    assert [(m.key, why) for m, why in staging.dropped] == [("default/w3", "over --max-moves"),
                                                            ("default/w4", "over --max-moves")]


def test_fit_pending_moves_two_single_gpu_pods_for_a_four_gpu_pod():
    """Two 4-GPU nodes, each holding one single-GPU pod and three free GPUs: the pending 4-GPU pod fits
    nowhere until one node's pod joins the other node."""
    objs = [node(f"g{i}").alloc(**{"nvidia.com/gpu": "4"}) for i in (1, 2)]
    objs += [owned(f"small{i}", "small").req(cpu="100m", **{"nvidia.com/gpu": "1"}).on(f"g{i}") for i in (1, 2)]
    objs.append(owned("big", "big").req(cpu="100m", **{"nvidia.com/gpu": "4"}))
    plan = plan_reschedule(state_of(*objs), default_config(), "fit-pending", time_limit=5)
    assert plan.moves == 1 and plan.before.pending_placed == 0 and plan.after.pending_placed == 1
    m = plan.staging.waves[0].moves[0]
    assert m.predicted == m.target != m.source
    assert plan.staging.final["default/big"] == m.source


def test_a_replacement_that_lands_back_on_its_node_is_dropped_as_a_loop():
    """Ask for a move kube-scheduler will not follow: w21 to n1 while n2 stays open. LeastAllocated sends
    the replacement back to n2, so the move is dropped, never emitted."""
    objs = [node("n1"), node("n2"), owned("w11").req(cpu="3").on("n1"), owned("w21").req(cpu="1").on("n2")]
    state = state_of(*objs)
    target = state.pod_node.copy()
    target[state.pod_index["default/w21"]] = state.node_index["n1"]
    staging = stage(state, default_config(), target, {})
    assert staging.waves == []
    assert [(m.key, why) for m, why in staging.dropped] == [("default/w21", "loop: lands back on n2")]
    assert staging.final["default/w21"] == "n2"


def test_a_replacement_predicted_pending_is_never_emitted():
    """A move onto a node that is full by the time the replacement arrives is dropped, not emitted."""
    objs = [node("n1", cpu="2"), node("n2", cpu="1"), owned("a").req(cpu="2").on("n1"), owned("b").req(cpu="1").on("n2")]
    state = state_of(*objs)
    target = state.pod_node.copy()
    target[state.pod_index["default/b"]] = state.node_index["n1"]
    staging = stage(state, default_config(), target, {}, emptied=frozenset({"n2"}))
    assert staging.waves == []
    assert [why for _, why in staging.dropped] == ["replacement predicted to stay pending"]


@pytest.mark.parametrize("text,error", [
    ("", "name at least one goal"), ("shrink", "'shrink' is not a goal")],
    ids=["no goal is refused", "an unknown goal is refused"])
def test_bad_goals_are_refused_in_one_line(text, error):
    with pytest.raises(InputError, match=error):
        parse_goals(text)


def test_goals_keep_their_order():
    assert [str(g) for g in parse_goals("fit-pending,consolidate")] == ["fit-pending", "consolidate"]


REPAIRS = [
    ("a pod on a node tainted NoSchedule after it started moves to an untainted node",
     node("n1").label(disk="ssd").taint("maintenance", effect="NoSchedule"), "TaintToleration"),
    ("a pod on a node tainted NoExecute moves too", node("n1").label(disk="ssd").taint("maintenance", effect="NoExecute"),
     "TaintToleration"),
    ("a pod whose node lost the label its required node affinity asks for moves", node("n1").label(disk="hdd"),
     "NodeAffinity"),
]


@pytest.mark.parametrize("bad_node,rule", [c[1:] for c in REPAIRS], ids=[c[0] for c in REPAIRS])
def test_repair_moves_the_violating_pod_in_one_move(bad_node, rule):
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}
    objs = [bad_node, node("n2").label(disk="ssd"), node("n3").label(disk="ssd"),
            owned("w1").req(cpu="1").set("spec.affinity", affinity).on("n1"),
            owned("w2").req(cpu="1").set("spec.affinity", affinity).on("n2")]
    plan = plan_reschedule(state_of(*objs), default_config(), "repair", time_limit=5)
    assert plan.before.violations[rule] == 1 and set(plan.after.violations.values()) == {0}
    [m] = [m for w in plan.staging.waves for m in w.moves]
    assert m.key == "default/w1" and m.source == "n1" and m.predicted == m.target != "n1"
    assert m.reason == f"repair: {rule} rejects n1"


def test_repair_leaves_a_pod_that_tolerates_its_taint():
    objs = [node("n1").taint("gpu", effect="NoSchedule"), node("n2"),
            owned("w1").req(cpu="1").tolerate("gpu", effect="NoSchedule").on("n1")]
    plan = plan_reschedule(state_of(*objs), default_config(), "repair", time_limit=5)
    assert plan.moves == 0 and plan.before.violations["TaintToleration"] == 0


def _zones(max_skew: int) -> list:
    """Zones a (nodes na and nx), b, c with 4 (two per node: no duplicates over the average), 1, 1 web pods
    under a DoNotSchedule spread: skew 3."""
    spread = [{"maxSkew": max_skew, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    objs = [node(f"n{z}").zone(z) for z in "abc"] + [node("nx").zone("a")]
    return objs + [owned(f"w{i}").req(cpu="100m").set("spec.topologySpreadConstraints", spread).on(f"n{z}")
                   for i, z in enumerate("aaxxbc")]


@pytest.mark.parametrize("max_skew,moves", [(2, 1), (1, 2)],
                         ids=["a zone spread at skew 3 over maxSkew 2 is fixed in one move",
                              "the same spread under maxSkew 1 takes two moves"])
def test_repair_brings_a_drifted_zone_spread_back_within_max_skew(max_skew, moves):
    plan = plan_reschedule(state_of(*_zones(max_skew)), default_config(), "repair", time_limit=5)
    assert plan.moves == moves and plan.consistent
    assert plan.before.violations["PodTopologySpread"] > 0 and plan.after.violations["PodTopologySpread"] == 0
    assert all(m.source in ("na", "nx") for w in plan.staging.waves for m in w.moves)


def _gpus(*pending: str, other_priority: int = 0) -> list:
    objs = [node(f"g{i}").alloc(**{"nvidia.com/gpu": "4"}) for i in (1, 2)]
    objs += [owned(f"small{i}", "small").req(cpu="100m", **{"nvidia.com/gpu": "1"}).on(f"g{i}") for i in (1, 2)]
    return objs + [owned(name, name).req(cpu="100m", **{"nvidia.com/gpu": "4"})
                   .priority(other_priority if name == "other" else 0) for name in pending]


def test_for_fits_the_named_gang_when_kube_queues_it_first():
    plan = plan_reschedule(state_of(*_gpus("big", "other", other_priority=10)), default_config(), "fit-pending",
                           time_limit=5, gang=["default/other"])
    assert plan.moves == 1 and plan.staging.final["default/other"] is not None
    assert plan.staging.final["default/big"] is None


def test_for_says_when_another_pending_pod_would_take_the_room_first():
    """Equal priority, big queued first: the room the move makes goes to big, and the plan says so."""
    plan = plan_reschedule(state_of(*_gpus("big", "other")), default_config(), "fit-pending", time_limit=5,
                           gang=["default/other"])
    assert plan.staging.final["default/other"] is None and plan.staging.final["default/big"] is not None
    assert "predicted to leave some of the pods pending" in plan.staging.notes[-1]


def test_a_gang_that_cannot_all_fit_moves_nothing():
    plan = plan_reschedule(state_of(*_gpus("big", "other")), default_config(), "fit-pending", time_limit=5,
                           gang=["default/big", "default/other"])
    assert plan.moves == 0 and "do not all fit" in plan.staging.notes[0]


@pytest.mark.parametrize("gang,error", [(["default/nope"], "no pod 'default/nope'"),
                                        (["default/small1"], "'default/small1' is not pending")],
                         ids=["an unknown --for pod is refused", "a running --for pod is refused"])
def test_bad_gangs_are_refused(gang, error):
    with pytest.raises(InputError, match=error):
        plan_reschedule(state_of(*_gpus("big")), default_config(), "fit-pending", time_limit=2, gang=gang)


@pytest.mark.parametrize("homeless,dropped", [(False, True), (True, False)],
                         ids=["a target that leaves a running pod homeless does not evict it",
                              "fit-pending may evict a pod to make room without a node for it"])
def test_pods_without_a_target_node_stay_unless_fit_pending_makes_room(homeless, dropped):
    state = state_of(node("n1"), node("n2"), owned("a").req(cpu="1").on("n1"))
    target = state.pod_node.copy()
    target[0] = -1
    staging = stage(state, default_config(), target, {}, emptied=frozenset({"n1"}), homeless=homeless)
    assert bool(staging.dropped) == dropped and bool(staging.waves) != dropped


def _utilized() -> list:
    """n1 at 90 % cpu, n2 at 50 %, n3 at 10 %."""
    objs = [node(f"n{i}") for i in (1, 2, 3)]
    objs += [owned(f"a{j}", "a").req(cpu="1200m").on("n1") for j in range(3)]
    objs += [owned(f"b{j}", "b").req(cpu="1").on("n2") for j in range(2)]
    return objs + [owned("c0", "c").req(cpu="400m").on("n3")]


@pytest.mark.parametrize("low,moves", [({"cpu": 20}, True), ({"cpu": 5}, False)],
                         ids=["balance with thresholds takes pods from the over-utilized node only",
                              "without an under-utilized node LowNodeUtilization moves nothing"])
def test_balance_follows_low_node_utilization_thresholds(low, moves):
    plan = plan_reschedule(state_of(*_utilized()), default_config(), "balance", time_limit=5,
                           thresholds=(low, {"cpu": 60}))
    sources = {m.source for w in plan.staging.waves for m in w.moves}
    assert sources == ({"n1"} if moves else set())
    assert plan.staging.notes[0].startswith(f"LowNodeUtilization: {1 if moves else 0} under-utilized node(s), "
                                            "1 over the target thresholds: n1")
    if moves:
        assert plan.after.util_max["cpu"] < plan.before.util_max["cpu"]


def _tainted_and_two_half_used() -> list:
    """n1 tainted NoSchedule under w1 (a repair), n2 and n3 each holding one 1-cpu pod (three owners: no
    duplicates whichever node they share)."""
    return [node("n1").taint("maintenance", effect="NoSchedule"), node("n2"), node("n3"),
            owned("w1").req(cpu="1").on("n1"), owned("w2", "api").req(cpu="1").on("n2"),
            owned("w3", "db").req(cpu="1").on("n3")]


@pytest.mark.parametrize("goal,used,tiers", [
    ("repair", 2, ["objective:repair"]),
    ("repair,consolidate", 1, ["objective:repair", "objective:pack"]),
], ids=["repair alone moves the one violating pod and leaves two nodes in use",
        "consolidate second chooses among the equal repairs the one that frees every node but one"])
def test_a_second_goal_decides_between_plans_equal_on_the_first(goal, used, tiers):
    plan = plan_reschedule(state_of(*_tainted_and_two_half_used()), default_config(), goal, time_limit=5)
    assert plan.after.violations["TaintToleration"] == 0 and plan.consistent
    assert plan.after.nodes_used == used
    names = [t.name for t in plan.certificate.tiers if t.name.startswith("objective:")]
    assert names == tiers
    assert all(t.status == "OPTIMAL" for t in plan.certificate.tiers if t.name in tiers)


@pytest.mark.parametrize("goals,soft,tiers", [
    ("consolidate,balance", False, ("pack", "spread")),
    ("balance,consolidate", False, ("spread", "pack")),
    ("consolidate,fit-pending", False, ("pack",)),
    ("repair,consolidate", True, ("repair", "repair-soft", "pack")),
], ids=["consolidate then balance are two tiers in that order", "the order given is the order of the tiers",
        "fit-pending is the placement tiers, no objective tier of its own",
        "--soft puts repair's preferences right after repair"])
def test_goal_tiers(goals, soft, tiers):
    from optisched.reschedule.goals import goal_objectives

    assert goal_objectives(parse_goals(goals), soft) == tiers


def test_two_goals_each_get_a_certificate_line_in_order():
    plan = plan_reschedule(state_of(*half_full()), default_config(), "consolidate,balance", time_limit=5)
    names = [t.name for t in plan.certificate.tiers]
    assert names.index("objective:pack") < names.index("objective:spread") < names.index("disruption")
    assert plan.after.empty_nodes == 1


@pytest.mark.parametrize("version,release", [(None, "v1.35.4"), ("1.36", "v1.36.2")])
def test_the_plan_names_the_release_its_replays_followed(version, release):
    from pathlib import Path

    import optisched

    example = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-consolidate.yaml"
    plan = optisched.reschedule(optisched.load([str(example)]), goal="consolidate", time_limit=5,
                                kubernetes_version=version)
    assert plan.to_dict()["kubernetesVersion"] == release == plan.kubernetes_version
