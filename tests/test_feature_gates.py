"""Feature gates: ``--feature-gates`` parsed and checked as kube-scheduler's flag (component-base's
``featuregate``), each release's defaults as ``kube_features.go`` has them, and the rules that read a gate
(NodeDeclaredFeatures, DRAPrioritizedList, DRAAdminAccess) doing what upstream does either way."""
from __future__ import annotations

import gzip
import json

import pytest
from builders import node, pod, run_cli
from helpers.replay import CASES
from test_dynamic_resources import device_class, gpus
from test_dynamic_resources import node as dra_node
from test_dynamic_resources import pod as dra_pod
from test_node_declared_features import RESTART_ALL, restart_all
from test_pod_topology_spread import node as spread_node
from test_pod_topology_spread import pod as spread_pod
from test_pod_topology_spread import tsc
from typer.testing import CliRunner

import optisched
from optisched.cli import app
from optisched.errors import InputError
from optisched.model.loader import cluster_from_objects
from optisched.plugins.node_declared_features import REASON_1_35
from optisched.profile import default_config, parse_config
from optisched.profile.gates import SCHEDULER_GATES, gate_spec, parse_feature_gates, resolve_gates

CONFORMANCE = CASES.parent  # the repository's copy of the conformance suite


# ------------------------------------------------------------------ the flag's syntax
@pytest.mark.parametrize("text,want", [
    ("NodeDeclaredFeatures=true", {"NodeDeclaredFeatures": True}),
    ("A=true,B=false", {"A": True, "B": False}),
    (" A = T , B=0,", {"A": True, "B": False}),  # ParseBool's spellings; empty items are skipped
    ("A=1,A=False", {"A": False}),  # the last one wins, as a Go map's assignment
    ("", {}),
], ids=["one gate", "two gates", "ParseBool spellings and spaces", "a gate twice", "nothing"])
def test_the_flag_parses_as_feature_gate_set_does(text, want):
    assert parse_feature_gates(text) == want


@pytest.mark.parametrize("text,message", [
    ("NodeDeclaredFeatures", "missing bool value for NodeDeclaredFeatures"),
    ("NodeDeclaredFeatures=yes", ('invalid value of NodeDeclaredFeatures=yes, err: strconv.ParseBool: '
                                 'parsing "yes": invalid syntax')),
], ids=["no value", "not a bool"])
def test_bad_syntax_is_refused_with_upstreams_words(text, message):
    with pytest.raises(ValueError) as e:
        parse_feature_gates(text)
    assert str(e.value) == message


# ------------------------------------------------------------------ each release's defaults
@pytest.mark.parametrize("version,name,default,locked", [
    ("1.35", "NodeDeclaredFeatures", False, False),
    ("1.36", "NodeDeclaredFeatures", True, False),
    ("1.35", "DRAPrioritizedList", True, False),
    ("1.36", "DRAPrioritizedList", True, False),  # GA in 1.36, not locked
    ("1.35", "DRAAdminAccess", True, False),
    ("1.36", "DRAAdminAccess", True, True),
    ("1.35", "DynamicResourceAllocation", True, True),
    ("1.35", "MatchLabelKeysInPodAffinity", True, True),
    ("1.35", "MatchLabelKeysInPodTopologySpread", True, False),
    ("1.35", "NodeInclusionPolicyInPodTopologySpread", True, True),
    ("1.35", "SidecarContainers", True, True),
    ("1.35", "PodLevelResources", True, False),
    ("1.35", "InPlacePodVerticalScaling", True, True),
    ("1.35", "InPlacePodLevelResourcesVerticalScaling", False, False),
    ("1.36", "InPlacePodLevelResourcesVerticalScaling", True, False),
    ("1.36", "DRAConsumableCapacity", True, False),
    ("1.35", "StorageCapacityScoring", False, False),
])
def test_each_release_defaults_as_kube_features_go(version, name, default, locked):
    spec = gate_spec(version, name)
    assert spec is not None and (spec.default, spec.locked) == (default, locked)


def test_a_gate_one_release_lacks_is_unknown_there():
    assert gate_spec("1.35", "TopologyAwareWorkloadScheduling") is None
    assert gate_spec("1.36", "TopologyAwareWorkloadScheduling") is not None
    with pytest.raises(ValueError, match="^unrecognized feature gate: TopologyAwareWorkloadScheduling$"):
        resolve_gates("1.35", {"TopologyAwareWorkloadScheduling": False})


@pytest.mark.parametrize("folder,version", [("cases", "1.35"), ("cases-dra", "1.35"),
                                            ("cases-v1.36", "1.36")])
def test_the_default_gates_are_the_ones_the_recorded_runs_had(folder, version):
    """Every gate a conformance trace records is one the scheduler reads, with the release's default."""
    mine = default_config(version).feature_gates.scheduler_values()
    traces = sorted((CONFORMANCE / folder).glob("*.trace.json.gz"))
    assert traces
    for path in traces:
        recorded = json.loads(gzip.decompress(path.read_bytes()))["featureGates"]
        assert set(recorded) <= SCHEDULER_GATES, path.name
        assert {k: mine[k] for k in recorded} == recorded, path.name


# ------------------------------------------------------------------ what is refused
@pytest.mark.parametrize("version,gates,message", [
    ("1.35", {"NoSuchGate": True}, "unrecognized feature gate: NoSuchGate"),
    ("1.35", {"SidecarContainers": False}, ("cannot set feature gate SidecarContainers to false, feature is "
                                           "locked to true")),
    ("1.35", {"DynamicResourceAllocation": False}, ("cannot set feature gate DynamicResourceAllocation to "
                                                    "false, "
                                                   "feature is locked to true")),
    ("1.36", {"DRAAdminAccess": False}, ("cannot set feature gate DRAAdminAccess to false, feature is locked "
                                        "to true")),
    ("1.36", {"NodeDeclaredFeatures": False}, ("ExtendWebSocketsToKubelet is enabled, but depends on "
                                               "features "
                                              "that are disabled: [NodeDeclaredFeatures]")),
    ("1.35", {"SchedulerAsyncPreemption": False}, (
        "feature gate SchedulerAsyncPreemption=false: kube-scheduler reads it, and optisched models only its "
        "default in 1.35 (true; docs/fidelity.md)")),
    ("1.35", {"InPlacePodLevelResourcesVerticalScaling": True}, (
        "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: "
        "[NodeDeclaredFeatures]")),
], ids=["unknown", "locked", "DRA locked", "admin access locked in 1.36", "a dependency off",
        "a gate optisched does not model", "a dependency of an alpha gate off"])
def test_refused_gates_name_the_gate(version, gates, message):
    with pytest.raises(InputError) as e:
        default_config(version, gates)
    assert str(e.value) == f"--feature-gates: {message}"


def test_a_gate_the_scheduler_does_not_read_is_accepted_and_named():
    config = default_config("1.35", {"APIServerIdentity": False, "NodeDeclaredFeatures": False})
    assert config.feature_gates.others() == {"APIServerIdentity": False}
    assert config.profiles[0].plugins == default_config("1.35").profiles[0].plugins


@pytest.mark.parametrize("version,gates", [
    ("1.35", {"ContextualLogging": False, "LoggingAlphaOptions": True, "LoggingBetaOptions": False}),
    ("1.35", {"ClientsAllowCBOR": True, "WatchListClient": False, "InOrderInformers": False}),
    ("1.36", {"AtomicFIFO": True, "ClientsAllowCARotation": False, "NativeHistograms": True}),
], ids=["component-base logs", "client-go 1.35", "client-go and metrics 1.36"])
def test_the_client_go_and_component_base_gates_are_accepted_and_named(version, gates):
    """The gates ``server.go`` and ``pkg/features``' ``init`` add to the same flag change no decision."""
    config = default_config(version, gates)
    assert config.feature_gates.others() == gates
    assert config.profiles[0].plugins == default_config(version).profiles[0].plugins


def test_client_go_gates_follow_their_release():
    with pytest.raises(ValueError, match="^unrecognized feature gate: AtomicFIFO$"):
        resolve_gates("1.35", {"AtomicFIFO": True})
    with pytest.raises(ValueError, match="cannot set feature gate InOrderInformers to false, feature is locked"):
        resolve_gates("1.36", {"InOrderInformers": False})
    with pytest.raises(ValueError, match=r"StaleControllerConsistencyDaemonSet is enabled, but depends on "
                                         r"features that are disabled: \[AtomicFIFO\]"):
        resolve_gates("1.36", {"AtomicFIFO": False})


def test_all_alpha_and_all_beta_set_every_unset_gate_of_their_stage():
    """``setUnsetAlphaGates``: an explicit value wins; a scheduler gate moved off its default that optisched
    does not model is refused, naming the special gate that moved it."""
    quiet = resolve_gates("1.35", {"AllAlpha": False})
    assert quiet.others() == {"AllAlpha": False}
    assert not quiet.enabled("LoggingAlphaOptions") and quiet.enabled("LoggingBetaOptions")
    with pytest.raises(ValueError, match=r"^feature gate DRAConsumableCapacity=true \(set by AllAlpha=true\)"):
        resolve_gates("1.35", {"AllAlpha": True})
    with pytest.raises(ValueError, match=r"=false \(set by AllBeta=false\): kube-scheduler reads it"):
        resolve_gates("1.35", {"AllBeta": False})
    explicit = resolve_gates("1.36", {"AllAlpha": False, "LoggingAlphaOptions": True})
    assert explicit.enabled("LoggingAlphaOptions") and not explicit.enabled("ClientsAllowCBOR")
    assert explicit.enabled("WatchListClient")  # beta: AllAlpha leaves it


# ------------------------------------------------------------------ NodeDeclaredFeatures
def ndf_cluster():  # type: ignore[no-untyped-def]
    return cluster_from_objects([node("bare"), node("declares").declare(RESTART_ALL),
                                 restart_all(pod("needs")), pod("plain")])


def test_the_gate_on_adds_node_declared_features_to_1_35s_default_profile():
    plugins = default_config("1.35", {"NodeDeclaredFeatures": True}).profiles[0].plugins
    assert plugins["multiPoint"][-1] == "NodeDeclaredFeatures"
    assert "NodeDeclaredFeatures" in plugins["filter"]
    assert "NodeDeclaredFeatures" not in default_config("1.35").profiles[0].plugins["filter"]


@pytest.mark.parametrize("gate,want", [(False, "roomy"), (True, "declares")],
                         ids=["gate off: the best scored node", "gate on: only a declaring node"])
def test_a_1_35_greedy_run_follows_the_gate(gate, want):
    objs = [node("declares", cpu="2").declare(RESTART_ALL), node("roomy", cpu="64"),
            restart_all(pod("needs")).req(cpu="1")]
    result = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.35",
                                feature_gates={"NodeDeclaredFeatures": gate})
    assert result.placements()["default/needs"] == want


def test_a_1_35_pod_no_node_can_take_has_v1_35_4s_reason():
    objs = [node("bare"), restart_all(pod("needs"))]
    result = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.35",
                                feature_gates={"NodeDeclaredFeatures": True})
    why = result.unschedulable[result.state.pod_index["default/needs"]]
    assert why.startswith(f"0/1 nodes are available: 1 {REASON_1_35}RestartAllContainersOnContainerExits.")
    off = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.35")
    assert off.placements()["default/needs"] == "bare"


def test_a_1_35_optimal_run_follows_the_gate():
    objs = [node("bare"), node("declares").declare(RESTART_ALL), restart_all(pod("needs")), pod("plain")]
    on = optisched.solve(cluster_from_objects(objs), mode="optimal", kubernetes_version="1.35",
                         feature_gates={"NodeDeclaredFeatures": True}, time_limit=20, workers=1)
    assert on.placements()["default/needs"] == "declares" and on.violations == []
    objs = [node("bare"), restart_all(pod("needs"))]
    off = optisched.solve(cluster_from_objects(objs), mode="optimal", kubernetes_version="1.35",
                          time_limit=20, workers=1)
    assert off.placements()["default/needs"] == "bare"


# the gates on by default in 1.36 that depend on NodeDeclaredFeatures
NDF_OFF_1_36 = {"NodeDeclaredFeatures": False, "ExtendWebSocketsToKubelet": False,
                "InPlacePodLevelResourcesVerticalScaling": False,
                "InPlacePodVerticalScalingInitContainers": False,
                "RestartAllContainersOnContainerExits": False}


def test_1_36_with_the_gate_off_drops_the_plugin_and_ignores_declared_features():
    config = default_config("1.36", NDF_OFF_1_36)
    assert "NodeDeclaredFeatures" not in config.profiles[0].plugins["multiPoint"]
    objs = [node("declares", cpu="2").declare(RESTART_ALL), node("roomy", cpu="64"),
            restart_all(pod("needs")).req(cpu="1")]
    on = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.36")
    assert on.placements()["default/needs"] == "declares"
    off = optisched.schedule(cluster_from_objects(objs), kubernetes_version="1.36",
                             feature_gates=NDF_OFF_1_36)
    assert off.placements()["default/needs"] == "roomy"


# ------------------------------------------------------------------ pod-level requests
@pytest.mark.parametrize("mode", ["greedy", "optimal"])
@pytest.mark.parametrize("gate,placed", [(True, False), (False, True)],
                         ids=["gate on: the pod-level 3 cores do not fit",
                              "gate off: the containers' 100m fit"])
def test_pod_level_requests_follow_pod_level_resources(mode, gate, placed):
    objs = [node("n", cpu="2"), pod("p").req(cpu="100m").pod_level(cpu="3")]
    result = optisched.solve(cluster_from_objects(objs), mode=mode, time_limit=20, workers=1,
                             feature_gates={"PodLevelResources": gate})
    assert (result.placements()["default/p"] == "n") is placed


@pytest.mark.parametrize("version,gates,placed", [
    ("1.35", {}, True),
    ("1.35", {"NodeDeclaredFeatures": True, "InPlacePodLevelResourcesVerticalScaling": True}, False),
    ("1.36", {}, False),
    ("1.36", NDF_OFF_1_36, True),
], ids=["1.35: the pod-level spec", "1.35 with the gate: the resized requests",
        "1.36: the resized requests", "1.36 without the gate: the pod-level spec"])
def test_a_pod_level_resize_follows_its_gate(version, gates, placed):
    """The running pod's pod-level spec asks 1 core, its resize 3: the 2-core pod fits beside it on 4
    cores only while its spec counts."""
    objs = [node("n", cpu="4"), pod("running").on("n").req(cpu="100m").pod_level(cpu="1")
            .pod_status_resources(requests={"cpu": "3"}, allocated={"cpu": "3"}),
            pod("p").req(cpu="2")]
    result = optisched.schedule(cluster_from_objects(objs), kubernetes_version=version, feature_gates=gates)
    assert (result.placements()["default/p"] == "n") is placed


# ------------------------------------------------------------------ MatchLabelKeysInPodTopologySpread
def revisions_cluster():  # type: ignore[no-untyped-def]
    """zoneA holds two rev=1 pods, zoneB one rev=2 pod; the pending rev=2 pod spreads by zone, maxSkew 1,
    ``matchLabelKeys: [rev]``: counting its revision only, zoneB is full; counting every foo=bar pod,
    zoneA is."""
    foo = {"foo": "bar"}
    return cluster_from_objects([
        spread_node("node1", zone="zoneA"), spread_node("node2", zone="zoneA"),
        spread_node("node3", zone="zoneB"),
        spread_pod("old1", "node1", {**foo, "rev": "1"}), spread_pod("old2", "node2", {**foo, "rev": "1"}),
        spread_pod("new3", "node3", {**foo, "rev": "2"}),
        spread_pod("p", labels={**foo, "rev": "2"}, spread=[tsc(matchLabelKeys=["rev"])])])


@pytest.mark.parametrize("mode", ["greedy", "optimal"])
@pytest.mark.parametrize("gate,zone", [(True, "zoneA"), (False, "zoneB")],
                         ids=["gate on: its revision counts", "gate off: the selector alone counts"])
def test_match_label_keys_follow_their_gate(mode, gate, zone):
    # the API server's selector merge depends on the gate: off, it must be off too, as upstream requires
    gates = {"MatchLabelKeysInPodTopologySpread": gate,
             "MatchLabelKeysInPodTopologySpreadSelectorMerge": gate}
    result = optisched.solve(revisions_cluster(), mode=mode, time_limit=20, workers=1, feature_gates=gates)
    placed = result.placements()["default/p"]
    assert placed is not None and {"node1": "zoneA", "node2": "zoneA", "node3": "zoneB"}[placed] == zone


# ------------------------------------------------------------------ DRA
def claim_template(request: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [request]}}}}


PRIORITIZED = {"name": "gpu", "firstAvailable": [{"name": "any", "deviceClassName": "gpu", "count": 1}]}
ADMIN = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 1, "adminAccess": True}}


def dra_objects(request: dict) -> list[dict]:
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "ml", "labels": {"resource.kubernetes.io/admin-access": "true"}}}
    return [namespace, dra_node("n1"), gpus("n1", 1), device_class(), claim_template(request), dra_pod("a")]


@pytest.mark.parametrize("mode", ["greedy", "optimal"])
def test_first_available_needs_dra_prioritized_list(mode):
    cluster = cluster_from_objects(dra_objects(PRIORITIZED))
    on = optisched.solve(cluster, mode=mode, time_limit=20, workers=1)
    assert on.placements()["ml/a"] == "n1"
    off = optisched.solve(cluster, mode=mode, feature_gates={"DRAPrioritizedList": False}, time_limit=20,
                          workers=1)
    assert off.placements()["ml/a"] is None
    if mode == "greedy":
        why = off.unschedulable[off.state.pod_index["ml/a"]]
        assert why.startswith("0/1 nodes are available: resource claim ml/a-gpu")
        assert ", request gpu: has subrequests, but the DRAPrioritizedList feature is disabled" in why


def test_admin_access_needs_dra_admin_access():
    cluster = cluster_from_objects(dra_objects(ADMIN))
    on = optisched.schedule(cluster)
    assert on.placements()["ml/a"] == "n1"
    off = optisched.schedule(cluster, feature_gates={"DRAAdminAccess": False}, requeue=False)
    assert off.placements()["ml/a"] is None
    [cycle] = off.cycles
    assert cycle.message is not None
    assert cycle.message.startswith('running "DynamicResources" filter plugin: ')
    assert cycle.message.endswith(", request gpu: admin access is requested, but the feature is disabled")


# ------------------------------------------------------------------ the command line and traces
def test_every_scheduling_command_takes_the_flag():
    runner = CliRunner()
    for command in ("schedule", "compare", "explain", "preempt", "reschedule", "drain", "what-if", "inspect",
                    "deschedule", "pressure"):
        got = runner.invoke(app, [command, "--help"], terminal_width=200)
        assert got.exit_code == 0 and "--feature-gates" in got.output, command


@pytest.mark.parametrize("gates,message", [
    ("Nope=true", "unrecognized feature gate: Nope"),
    ("Nope", "missing bool value for Nope"),
    ("SidecarContainers=false",
     "cannot set feature gate SidecarContainers to false, feature is locked to true"),
], ids=["unknown", "no value", "locked"])
def test_a_bad_gate_exits_2_with_one_line(tmp_path, capsys, gates, message):
    path = tmp_path / "c.yaml"
    path.write_text("\n---\n".join(json.dumps(o) for o in [node("n"), pod("p")]))
    code, out, err = run_cli(["schedule", str(path), "--feature-gates", gates], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"error: --feature-gates: {message}"]


def test_the_trace_carries_the_gates_the_run_used(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    objs = [node("declares").declare(RESTART_ALL), node("bare"), restart_all(pod("p"))]
    path.write_text("\n---\n".join(json.dumps(o) for o in objs))
    trace = tmp_path / "t.json"
    code, _, err = run_cli(["schedule", str(path), "--trace", str(trace),
                            "--feature-gates", "NodeDeclaredFeatures=true"], capsys)
    assert code == 0, err
    doc = json.loads(trace.read_text())
    assert doc["featureGates"]["NodeDeclaredFeatures"] is True
    assert doc["featureGates"]["DRAPrioritizedList"] is True
    assert doc["final"]["default/p"] == "declares"


def test_inspect_names_every_gate(capsys):
    code, out, err = run_cli(["inspect", "--effective-profile", "--feature-gates",
                              "APIServerIdentity=false,DRAPrioritizedList=false"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "DRAPrioritizedList=false" in lines[1] and "NodeDeclaredFeatures=false" in lines[1]
    assert lines[2] == "# feature gates set that the scheduler does not read: APIServerIdentity=false"


def test_a_configuration_file_is_decoded_with_the_gates():
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    config = parse_config(doc, "<test>", "1.35", {"NodeDeclaredFeatures": True})
    assert config.profiles[0].feature_gates.enabled("NodeDeclaredFeatures")
    assert "NodeDeclaredFeatures" in config.profiles[0].plugins["preFilter"]


# ------------------------------------------------------------------ 1.37, from its release notes
def test_1_37s_gates_are_1_36s_with_its_graduations():
    gates = default_config("1.37").feature_gates
    assert gates.enabled("NodeDeclaredFeatures") and gate_spec("1.37", "NodeDeclaredFeatures").stage == "GA"
    assert gates.enabled("StorageCapacityScoring") and not default_config("1.36").feature_gates.enabled(
        "StorageCapacityScoring")
    same = {n: v for n, v in default_config("1.36").feature_gates.scheduler_values().items()
            if n not in ("NodeDeclaredFeatures", "StorageCapacityScoring")}
    assert {n: gates.enabled(n) for n in same} == same


@pytest.mark.parametrize("version,noticed", [("1.37", True), ("1.36", False)])
def test_every_1_37_run_says_its_rules_are_unverified(tmp_path, capsys, version, noticed):
    path = tmp_path / "c.yaml"
    path.write_text("\n---\n".join(json.dumps(o) for o in [node("n"), pod("p")]))
    code, _, err = run_cli(["schedule", str(path), "--kubernetes-version", version], capsys)
    assert code == 0, err
    line = ("warning: Kubernetes 1.37's rules are from its release notes and KEPs, not verified against the "
            "release's code (docs/fidelity.md)")
    assert (line in err.splitlines()) is noticed
    code, _, err = run_cli(["inspect", "--effective-profile", "--kubernetes-version", version], capsys)
    assert code == 0 and (line in err.splitlines()) is noticed


def test_a_1_37_run_through_the_python_api_warns_once():
    cluster = cluster_from_objects([node("n"), pod("p")])
    with pytest.warns(UserWarning, match=r"^Kubernetes 1\.37's rules are from its release notes") as seen:
        result = optisched.schedule(cluster, kubernetes_version="1.37")
    assert len(seen) == 1 and result.placements()["default/p"] == "n"
