"""The options several commands share are checked once, with one message: --seed within int32,
--max-input-size, --time-limit and --mode, on every command that takes them."""
from __future__ import annotations

from pathlib import Path

import pytest
from builders import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
QUICKSTART = str(EXAMPLES / "quickstart.yaml")
POLICY = str(EXAMPLES / "descheduler" / "policy.yaml")

# each command with the arguments it needs to reach loading its input
LOADING = [
    pytest.param(["deschedule", QUICKSTART, "--policy", POLICY], id="deschedule"),
    pytest.param(["pressure", QUICKSTART], id="pressure"),
    pytest.param(["drain", QUICKSTART, "--node", "general-a-0"], id="drain"),
    pytest.param(["what-if", QUICKSTART, "--taint", "down:NoExecute", "--node", "general-a-0"], id="what-if"),
    pytest.param(["reschedule", QUICKSTART], id="reschedule"),
]


def refused(args: list[str], capsys) -> str:  # type: ignore[no-untyped-def]
    """The one line ``optisched ARGS`` prints on stderr, having exited 2."""
    code, stdout, err = run_cli(args, capsys)
    assert code == 2, (code, err)
    assert "Traceback" not in err and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("args", [
    pytest.param(["reschedule", QUICKSTART], id="reschedule"),
    pytest.param(["generate", "{out}"], id="generate"),
])
def test_a_seed_beyond_int32_is_refused_in_one_line(args, tmp_path, capsys):
    args = [a.format(out=tmp_path / "c.yaml") for a in args]
    line = refused([*args, "--seed", "2147483648"], capsys)
    assert line == "error: --seed: 2147483648 is beyond the int32 range [-2147483648, 2147483647]"
    assert not (tmp_path / "c.yaml").exists()


@pytest.mark.parametrize("args", LOADING)
def test_max_input_size_bounds_the_files_read(args, capsys):
    line = refused([*args, "--max-input-size", "100"], capsys)
    assert "quickstart.yaml: larger than the input limit of 100 bytes (raise it with --max-input-size)" in line


@pytest.mark.parametrize("args", LOADING)
def test_max_input_size_that_is_not_a_size_is_refused(args, capsys):
    assert refused([*args, "--max-input-size", "lots"], capsys) == \
        "error: --max-input-size: 'lots' is not a size (e.g. 512Mi, 1Gi)"


@pytest.mark.parametrize("args", [
    pytest.param(["schedule", QUICKSTART, "--mode", "optimal"], id="schedule"),
    pytest.param(["compare", QUICKSTART], id="compare"),
    pytest.param(["preempt", QUICKSTART, "--mode", "optimal"], id="preempt"),
    pytest.param(["drain", QUICKSTART, "--node", "general-a-0"], id="drain"),
    pytest.param(["reschedule", QUICKSTART], id="reschedule"),
    pytest.param(["experiment", "optimum"], id="experiment"),
])
def test_a_time_limit_below_a_tenth_of_a_second_is_refused_alike(args, capsys):
    assert refused([*args, "--time-limit", "0"], capsys) == \
        "error: --time-limit: 0.0 is not a number of seconds of at least 0.1"


@pytest.mark.parametrize("command", ["schedule", "preempt"])
def test_an_unknown_mode_is_refused_alike(command, capsys):
    assert refused([command, QUICKSTART, "--mode", "best"], capsys) == \
        "error: --mode: 'best' is not one of greedy, optimal"


SCHEDULING = [*LOADING, pytest.param(["schedule", QUICKSTART], id="schedule"),
              pytest.param(["compare", QUICKSTART], id="compare"), pytest.param(["preempt", QUICKSTART], id="preempt"),
              pytest.param(["explain", QUICKSTART], id="explain"), pytest.param(["inspect", QUICKSTART], id="inspect")]


@pytest.mark.parametrize("args", SCHEDULING)
def test_a_kubernetes_version_optisched_does_not_reproduce_is_refused_in_one_line(args, capsys):
    line = refused([*args, "--kubernetes-version", "1.34"], capsys)
    assert line == ("error: --kubernetes-version: '1.34' is not a Kubernetes version optisched reproduces; "
                    "versions: 1.35, 1.36, 1.37")


@pytest.mark.parametrize("args", SCHEDULING)
def test_an_unknown_feature_gate_is_refused_in_one_line(args, capsys):
    pod = ["--pod", "web"] if args[0] == "explain" else []  # (explain names its pod before anything loads)
    assert refused([*args, *pod, "--feature-gates", "NoSuchGate=true"], capsys) == \
        "error: --feature-gates: unrecognized feature gate: NoSuchGate"


def _nodes_running(tmp_path, *versions: str) -> str:
    import yaml

    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                        **({"nodeInfo": {"kubeletVersion": v}} if v else {})}} for i, v in enumerate(versions)]
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@pytest.mark.parametrize("versions,flag,warned", [
    pytest.param(("v1.36.2", "v1.36.1-eks-1a2b"), [], True, id="1.36 nodes, the default release"),
    pytest.param(("v1.36.2", "v1.36.1-eks-1a2b"), ["--kubernetes-version", "1.36"], False, id="1.36 nodes, 1.36"),
    pytest.param(("v1.35.4", ""), [], False, id="1.35 nodes and one that does not say"),
])
def test_inspect_says_which_release_the_nodes_run_and_warns_when_the_run_follows_another(
        versions, flag, warned, tmp_path, capsys):
    import json

    code, out, err = run_cli(["inspect", _nodes_running(tmp_path, *versions), "--json", *flag], capsys)
    assert code == 0, err
    doc = json.loads(out)
    minors = {v.lstrip("v")[:4] for v in versions if v}
    assert set(doc["kubeletVersions"]) - {"unknown"} == minors
    assert doc["kubernetesVersion"] == ("v1.36.2" if flag else "v1.35.4")
    assert ("warning: the nodes' kubelets run 1.36" in err) == warned
    assert any("kubelets run" in w for w in doc["warnings"]) == warned


def test_two_lists_naming_different_releases_are_refused_naming_the_field(tmp_path, capsys):
    import yaml

    paths = []
    for i, version in enumerate(("v1.36.2", "v1.35.4")):
        path = tmp_path / f"dump{i}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "kubernetesVersion": version, "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}]}))
        paths.append(str(path))
    line = refused(["schedule", *paths], capsys)
    assert "dump1.yaml" in line and "List" in line and ".kubernetesVersion" in line and "v1.36.2" in line
