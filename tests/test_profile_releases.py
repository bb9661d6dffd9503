"""Each release's KubeSchedulerConfiguration: v1.36.2's defaults_test.go tables (TestSchedulerDefaults,
TestPluginArgsDefaults) against the effective configuration optisched prints, the fields and checks that
differ from v1.35.4 (read from its defaults.go, types.go and validation_pluginargs.go), and ``inspect
--effective-profile``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from builders import run_cli

from optisched.api import load
from optisched.errors import InputError
from optisched.profile import default_config, for_version, parse_config
from optisched.profile.effective import effective_document, go_duration
from optisched.profile.releases import UNVERIFIED
from optisched.profile.releases import VERSIONS as ALL_VERSIONS

# the upstream tables here are v1.35.4's and v1.36.2's: the releases read from their code
VERSIONS = tuple(v for v in ALL_VERSIONS if v not in UNVERIFIED)
API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
V1 = "kubescheduler.config.k8s.io/v1"
CASES = Path(__file__).parent / "data" / "conformance" / "cases"


def args(kind: str, **fields: object) -> dict:
    return {"apiVersion": V1, "kind": f"{kind}Args", **fields}


CPU_MEMORY = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
# TestSchedulerDefaults' pluginConfigs: the args every default profile gets, by plugin name
PLUGIN_CONFIGS_1_36 = [
    {
        "name": "DefaultPreemption",
        "args": args("DefaultPreemption", minCandidateNodesPercentage=10, minCandidateNodesAbsolute=100),
    },
    {
        "name": "DynamicResources",
        "args": args("DynamicResources", filterTimeout="10s", bindingTimeout="10m0s"),
    },
    {
        "name": "InterPodAffinity",
        "args": args("InterPodAffinity", hardPodAffinityWeight=1, ignorePreferredTermsOfExistingPods=False),
    },
    {"name": "NodeAffinity", "args": args("NodeAffinity")},
    {
        "name": "NodeResourcesBalancedAllocation",
        "args": args("NodeResourcesBalancedAllocation", resources=CPU_MEMORY),
    },
    {
        "name": "NodeResourcesFit",
        "args": args("NodeResourcesFit", scoringStrategy={"type": "LeastAllocated", "resources": CPU_MEMORY}),
    },
    {"name": "PodTopologySpread", "args": args("PodTopologySpread", defaultingType="System")},
    {"name": "VolumeBinding", "args": args("VolumeBinding", bindTimeoutSeconds=600)},
]
# v1.35.4: DRADeviceBindingConditions is alpha and off, so SetDefaults_DynamicResourcesArgs sets no
# bindingTimeout
PLUGIN_CONFIGS = {
    "1.36": PLUGIN_CONFIGS_1_36,
    "1.35": [
        {"name": "DynamicResources", "args": args("DynamicResources", filterTimeout="10s")}
        if pc["name"] == "DynamicResources"
        else pc
        for pc in PLUGIN_CONFIGS_1_36
    ],
}
# getDefaultPlugins().MultiPoint of each release (1.36 appends NodeDeclaredFeatures, its gate beta and on)
MULTIPOINT_1_35 = [
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
]
MULTIPOINT = {"1.35": MULTIPOINT_1_35, "1.36": [*MULTIPOINT_1_35, ("NodeDeclaredFeatures", None)]}


def entries(doc: dict, point: str) -> list[tuple[str, int | None]]:
    return [(e["name"], e.get("weight")) for e in doc["plugins"][point]["enabled"]]


SCHEDULER_DEFAULTS = [
    ("empty config", {}, {"parallelism": 16, "percentageOfNodesToScore": 0}, [{}]),
    ("no scheduler name", {"profiles": [{}]}, {"parallelism": 16, "percentageOfNodesToScore": 0}, [{}]),
    (
        "set non default parallelism",
        {"parallelism": 8},
        {"parallelism": 8, "percentageOfNodesToScore": 0},
        [{}],
    ),
    (
        "set non default global percentageOfNodesToScore",
        {"percentageOfNodesToScore": 50},
        {"parallelism": 16, "percentageOfNodesToScore": 50},
        [{}],
    ),
    (
        "set non default profile percentageOfNodesToScore",
        {"profiles": [{"percentageOfNodesToScore": 50}]},
        {"parallelism": 16, "percentageOfNodesToScore": 0},
        [{"percentageOfNodesToScore": 50}],
    ),
    (
        "set non default global and profile percentageOfNodesToScore",
        {"percentageOfNodesToScore": 10, "profiles": [{"percentageOfNodesToScore": 50}]},
        {"parallelism": 16, "percentageOfNodesToScore": 10},
        [{"percentageOfNodesToScore": 50}],
    ),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("given", "top", "profiles"), [c[1:] for c in SCHEDULER_DEFAULTS], ids=[c[0] for c in SCHEDULER_DEFAULTS]
)
def test_scheduler_defaults_as_upstream(version: str, given: dict, top: dict, profiles: list[dict]) -> None:
    doc = effective_document(parse_config({**API, **given}, "sched.yaml", version))
    assert {k: doc[k] for k in top} == top
    assert (doc["podInitialBackoffSeconds"], doc["podMaxBackoffSeconds"]) == (1, 10)
    assert len(doc["profiles"]) == len(profiles)
    for got, want in zip(doc["profiles"], profiles):
        assert got["schedulerName"] == "default-scheduler"
        assert got.get("percentageOfNodesToScore") == want.get("percentageOfNodesToScore")
        assert entries(got, "multiPoint") == MULTIPOINT[version]
        assert got["pluginConfig"] == PLUGIN_CONFIGS[version]


def plugin_args(version: str, plugin: str, given: dict) -> dict:
    doc = parse_config(
        {**API, "profiles": [{"pluginConfig": [{"name": plugin, "args": given}]}]}, "s.yaml", version
    )
    pc = {e["name"]: e["args"] for e in effective_document(doc)["profiles"][0]["pluginConfig"]}
    out = dict(pc[plugin])
    assert (out.pop("apiVersion"), out.pop("kind")) == (V1, f"{plugin}Args")
    return out


# TestPluginArgsDefaults (the rows a valid configuration can hold): (name, plugin, in, want)
ARGS_DEFAULTS = [
    (
        "DefaultPreemptionArgs empty",
        "DefaultPreemption",
        {},
        {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    ),
    (
        "DefaultPreemptionArgs with value",
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 50},
        {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 100},
    ),
    (
        "InterPodAffinityArgs empty",
        "InterPodAffinity",
        {},
        {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    ),
    (
        "InterPodAffinityArgs explicit 0",
        "InterPodAffinity",
        {"hardPodAffinityWeight": 0},
        {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": False},
    ),
    (
        "InterPodAffinityArgs with value",
        "InterPodAffinity",
        {"hardPodAffinityWeight": 5},
        {"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": False},
    ),
    (
        "NodeResourcesBalancedAllocationArgs resources empty",
        "NodeResourcesBalancedAllocation",
        {},
        {"resources": CPU_MEMORY},
    ),
    (
        "NodeResourcesBalancedAllocationArgs with scalar resource",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "scalar.io/scalar1", "weight": 1}]},
        {"resources": [{"name": "scalar.io/scalar1", "weight": 1}]},
    ),
    (
        "NodeResourcesBalancedAllocationArgs with mixed resources",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "scalar.io/scalar1", "weight": 1}]},
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "scalar.io/scalar1", "weight": 1}]},
    ),
    (
        "NodeResourcesBalancedAllocationArgs have resource no weight",
        "NodeResourcesBalancedAllocation",
        {
            "resources": [
                {"name": "cpu"},
                {"name": "scalar.io/scalar0"},
                {"name": "scalar.io/scalar1", "weight": 1},
            ]
        },
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "scalar.io/scalar0", "weight": 1},
                {"name": "scalar.io/scalar1", "weight": 1},
            ]
        },
    ),
    ("PodTopologySpreadArgs resources empty", "PodTopologySpread", {}, {"defaultingType": "System"}),
    (
        "NodeResourcesFitArgs not set",
        "NodeResourcesFit",
        {},
        {"scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEMORY}},
    ),
    (
        "NodeResourcesFitArgs Resources empty",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated"}},
        {"scoringStrategy": {"type": "MostAllocated", "resources": CPU_MEMORY}},
    ),
    (
        "VolumeBindingArgs empty, StorageCapacityScoring disabled",
        "VolumeBinding",
        {},
        {"bindTimeoutSeconds": 600},
    ),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("plugin", "given", "want"), [c[1:] for c in ARGS_DEFAULTS], ids=[c[0] for c in ARGS_DEFAULTS]
)
def test_plugin_args_defaults_as_upstream(version: str, plugin: str, given: dict, want: dict) -> None:
    assert plugin_args(version, plugin, given) == want


@pytest.mark.parametrize(
    ("version", "want"),
    [("1.36", {"filterTimeout": "10s", "bindingTimeout": "10m0s"}), ("1.35", {"filterTimeout": "10s"})],
)
def test_dynamic_resources_args_defaults_per_release(version: str, want: dict) -> None:
    """``DynamicResourcesArgs defaults, DRADeviceBindingConditions enabled`` (on by default in 1.36 only)."""
    assert plugin_args(version, "DynamicResources", {}) == want


def test_binding_timeout_is_kept_under_1_36_and_forbidden_under_1_35() -> None:
    given = {"bindingTimeout": "90s", "filterTimeout": "1m"}
    assert plugin_args("1.36", "DynamicResources", given) == {
        "filterTimeout": "1m0s",
        "bindingTimeout": "1m30s",
    }
    with pytest.raises(InputError) as err:
        plugin_args("1.35", "DynamicResources", given)
    assert str(err.value).startswith(
        "s.yaml: KubeSchedulerConfiguration .profiles[0].pluginConfig[0].args"
        ".bindingTimeout: Forbidden: DRADeviceBindingConditions"
    )
    with pytest.raises(InputError, match=r"bindingTimeout: '500ms' must be at least 1s"):
        plugin_args("1.36", "DynamicResources", {"bindingTimeout": "500ms"})


PLACEMENT = {
    **API,
    "profiles": [
        {
            "plugins": {
                "placementGenerate": {"enabled": [{"name": "TopologyPlacementGenerator"}]},
                "placementScore": {"enabled": [{"name": "PodGroupPodsCount", "weight": 3}]},
            }
        }
    ],
}


def test_1_36_decodes_the_placement_plugin_sets_with_their_weights() -> None:
    (p,) = parse_config(PLACEMENT, "s.yaml", "1.36").profiles
    assert p.plugins["placementGenerate"] == ("TopologyPlacementGenerator",)
    assert p.plugins["placementScore"] == ("PodGroupPodsCount",) and dict(p.placement_score_weights) == {
        "PodGroupPodsCount": 3
    }
    assert {"TopologyPlacementGenerator", "PodGroupPodsCount"} <= set(p.not_modelled)
    assert "placementGenerate" not in default_config("1.35").profiles[0].plugins
    assert default_config("1.36").profiles[0].plugins["placementScore"] == ()


def test_1_35_refuses_the_placement_fields_as_its_strict_decoding_does() -> None:
    with pytest.raises(InputError) as err:
        parse_config(PLACEMENT, "s.yaml", "1.35")
    assert str(err.value) == (
        "s.yaml: KubeSchedulerConfiguration .profiles[0].plugins.placementGenerate: unknown "
        "field: kube-scheduler v1.35.4 decodes its configuration strictly and has no "
        "placementGenerate (added in v1.36)"
    )


def test_a_placement_plugin_is_refused_at_another_point() -> None:
    doc = {**API, "profiles": [{"plugins": {"score": {"enabled": [{"name": "PodGroupPodsCount"}]}}}]}
    with pytest.raises(InputError, match="does not extend score"):
        parse_config(doc, "s.yaml", "1.36")


RATIO_WITH_OTHER_TYPE = {
    **API,
    "profiles": [
        {
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 1}]},
                        }
                    },
                }
            ]
        }
    ],
}


def test_a_ratio_with_another_scoring_type_is_ignored_by_1_35_and_refused_by_1_36() -> None:
    (p,) = parse_config(RATIO_WITH_OTHER_TYPE, "s.yaml", "1.35").profiles
    assert str(p.fit.strategy) == "MostAllocated" and p.fit.shape == ()
    with pytest.raises(InputError, match=r"scoringStrategy\.requestedToCapacityRatio: must not be set"):
        parse_config(RATIO_WITH_OTHER_TYPE, "s.yaml", "1.36")


def configs() -> list:
    """(release, document): the defaults, the scenarios' configurations and the 1.35-only and 1.36-only
    ones, each under the releases that accept it."""
    found = [("defaults", API)]
    for path in sorted(CASES.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        found += [(path.stem, d) for d in docs if d.get("kind") == API["kind"]]
    out = [pytest.param(v, doc, id=f"{name} under {v}") for name, doc in found for v in VERSIONS]
    return [
        *out,
        pytest.param("1.35", RATIO_WITH_OTHER_TYPE, id="a ratio 1.35 ignores"),
        pytest.param("1.36", PLACEMENT, id="placement plugins of 1.36"),
    ]


@pytest.mark.parametrize(("version", "doc"), configs())
def test_the_effective_document_decodes_to_the_same_profiles(version: str, doc: dict) -> None:
    """What ``inspect --effective-profile`` prints is a configuration of the release: decoded again, it
    gives the same profiles, weights and args."""
    config = parse_config(doc, "s.yaml", version)
    again = parse_config(effective_document(config), "again.yaml", version)
    assert again.profiles == config.profiles
    assert (again.parallelism, again.percentage_of_nodes_to_score or 0) == (
        config.parallelism,
        config.percentage_of_nodes_to_score or 0,
    )


def test_go_duration() -> None:
    assert [go_duration(s) for s in (0, 0.5, 1.5, 10, 90, 600, 3600, 3725)] == [
        "0s",
        "500ms",
        "1.5s",
        "10s",
        "1m30s",
        "10m0s",
        "1h0m0s",
        "1h2m5s",
    ]


def test_a_dump_s_configuration_with_a_1_36_field_follows_the_run_s_release(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
    }
    path.write_text(yaml.safe_dump_all([PLACEMENT, node]))
    cluster = load([str(path)])
    assert cluster.config is not None
    assert for_version(cluster.config, "1.36").profiles[0].plugins["placementScore"] == ("PodGroupPodsCount",)
    with pytest.raises(InputError, match="has no placementGenerate"):
        for_version(cluster.config, "1.35")


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_prints_the_effective_configuration_of_the_release(version: str, capsys) -> None:
    code, out, _ = run_cli(["inspect", "--effective-profile", "--kubernetes-version", version], capsys)
    assert code == 0
    patch = {"1.35": "v1.35.4", "1.36": "v1.36.2"}[version]
    assert out.startswith(f"# kube-scheduler {patch}: the effective configuration")
    assert yaml.safe_load(out) == effective_document(default_config(version))
    assert ("placementScore" in out) == (version == "1.36")


def test_inspect_refuses_a_1_36_profile_under_1_35_in_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump(PLACEMENT))
    code, out, err = run_cli(["inspect", "--effective-profile", "--profile", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        (
            f"error: {path}: KubeSchedulerConfiguration .profiles[0].plugins"
            ".placementGenerate: unknown field: kube-scheduler v1.35.4 decodes its "
            "configuration strictly and has no placementGenerate (added in v1.36)"
        )
    ]
    code, out, _ = run_cli(
        ["inspect", "--effective-profile", "--profile", str(path), "--kubernetes-version", "1.36"], capsys
    )
    assert code == 0 and yaml.safe_load(out)["profiles"][0]["plugins"]["placementScore"]["enabled"] == [
        {"name": "PodGroupPodsCount", "weight": 3}
    ]


def test_the_python_api_reads_a_dump_s_configuration_as_the_command_line_does(tmp_path) -> None:
    """Nothing names a release: the input's configuration is read as 1.35 reads it, which refuses the
    1.36 fields; ``kubernetes_version="1.36"`` accepts them."""
    import optisched

    path = tmp_path / "c.yaml"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}
    path.write_text(yaml.safe_dump_all([PLACEMENT, node]))
    cluster = load([str(path)])
    with pytest.raises(InputError, match="has no placementGenerate"):
        optisched.schedule(cluster)
    assert optisched.schedule(cluster, kubernetes_version="1.36").placements() == {}
