"""The score tier: EXACT encodings give each (pod, node) the greedy weighted score; each SURROGATE's
objective prefers what its plugin prefers, and the solver's answer does what the surrogate promises."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of

from optisched.framework import CycleState, Fidelity
from optisched.greedy.framework_runner import Framework
from optisched.model.snapshot import Snapshot
from optisched.optimal.classes import build_batch
from optisched.optimal.decode import variable_values
from optisched.optimal.model import BatchModel
from optisched.optimal.score import score_objective
from optisched.optimal.score_terms import SCORE_SCALE
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.profile import parse_config
from optisched.registry import REGISTRY, rule_class

SCORES = [n for n, sides in REGISTRY.items() if "score" in sides]
GiB = 1024**3


def config(*plugins: str, weights: dict[str, int] | None = None, fit: dict | None = None):  # type: ignore[no-untyped-def]
    """A profile running just ``plugins`` (with their filters), optionally weighted and with
    NodeResourcesFit's scoring strategy."""
    enabled = [{"name": "PrioritySort"}, {"name": "DefaultBinder"}]
    enabled += [{"name": p, **({"weight": weights[p]} if weights and p in weights else {})} for p in plugins]
    profile: dict = {"schedulerName": "default-scheduler",
                     "plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": enabled}}}
    if fit is not None:
        profile["pluginConfig"] = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": fit}}]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [profile]})


def score_model(state, cfg):  # type: ignore[no-untyped-def]
    model = BatchModel(build_batch(state, cfg), cfg)
    objective, _ = score_objective(model)
    return model, objective


def score_of(state, cfg, placement: dict[str, str]) -> int:  # type: ignore[no-untyped-def]
    """The score tier's objective for the pending pods placed as ``placement`` (pod name -> node name)."""
    model, objective = score_model(state, cfg)
    node_of = state.pod_node.copy()
    for name, n in placement.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[n]
    return objective.value(variable_values(model, node_of))


def nodes_of(result, names: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    placements = result.placements()
    return [placements[f"default/{n}"] for n in names]


def test_every_score_rule_declares_its_fidelity_and_encoding() -> None:
    for name in SCORES:
        cls = rule_class(REGISTRY[name]["score"])
        assert isinstance(cls.score_fidelity, Fidelity), name
        assert callable(cls.encode_score), name


# ------------------------------------------------------------------ EXACT and static scores
def with_images(n: dict, *images: tuple[str, int]) -> dict:
    n["status"]["images"] = [{"names": [name], "sizeBytes": size} for name, size in images]
    return n


STATIC = [
    pytest.param("ImageLocality", 3,
                 [with_images(node("n1"), ("db:2", 500 * 1024**2)), with_images(node("n2"), ("db:2", 500 * 1024**2)),
                  with_images(node("n3"), ("db:2", 900 * 1024**2)), node("n4"),
                  pod("p").set("spec.containers", [{"name": "c", "image": "db:2"}])],
                 id="ImageLocality: each node earns the weighted greedy score for the images it holds"),
    pytest.param("TaintToleration", 2,
                 [node("n1").taint("slow", effect="PreferNoSchedule"),
                  node("n2").taint("slow", effect="PreferNoSchedule").taint("old", effect="PreferNoSchedule"),
                  node("n3"), pod("p")],
                 id="TaintToleration: fewer untolerated PreferNoSchedule taints score higher"),
    pytest.param("NodeAffinity", 2,
                 [node("n1").label(disk="ssd"), node("n2").label(disk="ssd", gen="new"), node("n3"),
                  pod("p").set("spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 10, "preference": {"matchExpressions": [
                          {"key": "disk", "operator": "In", "values": ["ssd"]}]}},
                      {"weight": 30, "preference": {"matchExpressions": [
                          {"key": "gen", "operator": "In", "values": ["new"]}]}}]}})],
                 id="NodeAffinity: preferred terms' weights, normalized by the best node"),
]


@pytest.mark.parametrize(("plugin", "weight", "objs"), STATIC)
def test_static_score_coefficients_equal_the_greedy_weighted_scores(plugin: str, weight: int, objs: list) -> None:
    state = state_of(*objs)
    cfg = config(plugin, weights={plugin: weight})
    model, objective = score_model(state, cfg)
    fw = Framework(Snapshot(state), cfg.profiles[0])
    nodes = np.arange(state.num_nodes)
    greedy = fw.score(CycleState(state.pending[0], fw.snapshot, fw.profile), nodes).total
    cv = model.vars[0]
    coef = {v.Index(): k for v, k in zip(objective.vars, objective.coefs)}
    got = [coef.get(v.Index(), 0) for v in cv.arr_vars]
    assert got == [SCORE_SCALE * int(greedy[n]) for n in cv.arr_nodes.tolist()]
    assert len(set(got)) > 1  # the nodes differ: the case tests something


def test_image_locality_is_exact_and_the_others_are_surrogates() -> None:
    fidelity = {n: rule_class(REGISTRY[n]["score"]).score_fidelity for n in SCORES}
    assert fidelity.pop("ImageLocality") == Fidelity.EXACT
    assert set(fidelity.values()) == {Fidelity.SURROGATE}


# ------------------------------------------------------------------ surrogates
def two_nodes(**kw: str) -> list:
    return [node("n1", **kw), node("n2", **kw)]


def replicas(n: int, name: str = "web", **req: str) -> list:
    return [pod(f"{name}-{i}").label(app=name).req(**(req or {"cpu": "1"})) for i in range(n)]


def with_spec(pods: list, path: str, value: object) -> list:
    return [p.set(path, value) for p in pods]


ANTI = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
    "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}]}}
ZONE_AFFINITY = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
    "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "topology.kubernetes.io/zone"}}]}}
NEAR_DB = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
    "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}]}}
SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
           "labelSelector": {"matchLabels": {"app": "web"}}}]
AWAY_FROM_DB = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
    "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}}]}}
NEEDS_WEB = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
    "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"selector": {"app": "web"}}}
RISING = {"type": "RequestedToCapacityRatio",
          "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}

SURROGATES = [
    pytest.param(config("NodeResourcesFit"), [*two_nodes(), *replicas(2)],
                 {"web-0": "n1", "web-1": "n2"}, {"web-0": "n1", "web-1": "n1"},
                 id="LeastAllocated spreads two pods over two empty nodes"),
    pytest.param(config("NodeResourcesFit"), [node("n1"), node("n2"), pod("big").req(cpu="2").on("n1"),
                                              *replicas(2)],
                 {"web-0": "n2", "web-1": "n2"}, {"web-0": "n1", "web-1": "n2"},
                 id="LeastAllocated keeps new pods off the node that is already loaded"),
    pytest.param(config("NodeResourcesFit", fit={"type": "MostAllocated"}), [*two_nodes(), *replicas(2)],
                 {"web-0": "n1", "web-1": "n1"}, {"web-0": "n1", "web-1": "n2"},
                 id="MostAllocated packs two pods onto one node"),
    pytest.param(config("NodeResourcesFit", fit={"type": "MostAllocated"}),
                 [*two_nodes(), pod("old").req(cpu="1").on("n2"), *replicas(1)],
                 {"web-0": "n2"}, {"web-0": "n1"}, id="MostAllocated prefers a node already in use"),
    pytest.param(config("NodeResourcesFit", fit=RISING), [*two_nodes(), *replicas(2)],
                 {"web-0": "n2", "web-1": "n2"}, {"web-0": "n1", "web-1": "n2"},
                 id="RequestedToCapacityRatio with a rising shape packs"),
    pytest.param(config("NodeResourcesBalancedAllocation"),
                 [*two_nodes(cpu="4", memory="4Gi"), pod("cpu-hog").req(cpu="2", memory="512Mi").on("n1"),
                  pod("mem-hog").req(cpu="500m", memory="2Gi").on("n2"), pod("p").req(cpu="500m", memory="1536Mi")],
                 {"p": "n1"}, {"p": "n2"},
                 id="BalancedAllocation prefers the node whose cpu and memory the pod balances"),
    pytest.param(config("NodeAffinity"),
                 [node("n1"), node("n2").label(disk="ssd"),
                  pod("p").set("spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 1, "preference": {"matchExpressions": [
                          {"key": "disk", "operator": "Exists"}]}}]}})],
                 {"p": "n2"}, {"p": "n1"}, id="preferred node affinity pulls a pod to the preferred node"),
    pytest.param(config("TaintToleration"), [node("n1").taint("spot", effect="PreferNoSchedule"), node("n2"), pod("p")],
                 {"p": "n2"}, {"p": "n1"}, id="a PreferNoSchedule taint pushes a pod away"),
    pytest.param(config("PodTopologySpread"),
                 [node("n1").zone("a"), node("n2").zone("a"), node("n3").zone("b"),
                  *with_spec(replicas(2), "spec.topologySpreadConstraints", SPREAD)],
                 {"web-0": "n1", "web-1": "n3"}, {"web-0": "n1", "web-1": "n2"},
                 id="ScheduleAnyway spread puts replicas in different zones"),
    pytest.param(config("PodTopologySpread"), [*two_nodes(), SERVICE, *replicas(2)],
                 {"web-0": "n1", "web-1": "n2"}, {"web-0": "n2", "web-1": "n2"},
                 id="the system default constraints spread a Service's replicas over hosts"),
    pytest.param(config("InterPodAffinity"), [*two_nodes(), *with_spec(replicas(2), "spec.affinity", ANTI)],
                 {"web-0": "n1", "web-1": "n2"}, {"web-0": "n2", "web-1": "n2"},
                 id="preferred anti-affinity separates replicas"),
    pytest.param(config("InterPodAffinity"),
                 [node("n1").zone("a"), node("n2").zone("b"), *with_spec(replicas(2), "spec.affinity", ZONE_AFFINITY)],
                 {"web-0": "n2", "web-1": "n2"}, {"web-0": "n1", "web-1": "n2"},
                 id="preferred self-affinity keeps replicas in one zone"),
    pytest.param(config("InterPodAffinity"),
                 [*two_nodes(), pod("db").label(app="db").on("n2"), pod("p").set("spec.affinity", NEAR_DB)],
                 {"p": "n2"}, {"p": "n1"}, id="preferred affinity pulls a pod next to a running pod"),
    pytest.param(config("InterPodAffinity"),
                 [*two_nodes(), pod("db").label(app="db").req(cpu="1"), pod("p").set("spec.affinity", NEAR_DB)],
                 {"db": "n1", "p": "n1"}, {"db": "n1", "p": "n2"},
                 id="preferred affinity pulls a pod next to a pod of the same batch"),
    pytest.param(config("InterPodAffinity"),
                 [*two_nodes(), pod("db").label(app="db").req(cpu="1"), pod("p").set("spec.affinity", AWAY_FROM_DB)],
                 {"db": "n1", "p": "n2"}, {"db": "n1", "p": "n1"},
                 id="preferred anti-affinity keeps a pod away from a pod of the same batch"),
    pytest.param(config("InterPodAffinity"),
                 [*two_nodes(), pod("cache").set("spec.affinity", NEEDS_WEB).label(app="cache").on("n2"),
                  pod("web-0").label(app="web")],
                 {"web-0": "n2"}, {"web-0": "n1"},
                 id="a running pod's required affinity draws the pods it needs (hardPodAffinityWeight)"),
]


@pytest.mark.parametrize(("cfg", "objs", "better", "worse"), SURROGATES)
def test_surrogate_prefers_what_its_plugin_prefers(cfg, objs: list, better: dict, worse: dict) -> None:  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    assert score_of(state, cfg, better) > score_of(state, cfg, worse)
    result = solve_optimal(state, cfg, OptimalOptions(time_limit=10, workers=1))
    assert result.violations == []
    assert score_of(state, cfg, {k: v for k, v in zip(better, nodes_of(result, list(better)))}) == \
        score_of(state, cfg, better)
    score = next(t for t in result.certificate.tiers if t.name == "score")
    assert score.fidelity == "SURROGATE" and score.status == "OPTIMAL"


def test_a_score_tier_that_cannot_be_built_in_time_is_left_out(monkeypatch):
    """A tier whose terms are still being built at its deadline is left out of the certificate with a
    note; the placement tiers keep their answer."""
    from optisched.optimal import tier_loop

    def too_slow(model):  # type: ignore[no-untyped-def]
        model.deadline = 0.0  # long past
        model.check_time()
        raise AssertionError("check_time did not stop the build")

    monkeypatch.setattr(tier_loop, "score_objective", too_slow)
    state = state_of(node("n1"), node("n2"), pod("a").req(cpu="1"), pod("b").req(cpu="1"))
    r = solve_optimal(state, config("NodeResourcesFit"), OptimalOptions(time_limit=5))
    assert [t.name for t in r.certificate.tiers] == ["placed[priority=0]"]
    assert any("score" in n and "left out" in n for n in r.certificate.notes)
    assert (r.node_of[[state.pod_index["default/a"], state.pod_index["default/b"]]] >= 0).all()
