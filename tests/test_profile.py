"""KubeSchedulerConfiguration: defaults, merging and validation as kube-scheduler v1.35, checked against
the real scheduler's traces, and rejections that name the field."""
from __future__ import annotations

import dataclasses

import pytest
import yaml
from helpers.replay import CASES, CASES_1_36, case_names, load_trace

from optisched.errors import InputError
from optisched.profile import (
    NOT_MODELLED,
    BalancedAllocationArgs,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategyType,
    UtilizationShapePoint,
    default_config,
    for_version,
    load_config,
    parse_config,
)
from optisched.profile.defaults import DEFAULT_MULTIPOINT, IN_TREE, UNMODELLED_POINTS
from optisched.registry import plugin_points

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ALL_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve",
              "permit", "preBind", "bind", "postBind")


def profile_doc(**fields) -> dict:
    return {**API, "profiles": [fields]}


def args_doc(plugin: str, args) -> dict:
    return profile_doc(pluginConfig=[{"name": plugin, "args": args}])


def plugins_doc(**points) -> dict:
    return profile_doc(plugins=points)


# ------------------------------------------------------------------------------ against the real scheduler
def case_profile(name: str):
    """The profile the trace was recorded with: the scenario's config's first profile, else the default."""
    for doc in yaml.safe_load_all((CASES / f"{name}.yaml").read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "KubeSchedulerConfiguration":
            return parse_config(doc, f"{name}.yaml")
    return default_config()


def traced_args(trace: dict) -> dict[str, dict]:
    return {pc["name"]: pc["args"] for pc in trace["profile"]["pluginConfig"]}


def specs(resources: list[dict]) -> tuple[ResourceSpec, ...]:
    return tuple(ResourceSpec(r["name"], r["weight"]) for r in resources)


def expected_args(args: dict[str, dict]) -> dict[str, object]:
    """The trace's resolved pluginConfig (API form, defaults applied) as optisched's argument objects."""
    fit, ss = args["NodeResourcesFit"], args["NodeResourcesFit"]["scoringStrategy"]
    ipa, spread, pre = args["InterPodAffinity"], args["PodTopologySpread"], args["DefaultPreemption"]
    shape = (ss.get("requestedToCapacityRatio") or {}).get("shape") or []
    return {
        "fit": NodeResourcesFitArgs(
            tuple(fit.get("ignoredResources", ())), tuple(fit.get("ignoredResourceGroups", ())),
            ScoringStrategyType(ss["type"]), specs(ss["resources"]),
            tuple(UtilizationShapePoint(p["utilization"], p["score"]) for p in shape)),
        "balanced": BalancedAllocationArgs(specs(args["NodeResourcesBalancedAllocation"]["resources"])),
        "spread": PodTopologySpreadArgs(tuple(spread.get("defaultConstraints", ())), spread["defaultingType"]),
        "inter_pod_affinity": InterPodAffinityArgs(ipa["hardPodAffinityWeight"],
                                                   ipa["ignorePreferredTermsOfExistingPods"]),
        "node_affinity": NodeAffinityArgs(args["NodeAffinity"].get("addedAffinity")),
        "preemption": DefaultPreemptionArgs(pre["minCandidateNodesPercentage"], pre["minCandidateNodesAbsolute"]),
    }


@pytest.mark.parametrize("name", case_names())
def test_plugins_per_extension_point_match_the_real_scheduler(name):
    trace, profile = load_trace(name), case_profile(name).profiles[0]
    for point in ALL_POINTS:  # the trace leaves out points without plugins
        assert list(profile.plugins[point]) == trace["plugins"].get(point, []), point


@pytest.mark.parametrize("name", case_names())
def test_score_weights_match_the_real_scheduler(name):
    profile = case_profile(name).profiles[0]
    assert dict(profile.score_weights) == load_trace(name)["scoreWeights"]
    assert list(profile.score_weights) == list(profile.plugins["score"])


@pytest.mark.parametrize("name", case_names())
def test_resolved_plugin_args_match_the_real_scheduler(name):
    trace, config = load_trace(name), case_profile(name)
    profile = config.profiles[0]
    for attr, expected in expected_args(traced_args(trace)).items():
        assert getattr(profile, attr) == expected, attr
    assert profile.scheduler_name == trace["profile"]["schedulerName"]
    assert config.parallelism == trace["profile"]["parallelism"]
    # no scenario sets a percentage; the trace's global 100 is the recording harness's setting
    assert profile.percentage_of_nodes_to_score is None


def test_plugin_table_is_what_the_real_scheduler_registers():
    """The trace lists the default profile's plugins: every in-tree one but NodeDeclaredFeatures, which
    v1.35.4 registers with its gate off and leaves out of the defaults."""
    plugins = load_trace("001-resources")["plugins"]
    seen: dict[str, set[str]] = {}
    for point, names in plugins.items():
        for n in names:
            seen.setdefault(n, set()).add(point)
    defaults = IN_TREE - {"NodeDeclaredFeatures"}
    assert seen == {n: set(UNMODELLED_POINTS.get(n) or plugin_points(n)) for n in defaults}
    assert {n for n, _ in DEFAULT_MULTIPOINT} == defaults


def test_a_scenario_file_loads_as_a_config():
    cfg = load_config(CASES / "019-config+gpu+resources.yaml")
    assert cfg.source.endswith("019-config+gpu+resources.yaml")
    assert cfg.profiles[0].inter_pod_affinity.hard_pod_affinity_weight == 10


# ------------------------------------------------------------------------------ defaults
def test_default_config():
    cfg = default_config()
    (p,) = cfg.profiles
    assert (cfg.source, cfg.parallelism, cfg.percentage_of_nodes_to_score) == ("<default>", 16, None)
    assert p.scheduler_name == "default-scheduler" and p.percentage_of_nodes_to_score is None
    assert p.effective_percentage(cfg.percentage_of_nodes_to_score) == 0
    assert p.fit == NodeResourcesFitArgs() and p.fit.strategy is ScoringStrategyType.LEAST_ALLOCATED
    assert [(r.name, r.weight) for r in p.fit.resources] == [("cpu", 1), ("memory", 1)]
    assert p.balanced.resources == p.fit.resources
    assert p.spread.defaulting_type == "System"
    assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in p.spread.effective_default_constraints] \
        == [("kubernetes.io/hostname", 3, "ScheduleAnyway"), ("topology.kubernetes.io/zone", 5, "ScheduleAnyway")]
    assert p.inter_pod_affinity == InterPodAffinityArgs(1, False)
    assert p.node_affinity.added_affinity is None
    assert p.preemption == DefaultPreemptionArgs(10, 100)
    assert set(p.not_modelled) == NOT_MODELLED
    assert p.enabled("filter", "NodeResourcesFit") and not p.enabled("score", "NodePorts")
    assert p.plugins["multiPoint"][:2] == ("SchedulingGates", "PrioritySort")


def test_profiles_are_frozen():
    p = default_config().profiles[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.scheduler_name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.plugins["score"] = ()  # type: ignore[index]
    assert hash(p.plugins) == hash(default_config().profiles[0].plugins)


def test_scoring_strategy_names():
    assert ScoringStrategyType.LeastAllocated is ScoringStrategyType.LEAST_ALLOCATED
    assert [t.value for t in ScoringStrategyType] == ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


# ------------------------------------------------------------------------------ merging plugin sets
DEFAULT_SCORE = ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
                 "InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality"]
DEFAULT_FILTER = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                  "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                  "PodTopologySpread", "InterPodAffinity", "DynamicResources"]

MERGES = [
    # (id, plugins, point, expected list at point, expected weights subset)
    ("score enabled with weights goes first, in its order",
     {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}, {"name": "TaintToleration", "weight": 4}]}},
     "score", ["ImageLocality", "TaintToleration"] + [n for n in DEFAULT_SCORE
                                                      if n not in ("ImageLocality", "TaintToleration")],
     {"ImageLocality": 5, "TaintToleration": 4, "NodeAffinity": 2}),
    ("score enabled without weight gets 1, not the default",
     {"score": {"enabled": [{"name": "TaintToleration"}]}}, "score", None, {"TaintToleration": 1}),
    ("disabling * at score keeps only the explicit ones",
     {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 7}]}},
     "score", ["NodeResourcesFit"], {"NodeResourcesFit": 7}),
    ("disabling * at score leaves filter alone", {"score": {"disabled": [{"name": "*"}]}}, "filter",
     DEFAULT_FILTER, {}),
    ("disabled at multiPoint is gone everywhere", {"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}},
     "preFilter", ["NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                   "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"], {}),
    ("disabled at multiPoint but enabled at filter runs last there",
     {"multiPoint": {"disabled": [{"name": "NodeName"}]}, "filter": {"enabled": [{"name": "NodeName"}]}},
     "filter", [n for n in DEFAULT_FILTER if n != "NodeName"] + ["NodeName"], {}),
    ("disabled at one point only", {"filter": {"disabled": [{"name": "NodePorts"}]}}, "filter",
     [n for n in DEFAULT_FILTER if n != "NodePorts"], {}),
    ("re-enabled at a point runs first there", {"filter": {"enabled": [{"name": "InterPodAffinity"}]}},
     "filter", ["InterPodAffinity"] + [n for n in DEFAULT_FILTER if n != "InterPodAffinity"], {}),
    ("multiPoint re-configuration keeps the place and takes the weight",
     {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 10}]}}, "score", DEFAULT_SCORE,
     {"TaintToleration": 10}),
    ("multiPoint re-configuration without weight means 1",
     {"multiPoint": {"enabled": [{"name": "TaintToleration"}]}}, "score", DEFAULT_SCORE, {"TaintToleration": 1}),
    ("multiPoint disabled * with a small set",
     {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
         {"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeResourcesFit", "weight": 3},
         {"name": "NodeName"}]}},
     "filter", ["NodeResourcesFit", "NodeName"], {"NodeResourcesFit": 3}),
    ("a weight of 0 means 1", {"score": {"enabled": [{"name": "ImageLocality", "weight": 0}]}}, "score", None,
     {"ImageLocality": 1}),
]


@pytest.mark.parametrize("plugins,point,expected,weights", [m[1:] for m in MERGES], ids=[m[0] for m in MERGES])
def test_plugin_sets_merge_as_upstream(plugins, point, expected, weights):
    p = parse_config(plugins_doc(**plugins)).profiles[0]
    if expected is not None:
        assert list(p.plugins[point]) == expected
    assert {k: p.score_weights[k] for k in weights} == weights
    assert list(p.score_weights) == list(p.plugins["score"])


def test_not_modelled_plugins_are_reported():
    p = parse_config(plugins_doc()).profiles[0]
    assert "DynamicResources" not in p.not_modelled and "VolumeBinding" not in p.not_modelled
    assert "SchedulingGates" not in p.not_modelled  # the engine keeps gated pods pending
    assert "NodeResourcesFit" not in p.not_modelled


def test_several_profiles_by_scheduler_name_and_percentage():
    cfg = parse_config({**API, "percentageOfNodesToScore": 30, "parallelism": 4, "profiles": [
        {"schedulerName": "default-scheduler"}, {"schedulerName": "batch", "percentageOfNodesToScore": 70,
                                                 "plugins": {"score": {"disabled": [{"name": "*"}]}}}]})
    assert cfg.parallelism == 4 and [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "batch"]
    assert cfg.profile_for("batch").effective_percentage(cfg.percentage_of_nodes_to_score) == 70
    assert cfg.profile_for("default-scheduler").effective_percentage(cfg.percentage_of_nodes_to_score) == 30
    assert cfg.profile_for("batch").plugins["score"] == () and cfg.profile_for("nope") is None


# ------------------------------------------------------------------------------ plugin args
RTCR = {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100}]}}
ARGS = [
    ("MostAllocated", "NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}}, "fit",
     NodeResourcesFitArgs(strategy=ScoringStrategyType.MostAllocated)),
    ("RequestedToCapacityRatio, weight 0 is 1, score 0 by default", "NodeResourcesFit", {"scoringStrategy": RTCR},
     "fit", NodeResourcesFitArgs(strategy=ScoringStrategyType.RequestedToCapacityRatio,
                                 resources=(ResourceSpec("cpu", 3), ResourceSpec("memory", 1)),
                                 shape=(UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)))),
    ("ignored resources", "NodeResourcesFit", {"ignoredResources": ["example.com/foo"],
                                               "ignoredResourceGroups": ["example.org"]}, "fit",
     NodeResourcesFitArgs(("example.com/foo",), ("example.org",))),
    ("null scoringStrategy is the default", "NodeResourcesFit", {"scoringStrategy": None}, "fit",
     NodeResourcesFitArgs()),
    ("typed args", "NodeResourcesFit", {**API, "kind": "NodeResourcesFitArgs"}, "fit", NodeResourcesFitArgs()),
    ("balanced resources", "NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}, {"name": "gpu",
                                                                                               "weight": 1}]},
     "balanced", BalancedAllocationArgs((ResourceSpec("cpu", 1), ResourceSpec("gpu", 1)))),
    ("List defaulting", "PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     "spread", PodTopologySpreadArgs(({"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "DoNotSchedule"},), "List")),
    ("inter-pod affinity", "InterPodAffinity", {"hardPodAffinityWeight": 0,
                                                "ignorePreferredTermsOfExistingPods": True},
     "inter_pod_affinity", InterPodAffinityArgs(0, True)),
    ("added affinity", "NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}},
     "node_affinity", NodeAffinityArgs({"requiredDuringSchedulingIgnoredDuringExecution": {
         "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}})),
    ("preemption", "DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5},
     "preemption", DefaultPreemptionArgs(0, 5)),
    ("out-of-tree args are kept out", "Coscheduling", {"permitWaitingTimeSeconds": 10}, "fit",
     NodeResourcesFitArgs()),
]


@pytest.mark.parametrize("plugin,args,attr,expected", [a[1:] for a in ARGS], ids=[a[0] for a in ARGS])
def test_plugin_args(plugin, args, attr, expected):
    assert getattr(parse_config(args_doc(plugin, args)).profiles[0], attr) == expected


# ------------------------------------------------------------------------------ rejections
FIT = "NodeResourcesFit"
ARGS_PATH = ".profiles[0].pluginConfig[0].args"
SS = f"{ARGS_PATH}.scoringStrategy"
C0 = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
BAD = [
    # (id, document, field path, part of the message)
    ("wrong apiVersion", {**API, "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, ".apiVersion",
     "expected apiVersion kubescheduler.config.k8s.io/v1"),
    ("wrong kind", {**API, "kind": "SchedulerConfig"}, ".kind", "expected kind KubeSchedulerConfiguration"),
    ("not a mapping", [API], "", "expected a mapping, got a list"),
    ("unknown top-level field", {**API, "percentOfNodes": 5}, ".percentOfNodes", "unknown field"),
    ("parallelism as text", {**API, "parallelism": "16"}, ".parallelism", "'16' is not an integer"),
    ("parallelism zero", {**API, "parallelism": 0}, ".parallelism", "must be at least 1"),
    ("profiles as a mapping", {**API, "profiles": {"schedulerName": "x"}}, ".profiles", "expected a list"),
    ("percentage above 100", {**API, "percentageOfNodesToScore": 101}, ".percentageOfNodesToScore",
     "not in the valid range [0, 100]"),
    ("profile percentage negative", profile_doc(percentageOfNodesToScore=-1),
     ".profiles[0].percentageOfNodesToScore", "[0, 100]"),
    ("backoff max below initial", {**API, "podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2},
     ".podMaxBackoffSeconds", "at least 5"),
    ("extenders", {**API, "extenders": [{"urlPrefix": "http://x"}]}, ".extenders", "not supported"),
    ("empty scheduler name", profile_doc(schedulerName=""), ".profiles[0].schedulerName", "non-empty string"),
    ("unnamed second profile", {**API, "profiles": [{"schedulerName": "a"}, {}]}, ".profiles[1].schedulerName",
     "required"),
    ("duplicate scheduler names", {**API, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
     ".profiles[1].schedulerName", "duplicate schedulerName 'a'"),
    ("different queueSort per profile", {**API, "profiles": [{"schedulerName": "a"}, {
        "schedulerName": "b", "plugins": {"queueSort": {"disabled": [{"name": "*"}],
                                                        "enabled": [{"name": "PrioritySort"}]}}}]},
     ".profiles[1].plugins.queueSort", "same for all profiles"),
    ("unknown profile field", profile_doc(plugin={}), ".profiles[0].plugin", "unknown field"),
    ("unknown extension point", plugins_doc(sorting={}), ".profiles[0].plugins.sorting", "unknown field"),
    ("negative plugin weight", plugins_doc(score={"enabled": [{"name": "ImageLocality", "weight": -1}]}),
     ".profiles[0].plugins.score.enabled[0].weight", "-1 must be at least 0"),
    ("plugin weight as text", plugins_doc(score={"enabled": [{"name": "ImageLocality", "weight": "high"}]}),
     ".profiles[0].plugins.score.enabled[0].weight", "not an integer"),
    ("plugin without a name", plugins_doc(filter={"enabled": [{"weight": 1}]}),
     ".profiles[0].plugins.filter.enabled[0].name", "non-empty string"),
    ("plugin enabled twice", plugins_doc(filter={"enabled": [{"name": "NodeName"}, {"name": "NodeName"}]}),
     ".profiles[0].plugins.filter.enabled[1].name", "already enabled at filter"),
    ("plugin at a point it does not extend", plugins_doc(score={"enabled": [{"name": "NodePorts"}]}),
     ".profiles[0].plugins.score.enabled[0].name", "does not extend score"),
    ("removed plugin", plugins_doc(filter={"enabled": [{"name": "EBSLimits"}]}),
     ".profiles[0].plugins.filter.enabled[0].name", "removed"),
    ("no queueSort plugin", plugins_doc(queueSort={"disabled": [{"name": "*"}]}),
     ".profiles[0].plugins.queueSort", "exactly one queueSort plugin must be enabled, got 0"),
    ("a second queueSort plugin, which does not exist", plugins_doc(queueSort={"enabled": [{"name": "MySort"}]}),
     ".profiles[0].plugins.queueSort.enabled[0].name", "plugin 'MySort' does not exist"),
    ("no bind plugin", plugins_doc(bind={"disabled": [{"name": "*"}]}), ".profiles[0].plugins.bind",
     "at least one bind plugin"),
    ("pluginConfig given twice", profile_doc(pluginConfig=[{"name": "InterPodAffinity", "args": {}},
                                                           {"name": "InterPodAffinity", "args": {}}]),
     ".profiles[0].pluginConfig[1].name", "given twice"),
    ("args not a mapping", args_doc(FIT, [1]), ARGS_PATH, "expected a mapping"),
    ("args of another kind", args_doc("InterPodAffinity", {"kind": "NodeAffinityArgs"}), f"{ARGS_PATH}.kind",
     "InterPodAffinityArgs"),
    ("unknown args field", args_doc(FIT, {"scoringStrategyy": {}}), f"{ARGS_PATH}.scoringStrategyy",
     "unknown field"),
    ("unknown scoring strategy", args_doc(FIT, {"scoringStrategy": {"type": "Cheapest"}}), f"{SS}.type",
     "'Cheapest' is not one of LeastAllocated, MostAllocated, RequestedToCapacityRatio"),
    ("scoring strategy without type", args_doc(FIT, {"scoringStrategy": {"resources": [{"name": "cpu"}]}}),
     f"{SS}.type", "required"),
    ("resource weight above 100", args_doc(FIT, {"scoringStrategy": {
        "type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}}), f"{SS}.resources[0].weight",
     "[1, 100]"),
    ("RequestedToCapacityRatio without parameters", args_doc(FIT, {"scoringStrategy": {
        "type": "RequestedToCapacityRatio"}}), f"{SS}.requestedToCapacityRatio", "required"),
    ("empty shape", args_doc(FIT, {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}}),
     f"{SS}.requestedToCapacityRatio.shape", "at least one point"),
    ("shape score above 10", args_doc(FIT, {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0,
                                                                                   "score": 11}]}}}),
     f"{SS}.requestedToCapacityRatio.shape[0].score", "[0, 10]"),
    ("shape utilization above 100", args_doc(FIT, {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 0, "score": 1}, {"utilization": 101, "score": 2}]}}}),
     f"{SS}.requestedToCapacityRatio.shape[1].utilization", "[0, 100]"),
    ("unsorted shape", args_doc(FIT, {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}}}),
     f"{SS}.requestedToCapacityRatio.shape[1].utilization", "increasing order"),
    ("resource group with a slash", args_doc(FIT, {"ignoredResourceGroups": ["example.com/x"]}),
     f"{ARGS_PATH}.ignoredResourceGroups[0]", "can't contain '/'"),
    ("ignored resource not a name", args_doc(FIT, {"ignoredResources": ["bad name!"]}),
     f"{ARGS_PATH}.ignoredResources[0]", "not a qualified name"),
    ("balanced weight other than 1", args_doc("NodeResourcesBalancedAllocation", {"resources": [
        {"name": "cpu", "weight": 2}]}), f"{ARGS_PATH}.resources[0].weight", "must be 1"),
    ("balanced resource twice", args_doc("NodeResourcesBalancedAllocation", {"resources": [
        {"name": "cpu"}, {"name": "cpu"}]}), f"{ARGS_PATH}.resources[1].name", "duplicate"),
    ("unknown defaulting type", args_doc("PodTopologySpread", {"defaultingType": "Auto"}),
     f"{ARGS_PATH}.defaultingType", "'Auto' is not one of System, List"),
    ("System defaulting with constraints", args_doc("PodTopologySpread", {"defaultConstraints": [C0]}),
     f"{ARGS_PATH}.defaultingType", "not empty"),
    ("default constraint maxSkew 0", args_doc("PodTopologySpread", {
        "defaultingType": "List", "defaultConstraints": [{**C0, "maxSkew": 0}]}),
     f"{ARGS_PATH}.defaultConstraints[0].maxSkew", "at least 1"),
    ("default constraint bad action", args_doc("PodTopologySpread", {
        "defaultingType": "List", "defaultConstraints": [{**C0, "whenUnsatisfiable": "Later"}]}),
     f"{ARGS_PATH}.defaultConstraints[0].whenUnsatisfiable", "not one of DoNotSchedule, ScheduleAnyway"),
    ("default constraint with a selector", args_doc("PodTopologySpread", {
        "defaultingType": "List", "defaultConstraints": [{**C0, "labelSelector": {}}]}),
     f"{ARGS_PATH}.defaultConstraints[0].labelSelector", "must not have a selector"),
    ("default constraint twice", args_doc("PodTopologySpread", {
        "defaultingType": "List", "defaultConstraints": [C0, {**C0, "maxSkew": 2}]}),
     f"{ARGS_PATH}.defaultConstraints[1]", "duplicate constraint"),
    ("hardPodAffinityWeight above 100", args_doc("InterPodAffinity", {"hardPodAffinityWeight": 101}),
     f"{ARGS_PATH}.hardPodAffinityWeight", "[0, 100]"),
    ("ignorePreferredTerms as text", args_doc("InterPodAffinity", {"ignorePreferredTermsOfExistingPods": "yes"}),
     f"{ARGS_PATH}.ignorePreferredTermsOfExistingPods", "true or false"),
    ("bad addedAffinity operator", args_doc("NodeAffinity", {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "a", "operator": "Like", "values": ["x"]}]}]}}}),
     (f"{ARGS_PATH}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
      ".matchExpressions[0].operator"), "'Like'"),
    ("addedAffinity value that is not a label value", args_doc("NodeAffinity", {"addedAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "a", "operator": "In", "values": ["x y"]}]}}]}}),
     f"{ARGS_PATH}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference",
     'values[0][a]: Invalid value: "x y": a valid label must be an empty string'),
    ("candidate percentage above 100", args_doc("DefaultPreemption", {"minCandidateNodesPercentage": 101}),
     f"{ARGS_PATH}.minCandidateNodesPercentage", "[0, 100]"),
    ("negative candidate minimum", args_doc("DefaultPreemption", {"minCandidateNodesAbsolute": -1}),
     f"{ARGS_PATH}.minCandidateNodesAbsolute", "at least 0"),
    ("both candidate minimums zero", args_doc("DefaultPreemption", {"minCandidateNodesPercentage": 0,
                                                                    "minCandidateNodesAbsolute": 0}),
     f"{ARGS_PATH}.minCandidateNodesPercentage", "cannot be zero"),
    ("volume binding shape", args_doc("VolumeBinding", {"shape": [{"utilization": 0, "score": 0}]}),
     f"{ARGS_PATH}.shape", "StorageCapacityScoring"),
    ("a score plugin that does not exist", plugins_doc(score={"enabled": [{"name": "MyScore", "weight": 4}]}),
     ".profiles[0].plugins.score.enabled[0].name", "plugin 'MyScore' does not exist"),
    ("a multiPoint plugin that does not exist", plugins_doc(multiPoint={"enabled": [{"name": "MyPlugin"}]}),
     ".profiles[0].plugins.multiPoint.enabled[0].name", "plugin 'MyPlugin' does not exist"),
    ("DRA filter timeout not a duration", args_doc("DynamicResources", {"filterTimeout": "ten"}),
     f"{ARGS_PATH}.filterTimeout", "not a duration"),
]


@pytest.mark.parametrize("doc,path,message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_configs_name_the_field(doc, path, message):
    with pytest.raises(InputError) as err:
        parse_config(doc, "sched.yaml")
    where = f"sched.yaml: KubeSchedulerConfiguration {path}: " if path else "sched.yaml: KubeSchedulerConfiguration: "
    assert str(err.value).startswith(where)
    assert message in str(err.value)


def test_the_documented_message():
    with pytest.raises(InputError) as err:
        parse_config(args_doc(FIT, {"scoringStrategy": {"type": "Foo"}}), "sched.yaml")
    assert str(err.value) == ("sched.yaml: KubeSchedulerConfiguration .profiles[0].pluginConfig[0].args"
                              ".scoringStrategy.type: 'Foo' is not one of LeastAllocated, MostAllocated, "
                              "RequestedToCapacityRatio")


# ------------------------------------------------------------------------------ files
def test_load_config_reads_a_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(args_doc(FIT, {"scoringStrategy": {"type": "MostAllocated"}})))
    cfg = load_config(f)
    assert cfg.profiles[0].fit.strategy is ScoringStrategyType.MostAllocated and cfg.source == str(f)


@pytest.mark.parametrize("text,message", [
    (None, "no such file or folder"),
    ("profiles: [\n", "invalid YAML"),
    ("kind: Pod\n---\nkind: Node\n", "expected exactly one KubeSchedulerConfiguration document, found 0"),
    ("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", "KubeSchedulerConfiguration .apiVersion: 'v1'"),
], ids=["missing file", "bad YAML", "no config document", "wrong apiVersion"])
def test_load_config_errors_name_the_file(tmp_path, text, message):
    f = tmp_path / "sched.yaml"
    if text is not None:
        f.write_text(text)
    with pytest.raises(InputError) as err:
        load_config(f)
    assert str(err.value).startswith(f"{f}: ") and message in str(err.value)


# --- Kubernetes releases ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text,minor", [("1.36", "1.36"), ("v1.36", "1.36"), ("v1.36.2", "1.36"), ("1.35.4", "1.35")])
def test_a_release_is_named_by_its_minor_version(text, minor):
    from optisched.profile.releases import parse_version

    assert parse_version(text) == minor


@pytest.mark.parametrize("text", ["1.34", "2", "latest", "v1.36.x"])
def test_a_release_optisched_does_not_reproduce_is_refused_naming_the_ones_it_does(text):
    from optisched.profile.releases import parse_version

    with pytest.raises(ValueError, match=r"versions: 1\.35, 1\.36"):
        parse_version(text)


def test_1_36_appends_node_declared_features_to_the_defaults_as_its_traces_list_it():
    config = default_config("1.36")
    profile = config.profiles[0]
    traced = load_trace("001-resources", CASES_1_36)["plugins"]
    assert {p: list(profile.plugins[p]) for p in traced} == traced
    assert profile.kubernetes_version == config.kubernetes_version == "1.36"
    assert "NodeDeclaredFeatures" not in profile.not_modelled  # optisched.plugins.node_declared_features
    assert "NodeDeclaredFeatures" not in default_config().profiles[0].plugins["filter"]


def test_a_configuration_is_decoded_again_for_another_release():
    doc = {**API, "profiles": [{"plugins": {
        "multiPoint": {"disabled": [{"name": "ImageLocality"}]}}}]}
    old = parse_config(doc, "cfg.yaml")
    new = for_version(old, "1.36")
    assert new.source == "cfg.yaml" and new.kubernetes_version == "1.36"
    assert "NodeDeclaredFeatures" in new.profiles[0].plugins["filter"]
    assert "ImageLocality" not in new.profiles[0].plugins["score"]
    assert for_version(new, "1.35") == old


def test_a_plugin_only_later_defaults_enable_is_in_tree_in_the_earlier_release_too():
    """v1.35.4's NewInTreeRegistry has NodeDeclaredFeatures (gated off: it does nothing there), so a 1.35
    configuration may name it; a name no release registers is still refused."""
    doc = {**API, "profiles": [{"plugins": {
        "filter": {"enabled": [{"name": "NodeDeclaredFeatures"}]}}}]}
    for version in ("1.35", "1.36"):
        profile = parse_config(doc, "cfg.yaml", version).profiles[0]
        assert "NodeDeclaredFeatures" in profile.plugins["filter"]
        assert "NodeDeclaredFeatures" not in profile.not_modelled
    doc["profiles"][0]["plugins"]["filter"]["enabled"][0]["name"] = "NodeDeclaredFeature"
    with pytest.raises(InputError, match="does not exist in kube-scheduler v1.35.4"):
        parse_config(doc, "cfg.yaml")
