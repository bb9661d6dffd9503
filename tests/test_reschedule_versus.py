"""``reschedule --compare-descheduler``: the descheduler's strategy for the same goal beside optisched's
plan, both replayed through kube-scheduler and measured the same way."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import run_cli, state_of
from helpers.descheduler import CFG, tnode, tpod

from optisched.errors import InputError
from optisched.reschedule import Goal, plan_reschedule
from optisched.reschedule.versus import compare_descheduler, goal_policy

WITH_DB = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
LEVELS = ({"cpu": 20}, {"cpu": 50})
EXAMPLE = Path(__file__).parents[1] / "datasets" / "examples" / "descheduler" / "cluster.yaml"


def _looping():  # type: ignore[no-untyped-def]
    """n1 at 72.5% cpu with four web pods that must run beside its db; n2 nearly empty (the loop)."""
    webs = [tpod(f"web-{i}", 600, "n1").label(app="web").set("spec.affinity", WITH_DB) for i in range(1, 5)]
    return state_of(tnode("n1", 4000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110),
                    tpod("db", 500, "n1", "DaemonSet").label(app="db"), tpod("cache", 100, "n2"), *webs)


@pytest.fixture(scope="module")
def versus():  # type: ignore[no-untyped-def]
    state = _looping()
    plan = plan_reschedule(state, CFG, "balance", thresholds=LEVELS, time_limit=5)
    return compare_descheduler(state, CFG, plan, thresholds=LEVELS)


def test_the_descheduler_loops_where_optisched_moves_nothing(versus) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = versus.sides
    assert versus.strategies == ["LowNodeUtilization"]
    assert (theirs.evictions, theirs.loops, theirs.pending, theirs.second_cycle) == (2, 2, 0, 2)
    assert (ours.evictions, ours.loops, ours.pending) == (0, 0, 0)
    assert ours.goal == theirs.goal == versus.before  # the loop leaves the cluster where it was


def test_the_comparison_is_a_frame_and_a_dict(versus) -> None:  # type: ignore[no-untyped-def]
    frame = versus.frame()
    assert list(frame.columns) == ["measure", "optisched", "descheduler"]
    loops = frame.set_index("measure").loc["loops (replacement back on its node)"]
    assert (loops["optisched"], loops["descheduler"]) == ("0", "2")
    d = versus.to_dict()
    assert d["descheduler"]["loops"] == 2 and d["optisched"]["evictions"] == 0 and d["goal"] == "balance"


@pytest.mark.parametrize(("goal", "strategies"), [
    pytest.param(Goal.CONSOLIDATE, ["HighNodeUtilization"], id="consolidate is HighNodeUtilization"),
    pytest.param(Goal.BALANCE, ["LowNodeUtilization"], id="balance is LowNodeUtilization"),
    pytest.param(Goal.REPAIR, ["RemovePodsViolatingNodeAffinity", "RemovePodsViolatingNodeTaints",
                               "RemovePodsViolatingTopologySpreadConstraint"],
                 id="repair is the three violation strategies"),
])
def test_each_goal_has_its_strategy(goal: Goal, strategies: list[str]) -> None:
    assert [s.name for s in goal_policy(goal).profiles[0].strategies] == strategies


def test_fit_pending_has_no_strategy() -> None:
    with pytest.raises(InputError, match="no strategy for fit-pending"):
        goal_policy(Goal.FIT_PENDING)


def test_the_cli_prints_the_table_and_writes_it_into_the_plan(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "plan.json"
    code, stdout, _ = run_cli(["reschedule", str(EXAMPLE), "--goal", "balance", "--thresholds", "cpu=20",
                               "--target-thresholds", "cpu=50", "--compare-descheduler", "--time-limit", "5",
                               "--output", str(out), "--report", str(tmp_path / "report")], capsys)
    assert code == 0
    assert "optisched vs the descheduler (LowNodeUtilization) for balance" in stdout
    body = json.loads(out.read_text())["compareDescheduler"]
    assert body["descheduler"]["loops"] == 2 and body["optisched"]["loops"] == 0
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Beside the descheduler (LowNodeUtilization)" in html and "loops (replacement back on its node)" in html


def test_a_bad_descheduler_policy_is_a_one_line_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "policy.yaml"
    bad.write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n"
                   "  plugins: {balance: {enabled: [Foo]}}\n")
    code, _, stderr = run_cli(["reschedule", str(EXAMPLE), "--descheduler-policy", str(bad)], capsys)
    assert code == 2 and "unknown strategy 'Foo'" in stderr and len(stderr.strip().splitlines()) == 1


def test_the_python_api_carries_the_comparison() -> None:
    import optisched

    plan = optisched.reschedule(optisched.load([str(EXAMPLE)]), goal="balance", time_limit=5,
                                compare_descheduler=True)
    assert plan.versus is not None and plan.versus.sides[1].name == "descheduler"
    assert "compareDescheduler" in plan.to_dict()
