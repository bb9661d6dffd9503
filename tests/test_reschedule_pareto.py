"""``reschedule --pareto`` and ``--max-moves`` as a constraint of the target: the goal at each move budget
on hand-built clusters whose curve is known, the knee on hand-made curves, the terminal table and JSON."""
from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from builders import node, pod, run_cli, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reschedule_properties import clusters

from optisched.optimal.solve import Certificate
from optisched.optimal.tier_key import TierKey
from optisched.optimal.tiers import Tier
from optisched.profile import default_config
from optisched.reschedule import Budgets, Goal, plan_reschedule
from optisched.reschedule.pareto import budgets_below, knee, sweep

EXAMPLE = str(Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-consolidate.yaml")


def owned(name: str, owner: str = "web"):  # type: ignore[no-untyped-def]
    return pod(name).set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                                        "uid": owner, "controller": True}]).label(app=owner)


def singles_and_a_pair() -> list:
    """n1 holds a bare pod (it stays); n2, n3, n4 hold one 700m web pod each, n5 two: every node but n1
    can be emptied into n1, one node per move for the singles, two moves for n5."""
    objs = [node(f"n{i}") for i in range(1, 6)] + [pod("anchor").req(cpu="100m").on("n1")]
    objs += [owned(f"s{i}").req(cpu="700m").on(f"n{i}") for i in (2, 3, 4)]
    objs += [owned(f"p{j}").req(cpu="700m").on("n5") for j in (1, 2)]
    return objs


@pytest.mark.parametrize("moves,gains,expected", [
    ([0, 1, 2, 4, 8], [0, 5, 8, 9, 10], 2),
    ([0, 1, 2, 3, 5], [0, 1, 2, 3, 4], 3),
    ([0, 1, 2, 3], [0, 1, 2, 3], None),
    ([0, 1, 2, 4], [0, 1, 2, 10], None),
    ([0, 1, 2, 4], [0, 0, 0, 0], None),
    ([0, 4], [0, 10], None),
    ([0, 1, 2, 3, 4], [0, 2, 3, 4, 4], 1),
], ids=["diminishing returns put the knee where the curve bends",
        "one costly last step puts the knee before it",
        "a straight line has no knee",
        "a curve below its chord has no knee",
        "a flat curve has no knee",
        "two points have no knee",
        "equal distances go to the fewer moves"])
def test_the_knee_is_the_point_farthest_above_the_chord(moves, gains, expected):
    assert knee(moves, gains) == expected


@pytest.mark.parametrize("moves,expected", [(0, []), (1, [0]), (2, [0, 1]), (5, [0, 1, 2, 4]), (8, [0, 1, 2, 4])],
                         ids=["no moves: no budget below", "one move: budget 0", "two moves: 0 and 1",
                              "five moves: powers of two below", "eight moves: up to four"])
def test_budgets_double_below_the_plans_move_count(moves, expected):
    assert budgets_below(moves) == expected


def test_max_moves_is_a_constraint_of_the_target_not_a_cut_of_the_unbudgeted_plan():
    """n2 holds a1 and a2, n3 holds c1; all fit on n1 beside a bare pod. The unbudgeted plan moves all
    three; cut to its first move in queue order (a1) it would empty nothing. Within one move the best
    target moves c1 and empties n3."""
    objs = [node(f"n{i}") for i in (1, 2, 3)] + [pod("anchor").req(cpu="1").on("n1")]
    objs += [owned("a1").req(cpu="1").on("n2"), owned("a2").req(cpu="1").on("n2"), owned("c1").req(cpu="1").on("n3")]
    plan = plan_reschedule(state_of(*objs), default_config(), "consolidate", time_limit=5, budgets=Budgets(max_moves=1))
    assert [m.key for w in plan.staging.waves for m in w.moves] == ["default/c1"]
    assert plan.staging.dropped == [] and plan.after.empty_nodes == 1 and plan.removable == ["n3"]


@pytest.fixture(scope="module")
def curve():
    plan = plan_reschedule(state_of(*singles_and_a_pair()), default_config(), "consolidate", time_limit=20, pareto=True)
    return plan, plan.pareto


def test_each_budget_empties_as_many_nodes_as_its_moves_allow(curve):
    _, c = curve
    assert c.goal == "objective:pack" and c.sense == "min"
    assert [p.budget for p in c.points] == [0, 1, 2, 4, None]
    # nodes in use among those no fixed pod holds: n2..n5, one fewer per single moved, n5 after two moves
    assert [p.value for p in c.points] == [4, 3, 2, 1, 0]
    assert [p.moves for p in c.points] == [0, 1, 2, 3, 5]
    assert all(p.status == "OPTIMAL" and p.gap == 0 and p.bound == p.value for p in c.points)
    assert all(p.moves <= p.budget for p in c.points if p.budget is not None)


def test_gains_never_fall_with_the_budget_and_the_last_point_is_the_plan(curve):
    plan, c = curve
    gains = [p.gain for p in c.points]
    assert gains == sorted(gains) and gains[0] == 0
    goal = next(t for t in plan.certificate.tiers if t.name == "objective:pack")
    assert c.points[-1].value == goal.objective and c.points[-1].moves == plan.moves == 5


def test_the_knee_is_before_the_node_that_takes_two_moves(curve):
    _, c = curve
    assert c.knee == 3 and c.points[c.knee].moves == 3


def test_the_curve_is_a_dataframe_and_part_of_plan_json(curve):
    plan, _ = curve
    frame = plan.pareto_frame()
    assert frame["moves"].tolist() == [0, 1, 2, 3, 5] and frame["knee"].tolist() == [False, False, False, True, False]
    doc = json.loads(json.dumps(plan.to_dict()))
    assert [p["value"] for p in doc["pareto"]["points"]] == [4, 3, 2, 1, 0] and doc["pareto"]["knee"] == 3


def _cert(value: int, bound: int, status: str = "FEASIBLE") -> Certificate:
    return Certificate(status, [Tier(TierKey.parse("objective:pack"), "min", value, bound, status, 0.1)], 0.1, "solver", False)


def test_a_budget_whose_solve_found_less_keeps_the_smaller_budgets_placement():
    """A time-limited solve at budget 2 finds 5 where budget 1 found 3: budget 1's placement is within
    budget 2 too, so the point keeps it (and says so) with budget 2's own bound."""
    state = state_of(node("n1"), node("n2"), *(owned(f"w{i}").req(cpu="100m").on("n1") for i in range(4)))
    found = {0: (0, _cert(6, 6, "OPTIMAL")), 1: (1, _cert(3, 2)), 2: (2, _cert(5, 1))}

    def solve(k: int, seconds: float):  # type: ignore[no-untyped-def]
        moved, cert = found[k]
        target = state.pod_node.copy()
        target[:moved] = 1
        return target, SimpleNamespace(certificate=cert)

    target = state.pod_node.copy()
    target[:3] = 1
    c = sweep(state, [Goal.CONSOLIDATE], target, _cert(4, 1), solve, 1.0)
    assert [(p.budget, p.value, p.bound, p.from_budget) for p in c.points] == \
        [(0, 6, 6, None), (1, 3, 2, None), (2, 3, 1, 1), (None, 3, 1, 1)]
    assert [p.moves for p in c.points] == [0, 1, 1, 1]
    assert any("--max-moves 1" in n for n in c.notes)


def test_every_budget_gets_the_same_fixed_share_whatever_the_wall_clock_says(monkeypatch):
    """The sweep's shares are fixed in advance (the same curve twice): a first solve that takes the
    wall clock past the sweep's end does not shrink the later budgets' shares."""
    from optisched.reschedule import pareto

    now = {"t": 0.0}
    monkeypatch.setattr(pareto.time, "perf_counter", lambda: now["t"])
    state = state_of(node("n1"), node("n2"), *(owned(f"w{i}").req(cpu="100m").on("n1") for i in range(8)))
    asked: list[float] = []

    def solve(k: int, seconds: float):  # type: ignore[no-untyped-def]
        asked.append(seconds)
        now["t"] += 100.0  # every solve appears to take far longer than the whole sweep
        return state.pod_node.copy(), SimpleNamespace(certificate=_cert(6, 6, "OPTIMAL"))

    target = state.pod_node.copy()
    target[:8] = 1
    sweep(state, [Goal.CONSOLIDATE], target, _cert(4, 1), solve, 12.0)
    assert len(asked) == len(budgets_below(8)) == 4
    assert asked == [3.0] * 4


def test_fit_pending_measures_pods_placed_and_rises_with_the_budget():
    """Two 4-GPU nodes each hold one single-GPU pod; a 4-GPU pod is pending: no room without a move,
    one move makes it."""
    objs = [node(f"g{i}").alloc(**{"nvidia.com/gpu": "4"}) for i in (1, 2)]
    objs += [owned(f"small{i}", "small").req(cpu="100m", **{"nvidia.com/gpu": "1"}).on(f"g{i}") for i in (1, 2)]
    objs.append(owned("big", "big").req(cpu="100m", **{"nvidia.com/gpu": "4"}))
    plan = plan_reschedule(state_of(*objs), default_config(), "fit-pending", time_limit=10, pareto=True)
    c = plan.pareto
    assert (c.goal, c.sense) == ("placed", "max")
    assert [(p.budget, p.moves, p.value, p.gain) for p in c.points] == [(0, 0, 2, 0), (None, 1, 3, 1)]


def test_the_terminal_shows_the_table_and_plan_json_the_points(tmp_path, capsys):
    out_path = tmp_path / "plan.json"
    code, out, _ = run_cli(["reschedule", EXAMPLE, "--pareto", "--time-limit", "8", "--output", str(out_path)], capsys)
    assert code == 0
    assert "pareto (objective:pack, minimized" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith(("0 ", "1 ", "plan "))]
    assert [r[:3] for r in rows] == [["0", "0", "600"], ["1", "0", "600"], ["plan", "2", "300"]]
    doc = json.loads(out_path.read_text())
    assert [p["budget"] for p in doc["pareto"]["points"]] == [0, 1, None]
    assert np.all(np.diff([p["gain"] for p in doc["pareto"]["points"]]) >= 0)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from(["consolidate", "fit-pending", "balance"]), st.integers(0, 2))
def test_on_random_clusters_no_target_exceeds_its_budget_and_optimal_points_never_get_worse(state, goal, budget):
    budgeted = plan_reschedule(state, default_config(), goal, Budgets(max_moves=budget), time_limit=2)
    assert budgeted.moves <= budget
    assert sum(1 for k, n in budgeted.target.items() if n != state.pods[state.pod_index[k]].spec.node_name
               and state.pod_node[state.pod_index[k]] >= 0) <= budget
    c = plan_reschedule(state, default_config(), goal, time_limit=4, pareto=True).pareto
    assert c is not None
    assert all(p.moves <= p.budget for p in c.points if p.budget is not None)
    solved = [p for p in c.points if p.from_budget is None and p.status == "OPTIMAL"]
    sign = 1 if c.sense == "max" else -1
    assert all(sign * a.value <= sign * b.value for a, b in pairwise(solved))
    assert [p.gain for p in c.points] == sorted(p.gain for p in c.points)
