"""drain's optimizer side (the best re-placement beside kube-scheduler's replay, the largest drainable set
of the nodes given), its plan.json and its HTML report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import run_cli, state_of
from helpers.descheduler import CFG, tnode, tpod

from optisched import load
from optisched.model.state import compile_cluster
from optisched.whatif.drain import DrainFlags, run_drain
from optisched.whatif.drainable import annotate, largest_drainable

EXAMPLE = Path(__file__).parents[1] / "datasets" / "examples" / "drain" / "cluster.yaml"


@pytest.fixture(scope="module")
def example():  # type: ignore[no-untyped-def]
    return compile_cluster(load([str(EXAMPLE)]))


def test_the_largest_drainable_set_is_found_and_proven(example) -> None:  # type: ignore[no-untyped-def]
    out = largest_drainable(example, CFG, ["w1", "w2", "w3"], DrainFlags(), time_limit=5)
    assert out.nodes == ["w1", "w3"] and out.proven and out.refused == ["w2"]


def test_the_greedy_fallback_is_not_proven(example) -> None:  # type: ignore[no-untyped-def]
    out = largest_drainable(example, CFG, ["w1", "w2", "w3"], DrainFlags(force=True), time_limit=5, budget=1)
    assert not out.proven and "greedily" in out.how and len(out.nodes) >= 1


def _order_matters():  # type: ignore[no-untyped-def]
    """n1 holds small (1 cpu) then big (3 cpu); n2 has 3 cpu free, n3 one. kube-scheduler places small
    first, on the emptier n2, and big no longer fits anywhere; the optimum puts small on n3, big on n2."""
    return state_of(tnode("n1", 4000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110), tnode("n3", 4000, 8 << 30, 110),
                    tpod("small", 1000, "n1", owner_name="small"), tpod("big", 3000, "n1", owner_name="big"),
                    tpod("used-2", 1000, "n2", owner_name="u2"), tpod("used-3", 3000, "n3", owner_name="u3"))


def test_the_optimal_side_places_what_the_replay_leaves_pending() -> None:
    state = _order_matters()
    out = run_drain(state, CFG, ["n1"])
    annotate(out, state, CFG, DrainFlags(), time_limit=5)
    assert out.final["default/big"] is None and out.final["default/small"] == "n2"
    assert out.optimal.placements == {"default/small": "n3", "default/big": "n2"}
    assert out.optimal.to_dict()["placed"] == 2 and out.optimal.by_kube == 1
    ev = {e["pod"]: e for w in out.to_dict()["waves"] for e in w["evictions"]}
    assert (ev["default/big"]["to"], ev["default/big"]["predicted"]) == ("n2", None)
    assert out.largest is None  # one node: nothing to choose


def test_plan_json_and_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    plan, rep = tmp_path / "plan.json", tmp_path / "rep"
    args = ["drain", str(EXAMPLE), "--node", "w1,w2,w3", "--time-limit", "5", "--output", str(plan),
            "--report", str(rep)]
    code, stdout, _ = run_cli(args, capsys)
    assert code == 0 and "largest drainable set: w1, w3 (proven largest" in stdout
    doc = json.loads(plan.read_text())
    assert doc["nodes"] == {"w1": False, "w2": False, "w3": False}
    assert {"pod": "default/debug", "reason": "pod that declares no controller (use --force to override)"} \
        in doc["blocked"]
    assert doc["largestDrainable"]["nodes"] == ["w1", "w3"] and doc["largestDrainable"]["replayDrains"]
    assert all({"pod", "from", "to", "predicted"} <= set(e) for w in doc["waves"] for e in w["evictions"])
    html = (rep / "report.html").read_text()
    assert "<h1>Drain: w1, w2, w3</h1>" in html and "<script" not in html and "http" not in html
    assert json.loads((rep / "plan.json").read_text())["perNode"]["w2"]["drains"] is False
    assert run_cli(args, capsys)[0] == 0  # the folder is its own: written again


def test_a_report_folder_with_a_foreign_plan_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "plan.json").write_text("{}")
    code, _, stderr = run_cli(["drain", str(EXAMPLE), "--node", "w1", "--report", str(tmp_path)], capsys)
    assert code == 2 and "plan.json" in stderr and (tmp_path / "plan.json").read_text() == "{}"


def test_a_node_pool_by_label(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    text = EXAMPLE.read_text()
    for w in ("w1", "w2", "w3"):
        text = text.replace(f"labels: {{kubernetes.io/hostname: {w}}}", f"labels: {{kubernetes.io/hostname: {w}, pool: old}}")
    f = tmp_path / "c.yaml"
    f.write_text(text)
    code, stdout, _ = run_cli(["drain", str(f), "--pool", "pool=old", "--time-limit", "5", "--json"], capsys)
    assert code == 0 and json.loads(stdout)["largestDrainable"]["nodes"] == ["w1", "w3"]
    code, _, stderr = run_cli(["drain", str(f), "--pool", "pool=new"], capsys)
    assert code == 2 and "no node has the label pool=new" in stderr
