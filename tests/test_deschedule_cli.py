"""``optisched deschedule``: the bundled loop example, and one-line errors for bad policies."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import run_cli

EX = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "descheduler"
HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"


def test_the_example_shows_the_loop(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(["deschedule", str(EX / "cluster.yaml"), "--policy", str(EX / "policy.yaml"), "--json"],
                           capsys)
    doc = json.loads(out)
    assert code == 0
    assert [(e["pod"], e["from"], e["landed"]) for e in doc["evictions"]] == [
        ("default/web-1", "node-a", "node-a"), ("default/web-2", "node-a", "node-a")]
    assert doc["loops"] == ["default/web-1", "default/web-2"] and len(doc["secondCycle"]) == 2


def test_the_table_names_the_loop(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(["deschedule", str(EX / "cluster.yaml"), "--policy", str(EX / "policy.yaml")], capsys)
    assert code == 0 and "back where it was" in out and "2 landed back on the node they left" in " ".join(out.split())


BAD = [
    pytest.param("apiVersion: v1\nkind: DeschedulerPolicy\nprofiles: []\n", ".apiVersion",
                 id="a wrong apiVersion names the field"),
    pytest.param(HEAD + "profiles:\n- name: a\n  plugins:\n    balance:\n      enabled: [Foo]\n",
                 ".profiles[0].plugins.balance.enabled[0]: unknown strategy 'Foo'", id="an unknown strategy"),
    pytest.param(HEAD + "profiles:\n- name: a\n  plugins:\n    deschedule:\n      enabled: [LowNodeUtilization]\n",
                 "LowNodeUtilization is a balance plugin", id="a strategy at the wrong extension point"),
    pytest.param(HEAD + "profiles:\n- name: a\n  pluginConfig:\n  - name: LowNodeUtilization\n    args:\n"
                 "      thresholds: {cpu: 60}\n      targetThresholds: {cpu: 50}\n"
                 "  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n",
                 ".profiles[0].pluginConfig[0].args.thresholds.cpu: 60 is above targetThresholds.cpu 50",
                 id="thresholds above targets"),
    pytest.param(HEAD + "profiles:\n- name: a\n  pluginConfig:\n  - name: LowNodeUtilization\n    args:\n"
                 "      thresholds: {cpu: 120}\n      targetThresholds: {cpu: 150}\n"
                 "  plugins:\n    balance:\n      enabled: [LowNodeUtilization]\n",
                 "thresholds.cpu: 120 is not a percentage", id="a threshold above 100"),
    pytest.param(HEAD + "profiles:\n- name: a\n  pluginConfig:\n  - name: RemoveDuplicates\n    args:\n"
                 "      excludeOwnerKind: [Job]\n  plugins:\n    balance:\n      enabled: [RemoveDuplicates]\n",
                 ".profiles[0].pluginConfig[0].args.excludeOwnerKind: unknown field", id="a misspelt argument"),
    pytest.param(HEAD + "maxNoOfPodsToEvictTotal: -1\nprofiles:\n- name: a\n", ".maxNoOfPodsToEvictTotal: -1 is negative",
                 id="a negative limit"),
    pytest.param("profiles: [\n", "not YAML", id="a file that is not YAML"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_policies_get_one_line_errors(tmp_path, capsys, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    pol = tmp_path / "policy.yaml"
    pol.write_text(text)
    code, out, err = run_cli(["deschedule", str(EX / "cluster.yaml"), "--policy", str(pol)], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {pol}") and message in " ".join(err.split()) and "Traceback" not in err
    assert pol.read_text() == text
