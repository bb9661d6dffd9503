"""The LP bound of the placement tiers (optisched.optimal.bound): never below what any placement reaches,
and the rounding cuts take out the fractional pods the plain relaxation adds to each node's remainder."""
from __future__ import annotations

import itertools

import numpy as np
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.optimal.bound import LevelBound
from optisched.optimal.classes import build_batch
from optisched.optimal.model import BatchModel
from optisched.profile import default_config


def _model(objs: list) -> BatchModel:
    state = state_of(*objs)
    return BatchModel(build_batch(state, default_config()), default_config(), build=False)


def _best(cpus: list[int], sizes: list[int]) -> int:
    """Most pods placed on nodes of ``cpus`` millicores, by brute force (every pod: a node or none)."""
    best = 0
    for choice in itertools.product(range(len(cpus) + 1), repeat=len(sizes)):
        used = [0] * len(cpus)
        for size, n in zip(sizes, choice):
            if n < len(cpus):
                used[n] += size
        if all(u <= c for u, c in zip(used, cpus)):
            best = max(best, sum(1 for n in choice if n < len(cpus)))
    return best


def _cluster(cpus: list[int], sizes: list[int]) -> list:
    nodes = [node(f"n{i}", cpu=f"{c}m", memory="64Gi") for i, c in enumerate(cpus)]
    pods = [pod(f"p{i}").req(cpu=f"{s}m", memory="64Mi") for i, s in enumerate(sizes)]
    return nodes + pods


def test_rounding_cuts_close_a_node_remainder_the_plain_relaxation_fills() -> None:
    # three nodes of 4 cpus, pods of 1.5 and 1.6 cpus: two per node, six in all; the plain relaxation
    # pools the types' 12 cpus and tops them up with a fraction of a pod
    objs = _cluster([4000] * 3, [1500] * 6 + [1600] * 6)
    plain = LevelBound(_model(objs), max_columns=0, cuts=False)
    cut = LevelBound(_model(objs), max_columns=0, cuts=True)
    assert not cut.per_node  # one node type (same labels but the hostname): the pooled relaxation
    assert plain.bound(0) == 7
    assert cut.bound(0) == 6 == _best([4000] * 3, [1500] * 6 + [1600] * 6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpus=st.lists(st.sampled_from([1000, 2500, 4000]), min_size=1, max_size=3),
       sizes=st.lists(st.sampled_from([300, 700, 1200, 1500, 2600]), min_size=1, max_size=6))
def test_the_bound_is_never_below_the_best_placement(cpus: list[int], sizes: list[int]) -> None:
    objs = _cluster(cpus, sizes)
    best = _best(cpus, sizes)
    for per_node, cuts in ((True, True), (False, True), (False, False)):
        lb = LevelBound(_model(objs), max_columns=10**9 if per_node else 0, cuts=cuts)
        got = lb.bound(0)
        assert got is not None and got >= best, (per_node, cuts, got, best)


def test_a_tighter_bound_with_cuts_on_generated_clusters() -> None:
    from optisched.datasets.generate import GenerateSpec, generate
    from optisched.model.loader import cluster_from_objects
    from optisched.model.state import compile_cluster

    state = compile_cluster(cluster_from_objects(generate(GenerateSpec(nodes=60, pods=600, load=1.0, seed=3))))
    batch = build_batch(state, default_config())
    model = BatchModel(batch, default_config(), build=False)
    plain, cut = LevelBound(model, max_columns=0, cuts=False), LevelBound(model, max_columns=0, cuts=True)
    bounds = []
    for level in batch.levels:
        a, b = plain.bound(level), cut.bound(level)
        assert a is not None and b is not None and b <= a
        bounds.append((a, b))
        plain.fix(level, b)
        cut.fix(level, b)
    assert np.any([b < a for a, b in bounds])


def test_levels_without_room_bound_zero_and_fixing_a_level_bounds_the_next() -> None:
    # two nodes of 4 cpus; a high-priority pod of 3.5 cpus per node (two pods), low-priority pods of 2
    # cpus, and a high one that fits nowhere: fixing the high level at 2 leaves half a cpu per node, a
    # quarter of a low pod each in the relaxation, so no low pod
    nodes = [node(f"n{i}", cpu="4000m", memory="64Gi") for i in range(2)]
    high = [pod(f"h{i}").req(cpu="3500m", memory="64Mi").priority(1000) for i in range(2)]
    low = [pod(f"l{i}").req(cpu="2000m", memory="64Mi") for i in range(3)]
    huge = [pod("big").req(cpu="9000m", memory="64Mi").priority(1000)]
    objs = [*nodes, *high, *low, *huge]
    for per_node in (True, False):
        lb = LevelBound(_model(objs), max_columns=10**9 if per_node else 0)
        assert lb.bound(1000) == 2  # the huge pod has no column: it adds nothing
        lb.fix(1000, 2)
        assert lb.bound(0) == 0, per_node
        assert lb.bound(-5) == 0  # a level the batch does not have


def test_relative_gap_is_the_share_of_the_larger_value_not_reached() -> None:
    from optisched.optimal.tier_key import TierKey
    from optisched.optimal.tiers import Tier, relative_gap

    assert relative_gap(1249, 1260) == 11 / 1260  # maximized: the share of the bound missed
    # minimized with a bound of 0: everything above it is missed (was 1316400 % with |bound| as the scale)
    assert relative_gap(13164, 0) == 1.0
    assert relative_gap(900, 137) == (900 - 137) / 900
    assert relative_gap(5, 5) == relative_gap(0, 0) == 0.0
    assert Tier(TierKey.parse("disruption"), "min", 13164, 0, "FEASIBLE", 1.0).to_dict()["gap"] is None  # no useful bound


def _lex_best(cpus: list[int], pods: list[tuple[int, int]]) -> tuple[int, int]:
    """(high, low): the most pods of priority 1000 placed, then the most of priority 0, by brute force
    over every pod's node (or none); ``pods`` are (cpu millicores, priority)."""
    best = (0, 0)
    for choice in itertools.product(range(len(cpus) + 1), repeat=len(pods)):
        used = [0] * len(cpus)
        for (size, _), n in zip(pods, choice):
            if n < len(cpus):
                used[n] += size
        if all(u <= c for u, c in zip(used, cpus)):
            placed = [prio for (_, prio), n in zip(pods, choice) if n < len(cpus)]
            best = max(best, (placed.count(1000), placed.count(0)))
    return best


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpus=st.lists(st.sampled_from([1000, 2500, 4000]), min_size=1, max_size=3),
       pods=st.lists(st.tuples(st.sampled_from([300, 700, 1200, 1500, 2600]), st.sampled_from([0, 1000])),
                     min_size=1, max_size=6))
def test_each_level_s_bound_holds_with_the_levels_above_fixed_at_their_optimum(
        cpus: list[int], pods: list[tuple[int, int]]) -> None:
    nodes = [node(f"n{i}", cpu=f"{c}m", memory="64Gi") for i, c in enumerate(cpus)]
    objs = nodes + [pod(f"p{i}").req(cpu=f"{s}m", memory="64Mi").priority(prio) for i, (s, prio) in enumerate(pods)]
    high, low = _lex_best(cpus, pods)
    for per_node, cuts in ((True, True), (False, True), (False, False)):
        lb = LevelBound(_model(objs), max_columns=10**9 if per_node else 0, cuts=cuts)
        got_high = lb.bound(1000)
        assert got_high is not None and got_high >= high, (per_node, cuts, got_high, high)
        lb.fix(1000, high)
        got_low = lb.bound(0)
        assert got_low is not None and got_low >= low, (per_node, cuts, got_low, low)


def _generated(nodes: int = 60, pods: int = 600, load: float = 1.0, seed: int = 3) -> BatchModel:
    from optisched.datasets.generate import GenerateSpec, generate
    from optisched.model.loader import cluster_from_objects
    from optisched.model.state import compile_cluster

    state = compile_cluster(cluster_from_objects(generate(GenerateSpec(nodes=nodes, pods=pods, load=load, seed=seed))))
    return BatchModel(build_batch(state, default_config()), default_config(), build=False)


def test_every_level_gets_its_bound_when_the_share_covers_the_levels_together() -> None:
    """The share is counted in the unit the solves are charged in (simplex iterations): a level that needs
    more than an equal part takes it from what the levels before left, and no level overruns its part,
    so the last ones are not left with nothing (they were: a level charged more than GLOP's own limit
    allowed it, and the last level's part went negative)."""
    from optisched.optimal.clock import WORK_COST, Clock

    model = _generated()
    free = LevelBound(model, clock=Clock(1e9))
    bounds, needed = {}, []
    for level in free.levels:
        bounds[level] = free.bound(level)
        needed.append(free.solver.iterations())
        free.fix(level, bounds[level])
    assert len(free.levels) >= 3 and max(needed) > sum(needed) / len(needed)  # levels of unequal cost
    for share in (0.3, 0.6, 1.05):  # of what the levels need together
        tight = LevelBound(model, clock=Clock(1e9), seconds=share * WORK_COST["lp iteration"] * sum(needed))
        for level in tight.levels:
            got = tight.bound(level)
            assert got is None or got == bounds[level], level
            assert tight.seconds >= 0, (share, level)  # no level took more than its part
            tight.fix(level, bounds[level])
        assert (tight.notes == []) == (share > 1), share


def test_a_level_fixed_beyond_the_relaxation_says_so_instead_of_running_out_of_time() -> None:
    from optisched.optimal.clock import Clock

    model = _generated()
    lb = LevelBound(model, clock=Clock(1e9))
    top, nxt = lb.levels[0], lb.levels[1]
    lb.fix(top, lb.bound(top) + 1)
    assert lb.bound(nxt) is None
    assert len(lb.notes) == 1 and "admits no placement" in lb.notes[0] and f"priority={nxt}" in lb.notes[0]
