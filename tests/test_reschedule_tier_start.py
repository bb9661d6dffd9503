"""Every goal tier of a lexicographic plan gets a start: its simulator run from the answer of the tiers
before it, limited so it gives up nothing an earlier tier holds; and the tier machinery does not offer a
start that is worse on a tier already fixed.

Each cluster is small enough that what the simulator does is worked out by hand in the docstring.
"""
from __future__ import annotations

import numpy as np
from builders import node, pod, state_of

from optisched.optimal.goal_tier import TierStarts
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.optimal.tier_key import TierKey
from optisched.policy.eviction import EvictionPolicy
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule
from optisched.reschedule.goals import Goal
from optisched.reschedule.tier_start import GoalStarts, balance_start

ZONE = "topology.kubernetes.io/zone"


def owned(name: str, owner: str, app: str | None = None):  # type: ignore[no-untyped-def]
    b = pod(name).set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                                    "uid": owner, "controller": True}]).label(app=app or owner)
    b["spec"]["containers"][0]["image"] = f"{owner}:1"
    return b


def _starts(state, goals: list[Goal], thresholds=None) -> GoalStarts:  # type: ignore[no-untyped-def]
    counted = EvictionPolicy().verdicts(state).may_leave
    return GoalStarts(state, default_config(), goals, EvictionPolicy(), counted, thresholds=thresholds)


def _where(state, start: np.ndarray, name: str) -> str:  # type: ignore[no-untyped-def]
    return state.node_names[int(start[state.pod_index[f"default/{name}"]])]


def _reopen() -> list:
    """n1 (zone b) holds w, whose node selector asks for zone a; n2 (zone a) is full; n3 (zone a) is
    empty, as consolidate's answer left it. Repair alone re-places w on n3; after consolidate, that
    would put a node back in use, so w stays."""
    return [node("n1", cpu="4").zone("b"), node("n2", cpu="2").zone("a"), node("n3", cpu="4").zone("a"),
            owned("w", "w").req(cpu="1").set("spec.nodeSelector", {ZONE: "a"}).on("n1"),
            owned("f", "f").req(cpu="2").on("n2")]


def _asked(state, goals: list[Goal], tier: str):  # type: ignore[no-untyped-def]
    """The goals' starts, and the start ``tier`` gets from the input's placement, every pod free to move."""
    starts = _starts(state, goals)
    return starts, starts.start(TierKey.parse(tier), state.pod_node, np.ones(len(state.pods), dtype=bool))


def test_repair_after_consolidate_puts_no_pod_on_a_node_the_answer_leaves_empty():
    state = state_of(*_reopen())
    _, alone = _asked(state, [Goal.REPAIR], "objective:repair")
    assert _where(state, alone, "w") == "n3"
    _, after = _asked(state, [Goal.CONSOLIDATE, Goal.REPAIR], "objective:repair")
    assert after is None  # w has nowhere else to go


def _spread() -> list:
    """Zone a (n1) holds q1, spreading web pods over zones at maxSkew 1, and r1; zone b (n2) holds q2,
    spread as q1; n3 (no zone) holds p, a web pod with no constraint. The scale-down simulation tries
    n2 and n3 (least utilized, by name): q2 fits no other zone node (zone a would be at skew 3, n3 has
    no zone); p goes to the most allocated node, n1, where q1 is then at skew 2. After repair, that
    move would create a violation: p goes to n2 instead (2 web pods a zone)."""
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    return [node("n1").zone("a"), node("n2").zone("b"), node("n3"),
            owned("q1", "q1", "web").req(cpu="100m").set("spec.topologySpreadConstraints", spread).on("n1"),
            owned("r1", "r1", "web").req(cpu="100m").on("n1"),
            owned("q2", "q2", "web").req(cpu="100m").set("spec.topologySpreadConstraints", spread).on("n2"),
            owned("p", "p", "web").req(cpu="100m").on("n3")]


def test_consolidate_after_repair_makes_no_move_that_creates_a_violation():
    state = state_of(*_spread())
    _, alone = _asked(state, [Goal.CONSOLIDATE], "objective:pack")
    assert _where(state, alone, "p") == "n1"
    starts, after = _asked(state, [Goal.REPAIR, Goal.CONSOLIDATE], "objective:pack")
    assert _where(state, after, "p") == "n2"
    assert starts.lines() == [("start of consolidate (after repair): cluster-autoscaler's scale-down simulation "
                              "empties 1 node(s) (n3)")]


def _two_over() -> list:
    """n1 at 90 % cpu (three 1.2-cpu pods, a2 of the lowest priority), n2 at 75 % (three 1-cpu pods),
    n3 and n4 empty. With thresholds cpu 20 and targets cpu 60, LowNodeUtilization takes n1 first (the
    most used): a2 leaves (lowest priority first) and n1 is at 60 %, no longer above; then one pod of
    n2 (50 %). Each goes to the least allocated under-utilized node: n3, then n4."""
    objs = [node(f"n{i}") for i in (1, 2, 3, 4)]
    objs += [owned(f"a{j}", f"a{j}").req(cpu="1200m").set("spec.priority", 10 if j < 2 else 0).on("n1")
             for j in range(3)]
    return objs + [owned(f"b{j}", f"b{j}").req(cpu="1").on("n2") for j in range(3)]


def test_balance_start_follows_low_node_utilization_and_re_places_on_the_emptiest_node():
    state = state_of(*_two_over())
    may_leave = EvictionPolicy().verdicts(state).may_leave
    start = balance_start(state, default_config(), may_leave, state.pod_node, {"cpu": 20}, {"cpu": 60})
    moved = {state.pods[p].metadata.name: state.node_names[int(start[p])]
             for p in np.flatnonzero(start != state.pod_node).tolist()}
    assert moved == {"a2": "n3", "b0": "n4"}


def test_balance_without_thresholds_moves_pods_from_above_the_mean_to_below_it():
    """Means: 165 % / 4 = 41.25 % cpu. n1 (90 %) and n2 (75 %) are above, n3 and n4 below: the start
    lowers the most utilized node."""
    state = state_of(*_two_over())
    may_leave = EvictionPolicy().verdicts(state).may_leave
    start = balance_start(state, default_config(), may_leave, state.pod_node)
    used = np.bincount(start[start >= 0], weights=state.pod_requests[start >= 0, state.resource_col("cpu")],
                       minlength=4)
    assert used.max() < 3600 and (start != state.pod_node).any()


def test_a_balance_plan_says_where_its_search_started():
    plan = plan_reschedule(state_of(*_two_over()), default_config(), "balance", time_limit=10,
                           thresholds=({"cpu": 20}, {"cpu": 60}))
    assert "start: LowNodeUtilization's evictions, re-placed by the scheduler's filters, move 2 pod(s)" in \
        plan.staging.notes


class _Recorder:
    """A TierStarts that records what each tier is asked with and offers ``offer(tier, node_of)``."""

    def __init__(self, offer) -> None:  # type: ignore[no-untyped-def]
        self.offer, self.asked, self.outcomes = offer, {}, {}

    def start(self, tier: TierKey, node_of: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        self.asked[str(tier)] = node_of.copy()
        return self.offer(str(tier), node_of)

    def outcome(self, tier: TierKey, what: str) -> None:
        self.outcomes[str(tier)] = what


def _half_full() -> list:
    """Three 4-cpu nodes each with two 1-cpu pods: pack leaves one of them empty."""
    objs = [node(f"n{i}") for i in (1, 2, 3)]
    return objs + [owned(f"w{i}{j}", f"o{i}{j}").req(cpu="1").on(f"n{i}") for i in (1, 2, 3) for j in (1, 2)]


def _solve(state, starts):  # type: ignore[no-untyped-def]
    return solve_optimal(state, default_config(), OptimalOptions(
        time_limit=10, movable=True, objective=("pack", "repair"), goal_first=True, staged=True, start=starts))


def test_every_goal_tier_is_asked_for_a_start_with_the_answer_of_the_tiers_before_it():
    state = state_of(*_half_full())
    rec = _Recorder(lambda tier, node_of: None)
    assert isinstance(rec, TierStarts)
    _solve(state, rec)
    assert list(rec.asked) == ["placed[priority=0]", "objective:pack", "objective:repair"]
    assert len(np.unique(rec.asked["objective:repair"])) == 2  # pack's answer: two nodes in use


def test_a_start_worse_on_a_tier_already_fixed_is_not_offered():
    """The repair tier's start puts a pod back on the node pack's answer left empty: three nodes in
    use where pack holds two."""
    state = state_of(*_half_full())

    def reopen(tier: str, node_of: np.ndarray) -> np.ndarray | None:
        if tier != "objective:repair":
            return None
        out = node_of.copy()
        empty = next(n for n in range(3) if not (node_of == n).any())
        out[0] = empty
        return out
    rec = _Recorder(reopen)
    result = _solve(state, rec)
    assert rec.outcomes == {"objective:repair": "not offered: worse on objective:pack"}
    assert len(np.unique(result.node_of)) == 2


def test_a_start_no_worse_on_the_fixed_tiers_is_taken_when_it_is_better():
    """The pack tier's start is the consolidation a hand would make: n3's pods onto n1 and n2."""
    state = state_of(*_half_full())

    def pack(tier: str, node_of: np.ndarray) -> np.ndarray | None:
        out = state.pod_node.copy()
        out[state.pod_node == 2] = [0, 1]
        return out if tier == "objective:pack" else None
    rec = _Recorder(pack)
    _solve(state, rec)
    assert rec.outcomes["objective:pack"] in ("taken", "no better than the answer so far")
    assert "objective:repair" not in rec.outcomes


def _room() -> list:
    """Two 4-cpu nodes, each with a 2-cpu pod of priority 0 (a on n1, b on n2); big (3 cpu, priority
    10) is pending: it fits nowhere. DefaultPreemption finds one victim on either node (a tie broken
    for the first, n1); a, instead of being evicted, moves to n2, which has 2 cpu left."""
    return [node("n1"), node("n2"), owned("a", "a").req(cpu="2").on("n1"), owned("b", "b").req(cpu="2").on("n2"),
            pod("big").req(cpu="3").set("spec.priority", 10)]


def test_fit_pending_start_makes_room_as_preemption_would_and_moves_the_victim():
    state = state_of(*_room())
    rows = np.ones(len(state.pods), dtype=bool)
    starts = _starts(state, [Goal.FIT_PENDING])
    start = starts.start(TierKey.parse("placed[priority=10]"), state.pod_node, rows)
    assert (_where(state, start, "big"), _where(state, start, "a"), _where(state, start, "b")) == ("n1", "n2", "n2")
    assert starts.lines() == [("start of fit-pending: 1 of 1 unplaced pod(s) of priority 10 placed, kube-scheduler's "
                              "preemption making room by 1 move(s)")]
    assert starts.start(TierKey.parse("placed[priority=0]"), state.pod_node, rows) is None  # nothing pending at 0


def test_fit_pending_start_puts_back_a_pod_the_answer_so_far_evicted():
    """Greedy mode's placement, the solver's first hint, has kube-scheduler preempt a for big: at the
    priority-0 tier the start puts a back, on n2."""
    state = state_of(*_room())
    rows = np.ones(len(state.pods), dtype=bool)
    hint = state.pod_node.copy()
    hint[state.pod_index["default/a"]] = -1
    hint[state.pod_index["default/big"]] = state.node_index["n1"]
    starts = _starts(state, [Goal.FIT_PENDING])
    start = starts.start(TierKey.parse("placed[priority=0]"), hint, rows)
    assert (_where(state, start, "big"), _where(state, start, "a")) == ("n1", "n2")
    assert starts.lines() == [("start of fit-pending: 1 of 1 unplaced pod(s) of priority 0 placed, kube-scheduler's "
                              "preemption making room by 0 move(s)")]


def test_the_first_goals_preview_is_what_its_tier_is_offered_from_the_same_placement(monkeypatch):
    """The preview (run before optimal mode builds its model, so a large model keeps the nodes it moves
    pods to as candidates) is the start the tier gets when the answer so far is the placement it was
    run from: the simulator runs once; a part of the model gets the moves of its own pods only."""
    import optisched.reschedule.tier_start as ts
    from optisched.optimal.goal_tier import previews

    state = state_of(*_half_full())
    starts = _starts(state, [Goal.CONSOLIDATE])
    runs = []
    real = ts.goal_start
    monkeypatch.setattr(ts, "goal_start", lambda *a, **k: runs.append(1) or real(*a, **k))
    (preview,) = previews(starts, state.pod_node)
    assert len(np.unique(preview[preview >= 0])) == 2 and len(runs) == 1
    every = np.ones(len(state.pods), dtype=bool)
    assert np.array_equal(starts.start(TierKey.parse("objective:pack"), state.pod_node.copy(), every), preview) and len(runs) == 1
    moved = np.flatnonzero(preview != state.pod_node)
    part = np.zeros(len(state.pods), dtype=bool)
    part[moved[0]] = True
    only = starts.start(TierKey.parse("objective:pack"), state.pod_node.copy(), part)
    assert only is not None and np.flatnonzero(only != state.pod_node).tolist() == [moved[0]] and len(runs) == 1
    other = state.pod_node.copy()
    other[moved[0]] = -1
    starts.start(TierKey.parse("objective:pack"), other, every)
    assert len(runs) == 2  # another placement: run again
