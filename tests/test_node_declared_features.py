"""NodeDeclaredFeatures (kubernetes v1.36.2): the upstream tables of the plugin
(``pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go``) and of the
feature inference (``staging/src/k8s.io/component-helpers/nodedeclaredfeatures/framework_test.go``,
``features/restartallcontainers/restart_all_containers_test.go``), then whole runs in both engines."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_optimal_exact import greedy_allowed, model_allowed

import optisched
from optisched.errors import InputError
from optisched.framework import Code, CycleState
from optisched.model.loader import cluster_from_objects
from optisched.model.objects import PodSpec
from optisched.plugins.node_declared_features import (
    FEATURES,
    REASON,
    DeclaredFeature,
    NodeDeclaredFeatures,
    required_features,
)
from optisched.profile import default_config, parse_config
from optisched.registry import instantiate

PROFILE_1_36 = default_config("1.36").profiles[0]
RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"
UNRES = "UnschedulableAndUnresolvable"


def restart_all_rule() -> dict:
    """``containerWithRestartAllContainersAction``: restartPolicy Never, one RestartAllContainers rule."""
    return {"name": "container", "image": "image", "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "RestartAllContainers",
                                    "exitCodes": {"operator": "In", "values": [1]}}]}


def restart_all(p):  # type: ignore[no-untyped-def]
    return p.set("spec.containers", [restart_all_rule()])


def userns_hostnet(p):  # type: ignore[no-untyped-def]
    return p.set("spec.hostNetwork", True).set("spec.hostUsers", False)


def spec(**fields) -> PodSpec:  # type: ignore[no-untyped-def]
    return PodSpec.model_validate({"containers": [{"name": "name2", "image": "image"}], **fields})


def mock(name: str, infer: bool, max_version: str | None = None) -> DeclaredFeature:
    """``createMockFeature``: a feature whose inference answers ``infer`` for every pod."""
    return DeclaredFeature(name, lambda _spec: infer, max_version)


def plugin_for(objs, registry=FEATURES, version: str | None = None):  # type: ignore[no-untyped-def]
    snap = snapshot_of(*objs)
    rule = NodeDeclaredFeatures(snap, PROFILE_1_36, registry)
    if version is not None:
        rule.version = version
    return snap, rule


# ------------------------------------------------------------------ the registry
def test_the_registry_is_v1_36_2s_all_features_sorted_by_name():
    """features/registry.go AllFeatures, sorted as ndf.New sorts it."""
    assert [f.name for f in FEATURES] == sorted([
        RESTART_ALL, "InPlacePodLevelResourcesVerticalScaling", "ExtendWebSocketsToKubelet",
        "InPlacePodVerticalScalingInitContainers", USERNS_HOSTNET])
    assert all(f.max_version is None for f in FEATURES)


# ------------------------------------------------------------------ feature inference
INFER_CASES = [
    # restart_all_containers_test.go TestInferForScheduling
    ("init container with rules", {"initContainers": [restart_all_rule()],
                                   "containers": [{"name": "name", "image": "image"}]}, (RESTART_ALL,)),
    ("regular container with rules", {"initContainers": [{"name": "name", "image": "image"}],
                                      "containers": [restart_all_rule()]}, (RESTART_ALL,)),
    ("no rules", {"initContainers": [{"name": "name", "image": "image"}],
                  "containers": [{"name": "name2", "image": "image"}]}, ()),
    ("a Restart rule only restarts its own container",
     {"containers": [{**restart_all_rule(), "restartPolicyRules": [
         {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}]}]}, ()),
    # user_namespaces_host_network.go InferForScheduling
    ("host network in its own user namespace", {"hostNetwork": True, "hostUsers": False}, (USERNS_HOSTNET,)),
    ("host network with hostUsers unset shares the host's", {"hostNetwork": True}, ()),
    ("host network with hostUsers true", {"hostNetwork": True, "hostUsers": True}, ()),
    ("its own user namespace without host network", {"hostUsers": False}, ()),
    ("both features at once", {"hostNetwork": True, "hostUsers": False, "containers": [restart_all_rule()]},
     (RESTART_ALL, USERNS_HOSTNET)),
]


@pytest.mark.parametrize("case,fields,want", INFER_CASES, ids=[c[0] for c in INFER_CASES])
def test_the_features_scheduling_a_pod_requires(case, fields, want):
    assert required_features(spec(**fields), "v1.36.2") == want


def pod_level_resources(s: PodSpec) -> bool:
    return s.resources is not None


# framework_test.go TestInferForPodScheduling (the "target version nil" row cannot happen here: the
# version is the profile's release)
FRAMEWORK_CASES = [
    ("pod with feature, inferred during scheduling", {"resources": {"requests": {"cpu": "500m"}}}, None,
     "1.30.0", ("PodLevelResources",)),
    ("pod without feature", {}, None, "1.30.0", ()),
    ("feature universally available, not inferred during create",
     {"resources": {"requests": {"cpu": "500m"}}},
     "1.30.0", "1.31.0", ()),
    ("pre-release target version", {"resources": {"requests": {"cpu": "500m"}}}, "1.30.0",
     "0.0.0-alpha.2.39+049eafd34dfbd2", ("PodLevelResources",)),
    ("exceeds max version", {"resources": {"requests": {"cpu": "500m"}}}, "1.30.0", "1.40.0", ()),
    ("a release is after its pre-releases", {"resources": {"requests": {"cpu": "500m"}}}, "1.30.0-rc.1",
     "1.30.0", ()),
]


@pytest.mark.parametrize("case,fields,max_version,target,want", FRAMEWORK_CASES,
                         ids=[c[0] for c in FRAMEWORK_CASES])
def test_infer_for_pod_scheduling_honours_max_version(case, fields, max_version, target, want):
    registry = (DeclaredFeature("PodLevelResources", pod_level_resources, max_version),)
    assert required_features(spec(**fields), target, registry) == want


# ------------------------------------------------------------------ PreFilter
# nodedeclaredfeatures_test.go TestPreFilter ("plugin disabled": the plugin of a 1.35 profile)
PREFILTER_CASES = [
    ("plugin disabled", [mock("TestFeature1", True), mock("TestFeature2", False)], None, Code.SKIP, None),
    ("Pod with feature requirements", [mock("TestFeature1", True), mock("TestFeature2", False)], "1.35.0",
     Code.SUCCESS, ("TestFeature1",)),
    ("Pod with multiple feature requirements", [mock("TestFeature1", True, "1.38.0"),
                                                mock("TestFeature2", True, "1.38.0")], "1.35.0",
     Code.SUCCESS, ("TestFeature1", "TestFeature2")),
    ("Pod with no requirements", [mock("TestFeature1", False), mock("TestFeature2", False)], "1.35.0",
     Code.SKIP, None),
    ("Feature not required, version > MaxVersion", [mock("TestFeature1", True, "1.33.0"),
                                                    mock("TestFeature2", False)], "1.34.0", Code.SKIP, None),
]


@pytest.mark.parametrize("case,registry,version,code,state", PREFILTER_CASES,
                         ids=[c[0] for c in PREFILTER_CASES])
def test_pre_filter(case, registry, version, code, state):
    objs = [node("a"), pod("test-pod")]
    if version is None:
        snap = snapshot_of(*objs)
        rule = NodeDeclaredFeatures(snap, default_config("1.35").profiles[0], tuple(registry))
    else:
        snap, rule = plugin_for(objs, tuple(registry), version)
    cycle = CycleState(snap.state.pod_index["default/test-pod"], snap, PROFILE_1_36)
    status = rule.pre_filter(cycle)
    assert status.code == code and status.nodes is None
    if state is None:
        assert rule.name not in cycle.data
    else:
        assert tuple(f.name for f, on in zip(registry, cycle.data[rule.name]) if on) == state


# ------------------------------------------------------------------ Filter
ABC = tuple(mock(n, False) for n in ("FeatureA", "FeatureB", "FeatureC"))
# nodedeclaredfeatures_test.go TestFilter ("Error getting pre-filter state" cannot happen: Filter only runs
# after a PreFilter that kept the requirements) and framework_test.go TestMatchNode
FILTER_CASES = [
    ("Node matches requirements", ["FeatureA", "FeatureB"], ["FeatureA"], "pass"),
    ("Node does not match requirements", ["FeatureB"], ["FeatureA"], f"{UNRES}:{REASON}"),
    ("Node with multiple features, pod requires subset", ["FeatureA", "FeatureB", "FeatureC"],
     ["FeatureA", "FeatureC"], "pass"),
    ("Node has no declared features", [], ["FeatureA"], f"{UNRES}:{REASON}"),
    ("Node with some but not all required features", ["FeatureA"], ["FeatureA", "FeatureB"],
     f"{UNRES}:{REASON}"),
    # TestMatchNode (its names, feature-a ..., are no valid declared features: FeatureA ... here)
    ("all features match", ["FeatureA", "FeatureB", "FeatureC"], ["FeatureA", "FeatureB"], "pass"),
    ("some features missing", ["FeatureA", "FeatureC"], ["FeatureA", "FeatureB"], f"{UNRES}:{REASON}"),
    ("all features missing", ["FeatureC"], ["FeatureA", "FeatureB"], f"{UNRES}:{REASON}"),
    ("no node features", [], ["FeatureA", "FeatureB"], f"{UNRES}:{REASON}"),
    ("a feature the registry does not know is ignored", ["FeatureB", "Unknown"], ["FeatureB"], "pass"),
]


@pytest.mark.parametrize("case,declared,reqs,want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(case, declared, reqs, want):
    snap, rule = plugin_for([node("node-1").declare(*declared), pod("test-pod")], ABC)
    cycle = CycleState(snap.state.pod_index["default/test-pod"], snap, PROFILE_1_36)
    cycle.data[rule.name] = np.array([f.name in reqs for f in ABC])
    res = rule.filter(cycle, np.arange(1))
    got = "pass" if res.code[0] == 0 else f"{Code(int(res.code[0])).label}:{'|'.join(res.reasons_of(0))}"
    assert got == want


def test_no_requirements_match_every_node():
    """TestMatchNode "no requirements": PreFilter skips the pod, so the plugin rejects no node."""
    snap, rule = plugin_for([node("a").declare("FeatureA"), node("b"), pod("p")], ABC)
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE_1_36)
    assert rule.pre_filter(cycle).code == Code.SKIP


def test_filter_answers_for_the_nodes_asked_in_their_order():
    snap, rule = plugin_for([node("a").declare(RESTART_ALL), node("b"), node("c").declare(RESTART_ALL),
                             restart_all(pod("p"))])
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE_1_36)
    assert rule.pre_filter(cycle).code == Code.SUCCESS
    assert rule.filter(cycle, np.array([2, 1])).code.tolist() == [0, int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


# ------------------------------------------------------------------ node and pod validation
BAD_INPUT = [
    ("an unsorted list", ["RestartAllContainersOnContainerExits", "ExtendWebSocketsToKubelet"],
     ".status.declaredFeatures: [1] 'ExtendWebSocketsToKubelet': list must be sorted alphabetically"),
    ("a duplicate", ["A", "A"], ".status.declaredFeatures: [1] 'A': Duplicate value"),
    ("a lowerCamelCase first segment", ["myFeature"],
     (".status.declaredFeatures[0]: invalid feature name 'myFeature': "
      "must start with an UpperCamelCase segment")),
    ("a dash", ["My-Feature"], ".status.declaredFeatures[0]: invalid feature name 'My-Feature'"),
    ("a name beyond 253 characters", ["A" * 254], "must be no more than 253 characters"),
]


@pytest.mark.parametrize("case,features,message", BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_declared_features_are_validated_as_the_api_server_does(case, features, message):
    with pytest.raises(InputError, match="Node/a") as err:
        cluster_from_objects([node("a").declare(*features)])
    assert message in str(err.value)


def test_declared_features_as_the_api_server_keeps_them_load():
    c = cluster_from_objects([node("a").declare("ExtendWebSocketsToKubelet", "MyFeature/mySubFeature")])
    assert c.nodes[0].status.declared_features == ["ExtendWebSocketsToKubelet", "MyFeature/mySubFeature"]


BAD_RULES = [
    ("a rule without restartPolicy", {"restartPolicy": None},
     "must specify restartPolicy when restart rules are used"),
    ("an unknown action", {"restartPolicyRules": [{"action": "Reboot", "exitCodes": {"operator": "In"}}]},
     "restartPolicyRules[0].action: 'Reboot' is not one of Restart, RestartAllContainers"),
    ("a rule without exitCodes", {"restartPolicyRules": [{"action": "Restart"}]},
     "restartPolicyRules[0].exitCodes: required field is missing"),
    ("an unknown operator", {"restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "Gt"}}]},
     "exitCodes.operator: 'Gt' is not one of In, NotIn"),
    ("21 rules", {"restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In"}}] * 21},
     ".spec.containers[0].restartPolicyRules"),
]


@pytest.mark.parametrize("case,change,message", BAD_RULES, ids=[c[0] for c in BAD_RULES])
def test_restart_rules_are_validated_as_the_api_server_does(case, change, message):
    with pytest.raises(InputError, match="Pod/default/p") as err:
        cluster_from_objects([pod("p").set("spec.containers", [{**restart_all_rule(), **change}])])
    assert message in str(err.value)


def test_bad_declared_features_through_the_command_line_exit_2(tmp_path, capsys):
    from builders import run_cli

    f = tmp_path / "cluster.yaml"
    f.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: worker-3}\n"
                 "status: {allocatable: {cpu: '4'}, declaredFeatures: [B, A]}\n")
    code, _, err = run_cli(["inspect", str(f)], capsys)
    assert code == 2 and "Traceback" not in err
    assert " ".join(err.split()).endswith(
        "cluster.yaml: Node/worker-3 .status.declaredFeatures: [1] 'A': list must be sorted alphabetically")


# ------------------------------------------------------------------ whole runs
def cluster_objs() -> list[dict]:
    return [node("has-restart").declare(RESTART_ALL), node("bare"),
            node("has-both").declare(RESTART_ALL, USERNS_HOSTNET),
            userns_hostnet(restart_all(pod("needs-both"))).req(cpu="3"),
            restart_all(pod("needs-restart")).req(cpu="3"),
            userns_hostnet(restart_all(pod("needs-both-again"))).req(cpu="3"),
            pod("plain")]


def test_a_greedy_1_36_run_keeps_pods_off_nodes_lacking_their_features():
    result = optisched.schedule(cluster_from_objects(cluster_objs()), kubernetes_version="1.36")
    placed = result.placements()
    assert placed["default/needs-restart"] in {"has-restart", "has-both"}
    assert placed["default/needs-both"] == "has-both"
    assert placed["default/needs-both-again"] is None
    again = result.state.pod_index["default/needs-both-again"]
    # NodeResourcesFit runs first: has-both and has-restart are full; bare lacks both features. Only the
    # latter is UnschedulableAndUnresolvable, so preemption does not try it (DynamicResources' PostFilter
    # runs first and has no claim to free)
    assert result.unschedulable[again] == (
        f"0/3 nodes are available: 1 {REASON}, 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.")


def test_a_pod_no_node_has_the_feature_for_is_unschedulable_with_upstreams_reason():
    objs = [node("a"), node("b").declare("ExtendWebSocketsToKubelet"), userns_hostnet(pod("p"))]
    result = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.36")
    assert result.unschedulable[result.state.pod_index["default/p"]] == (
        f"0/2 nodes are available: 2 {REASON}. no new claims to deallocate, preemption: 0/2 nodes are "
        "available: 2 Preemption is not helpful for scheduling.")


@pytest.mark.parametrize("profile", [None, "names the plugin"])
def test_a_1_35_run_ignores_declared_features(profile):
    """1.35's default plugins lack NodeDeclaredFeatures; a profile naming it gets the plugin its gate
    (off in 1.35) leaves disabled."""
    objs = [node("a"), userns_hostnet(pod("p")), restart_all(pod("q"))]
    config = None if profile is None else only_ndf("1.35")
    result = optisched.schedule(cluster_from_objects(objs), config, kubernetes_version="1.35")
    assert result.placements() == {"default/p": "a", "default/q": "a"}
    assert "NodeDeclaredFeatures" not in default_config("1.35").profiles[0].plugins["filter"]


def test_optimal_mode_places_the_same_instance_only_where_greedy_mode_may():
    cluster = cluster_from_objects(cluster_objs())
    result = optisched.solve(cluster, mode="optimal", kubernetes_version="1.36", time_limit=20, workers=1)
    placed = result.placements()
    assert placed["default/needs-both"] == "has-both"
    assert placed["default/needs-restart"] in {"has-restart", "has-both"}
    assert placed["default/needs-both-again"] is None
    assert result.violations == []


def only_ndf(version: str = "1.36"):  # type: ignore[no-untyped-def]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"plugins": {"multiPoint": {
                             "disabled": [{"name": "*"}],
                             "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"},
                                         {"name": "NodeDeclaredFeatures"}]}}}]}, "<test>", version)


@pytest.mark.parametrize("config", [only_ndf(), default_config("1.36")],
                         ids=["the plugin alone", "1.36 defaults"])
@pytest.mark.parametrize("name", ["needs-restart", "needs-both", "plain"])
def test_the_encoding_allows_the_pairs_the_greedy_filters_allow(config, name):
    state = state_of(*[o for o in cluster_objs() if o["kind"] == "Node" or o["metadata"]["name"] == name])
    p = state.pod_index[f"default/{name}"]
    allowed = model_allowed(state, config, p)
    assert allowed == greedy_allowed(state, config, p)
    want = {"needs-restart": {"has-restart", "has-both"}, "needs-both": {"has-both"},
            "plain": {"has-restart", "bare", "has-both"}}[name]
    assert {state.node_names[n] for n in allowed} == want


KNOWN = [f.name for f in FEATURES]


@st.composite
def instances(draw):  # type: ignore[no-untyped-def]
    """Nodes declaring random subsets of the registry's features (and unknown ones), one pending pod."""
    objs = []
    for i in range(draw(st.integers(1, 4))):
        names = draw(st.sets(st.sampled_from([*KNOWN, "Unknown", "ZFeature/sub"])))
        objs.append(node(f"n{i}").declare(*sorted(names)))
    p = pod("p")
    if draw(st.booleans()):
        p = restart_all(p)
    if draw(st.booleans()):
        p = p.set("spec.hostNetwork", True)
    users = draw(st.sampled_from([None, True, False]))
    if users is not None:
        p = p.set("spec.hostUsers", users)
    return [*objs, p]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=instances())
def test_a_node_passes_exactly_when_it_declares_every_required_feature_in_both_engines(objs):
    state = state_of(*objs)
    p = state.pod_index["default/p"]
    need = set(required_features(state.pods[p].spec, "v1.36.2"))
    want = {i for i, n in enumerate(state.nodes) if need <= set(n.status.declared_features)}
    config = only_ndf()
    assert greedy_allowed(state, config, p) == want
    assert model_allowed(state, config, p) == want


def test_the_rule_runs_only_where_the_profile_names_it_and_only_from_1_36():
    snap = snapshot_of(node("a").declare(), restart_all(pod("p")))
    filters_1_36, _ = instantiate(snap, PROFILE_1_36)
    filters_1_35, _ = instantiate(snap, default_config("1.35").profiles[0])
    named_1_35, _ = instantiate(snap, only_ndf("1.35").profiles[0])
    assert "NodeDeclaredFeatures" in filters_1_36 and "NodeDeclaredFeatures" not in filters_1_35
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE_1_36)
    assert filters_1_36["NodeDeclaredFeatures"].pre_filter(cycle).code == Code.SUCCESS
    assert named_1_35["NodeDeclaredFeatures"].pre_filter(cycle).code == Code.SKIP


def test_preemption_frees_only_a_node_that_declares_the_feature():
    """SelectVictimsOnNode runs every filter after removing victims: on a node lacking the feature no
    eviction helps, so the victim is the pod on the node that declares it (even after a node that is
    first in order)."""
    objs = [node("bare", cpu="2"), node("has", cpu="2").declare(RESTART_ALL),
            pod("low-bare").req(cpu="2").on("bare"), pod("low-has").req(cpu="2").on("has"),
            restart_all(pod("high")).req(cpu="2").priority(1000)]
    result = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.36")
    rows, has = result.state.pod_index, result.state.node_index["has"]
    assert result.preempted == {rows["default/low-has"]: (rows["default/high"], has)}
    assert result.placements()["default/high"] == "has"
