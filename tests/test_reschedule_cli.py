"""``optisched reschedule``: summary, plan.json in its published shape, plan.yaml Evictions, bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from builders import run_cli

EXAMPLE = str(Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-consolidate.yaml")


def test_the_summary_shows_before_and_after_and_the_plan_json_has_the_published_shape(tmp_path, capsys):
    out_path = tmp_path / "plan.json"
    code, out, _ = run_cli(["reschedule", EXAMPLE, "--goal", "consolidate", "--time-limit", "5",
                            "--output", str(out_path)], capsys)
    assert code == 0
    assert "emptyNodes: 0 -> 1" in out and "hourlyCost: 0.6 -> 0.3" in out
    assert "replacements predicted on target: 2/2" in out and "removable nodes: n3, saving 0.300/h" in out
    plan = json.loads(out_path.read_text())
    assert plan["goal"] == ["consolidate"]
    evictions = plan["waves"][0]["evictions"]
    assert {e["pod"] for e in evictions} == {"default/web-31", "default/web-32"}
    assert all(set(e) >= {"pod", "from", "to", "predicted", "reason"} and e["to"] == e["predicted"] != "n3"
               for e in evictions)
    assert plan["placements"]["kube-system/agent-n3"] == "n3"
    assert {"before", "after", "certificate"} <= set(plan)


def test_plan_yaml_holds_one_annotated_eviction_per_move(tmp_path, capsys):
    out_path = tmp_path / "plan.yaml"
    code, _, _ = run_cli(["reschedule", EXAMPLE, "--time-limit", "5", "--output", str(out_path)], capsys)
    assert code == 0
    docs = list(yaml.safe_load_all(out_path.read_text()))
    assert docs[0]["kind"] == "ReschedulePlan" and docs[0]["cordon"] == ["n3"]
    ev = docs[1:]
    assert [d["kind"] for d in ev] == ["Eviction", "Eviction"] and ev[0]["apiVersion"] == "policy/v1"
    ann = ev[0]["metadata"]["annotations"]
    assert ann["optisched.io/wave"] == "1" and ann["optisched.io/predicted-node"] == ann["optisched.io/target"]


@pytest.mark.parametrize("args,message", [
    (["--goal", "shrink"], "--goal: 'shrink' is not a goal"),
    (["--max-unavailable-per-workload", "lots"], "is not a count or a percent"),
    (["--output", "plan.txt"], "must end in .json, .yaml or .yml"),
    (["--thresholds", "cpu=20"], "--thresholds and --target-thresholds go together"),
    (["--thresholds", "cpu=x", "--target-thresholds", "cpu=50"], "'cpu=x' is not RESOURCE=PERCENT"),
    (["--goal", "balance", "--thresholds", "gpu=5", "--target-thresholds", "cpu=50"], "no node offers 'gpu'"),
    (["--goal", "fit-pending", "--for", "default/web-31", "--pareto"], "--pareto and --for do not go together"),
], ids=["an unknown goal exits 2", "a bad workload budget exits 2", "an output of another kind exits 2",
        "thresholds without target thresholds exit 2", "a threshold that is no percent exits 2",
        "a threshold on a resource no node offers exits 2", "pareto for a gang exits 2"])
def test_bad_options_exit_2_in_one_line(args, message, capsys):
    code, _, err = run_cli(["reschedule", EXAMPLE, *args], capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_the_output_never_overwrites_an_input(tmp_path, capsys):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(Path(EXAMPLE).read_text())
    before = cluster.read_text()
    code, _, err = run_cli(["reschedule", str(cluster), "--output", str(tmp_path / "cluster.yaml").replace(
        "cluster.yaml", "cluster.yaml")], capsys)
    assert code == 2 and "is an input" in err
    cluster.rename(tmp_path / "c.yml")
    code, _, err = run_cli(["reschedule", str(tmp_path / "c.yml"), "--output", str(tmp_path / "c.yml")], capsys)
    assert code == 2 and (tmp_path / "c.yml").read_text() == before


def test_the_python_api_returns_dataframes():
    import optisched

    plan = optisched.reschedule(optisched.load([EXAMPLE]), goal="consolidate", time_limit=5)
    waves = plan.waves_frame()
    assert list(waves.columns) == ["wave", "pod", "from", "to", "predicted", "reason"] and len(waves) == 2
    assert len(plan.target_frame()) == len(plan.prediction_frame()) == 9


def test_apply_without_a_kubeconfig_is_refused(capsys):
    code, _, err = run_cli(["reschedule", EXAMPLE, "--apply"], capsys)
    assert code == 2 and "--apply needs --kubeconfig" in err
