"""KubeSchedulerConfiguration: defaults and merging as kube-scheduler v1.35, and clear rejections."""
from __future__ import annotations

import pytest
import yaml
from helpers.replay import CASES, case_names, load_trace

from optisched.errors import InputError
from optisched.profile import ScoringStrategyType, default_config, load_config, parse_config

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def case_config(name: str):
    for doc in yaml.safe_load_all((CASES / f"{name}.yaml").read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "KubeSchedulerConfiguration":
            return parse_config(doc)
    return default_config()


@pytest.mark.parametrize("name", case_names())
def test_plugins_and_weights_match_the_real_scheduler(name):
    """Every extension point's plugin list and every score weight, as the recorded scheduler expanded them."""
    trace = load_trace(name)
    profile = case_config(name).profiles[0]
    for point, plugins in trace["plugins"].items():
        assert list(profile.plugins[point]) == plugins, point
    assert dict(profile.score_weights) == trace["scoreWeights"]


def test_default_args():
    p = default_config().profiles[0]
    assert p.fit.strategy == ScoringStrategyType.LEAST_ALLOCATED
    assert [(r.name, r.weight) for r in p.fit.resources] == [("cpu", 1), ("memory", 1)]
    assert p.spread.defaulting_type == "System"
    assert [c["maxSkew"] for c in p.spread.effective_default_constraints] == [3, 5]
    assert p.inter_pod_affinity.hard_pod_affinity_weight == 1
    assert (p.preemption.min_candidate_nodes_percentage, p.preemption.min_candidate_nodes_absolute) == (10, 100)
    assert "VolumeBinding" in p.not_modelled and "NodeResourcesFit" not in p.not_modelled


def test_disabling_a_plugin_everywhere_and_a_point():
    cfg = parse_config({**API, "profiles": [{"plugins": {
        "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
        "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 7}]}}}]})
    p = cfg.profiles[0]
    assert p.plugins["score"] == ("NodeResourcesFit",)
    assert p.score_weights == {"NodeResourcesFit": 7}
    assert "ImageLocality" not in p.plugins["score"] and "NodeResourcesFit" in p.plugins["filter"]


def test_several_profiles_by_scheduler_name_and_percentage():
    cfg = parse_config({**API, "percentageOfNodesToScore": 30, "profiles": [
        {"schedulerName": "default-scheduler"}, {"schedulerName": "batch", "percentageOfNodesToScore": 70}]})
    assert cfg.profile_for("batch").effective_percentage(cfg.percentage_of_nodes_to_score) == 70
    assert cfg.profile_for("default-scheduler").effective_percentage(cfg.percentage_of_nodes_to_score) == 30
    assert cfg.profile_for("nope") is None


BAD = [
    ("wrong apiVersion", {**API, "apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, ".apiVersion"),
    ("percentage above 100", {**API, "percentageOfNodesToScore": 101}, ".percentageOfNodesToScore"),
    ("unknown scoring strategy", {**API, "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "Cheapest"}}}]}]}, ".profiles[0].pluginConfig[0].args.scoringStrategy.type"),
    ("RequestedToCapacityRatio without a shape", {**API, "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "RequestedToCapacityRatio"}}}]}]}, "requestedToCapacityRatio.shape"),
    ("shape score above 10", {**API, "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 0, "score": 11}]}}}}]}]}, ".shape[0].score"),
    ("unsorted shape", {**API, "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]}}}}]}]}, ".shape[1].utilization"),
    ("negative weight", {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}}}]},
     ".profiles[0].plugins.score.enabled[0].weight"),
    ("duplicate scheduler names", {**API, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
     ".profiles[1].schedulerName"),
    ("pluginConfig given twice", {**API, "profiles": [{"pluginConfig": [{"name": "InterPodAffinity", "args": {}},
                                                                        {"name": "InterPodAffinity", "args": {}}]}]},
     ".profiles[0].pluginConfig[1].name"),
    ("hardPodAffinityWeight out of range", {**API, "profiles": [{"pluginConfig": [{"name": "InterPodAffinity", "args": {
        "hardPodAffinityWeight": 101}}]}]}, ".args.hardPodAffinityWeight"),
    ("System defaulting with constraints", {**API, "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": {
        "defaultingType": "System", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]}}]}]}, ".args.defaultConstraints"),
    ("default constraint with a selector", {**API, "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": {
        "defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                          "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {}}]}}]}]},
     ".defaultConstraints[0].labelSelector"),
    ("both candidate minimums zero", {**API, "profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": {
        "minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}}]}]}, ".profiles[0].pluginConfig[0].args"),
    ("unknown extension point", {**API, "profiles": [{"plugins": {"sorting": {}}}]}, ".profiles[0].plugins.sorting"),
    ("bad addedAffinity operator", {**API, "profiles": [{"pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "a", "operator": "Like", "values": ["x"]}]}]}}}}]}]}, ".args.addedAffinity"),
]


@pytest.mark.parametrize("case,doc,path", BAD, ids=[b[0] for b in BAD])
def test_invalid_configs_name_the_field(case, doc, path):
    with pytest.raises(InputError) as err:
        parse_config(doc, "sched.yaml")
    msg = str(err.value)
    assert msg.startswith("sched.yaml: KubeSchedulerConfiguration ")
    assert path in msg


def test_load_config_reads_a_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump({**API, "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {
        "scoringStrategy": {"type": "MostAllocated"}}}]}]}))
    assert load_config(f).profiles[0].fit.strategy == ScoringStrategyType.MOST_ALLOCATED
    with pytest.raises(InputError, match="no such file or folder"):
        load_config(tmp_path / "missing.yaml")
