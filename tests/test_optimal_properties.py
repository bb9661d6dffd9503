"""Invariants of optimal mode on clusters where priorities, preemption, PDBs, affinity and spread meet."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.mixed import mixed_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.model.loader import cluster_from_objects
from optisched.model.objects import PreemptionPolicy
from optisched.model.state import compile_cluster
from optisched.optimal.check import check_placement
from optisched.optimal.solve import OptimalOptions, placed_per_level, solve_optimal
from optisched.profile import default_config


def _solve(objs: list[dict], **kw):  # type: ignore[no-untyped-def]
    cluster = cluster_from_objects(objs)
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    return state, config, solve_optimal(state, config, OptimalOptions(time_limit=kw.pop("time_limit", 3), workers=2, **kw))


def _victims(state, node_of):  # type: ignore[no-untyped-def]
    """Bound pods that lost their node: (pod row, its input node)."""
    gone = (state.pod_node >= 0) & (node_of != state.pod_node)
    return [(int(p), int(state.pod_node[p])) for p in np.flatnonzero(gone)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_every_answer_passes_the_checker_and_beats_or_ties_greedy(seed: int) -> None:
    state, config, r = _solve(mixed_cluster(seed))
    assert r.violations == []
    assert check_placement(state, config, r.node_of) == []
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, r.greedy.snapshot.node_of)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000))
def test_a_victim_leaves_only_for_a_higher_priority_preemptor_on_its_node(seed: int) -> None:
    state, _, r = _solve(mixed_cluster(seed))
    if r.certificate.source != "solver":
        return
    arrived = (r.node_of >= 0) & (r.node_of != state.pod_node)
    for victim, node in _victims(state, r.node_of):
        there = np.flatnonzero(arrived & (r.node_of == node))
        preemptors = [p for p in there.tolist() if state.pods[p].spec.preemption_policy != PreemptionPolicy.NEVER]
        assert any(state.pod_priority[p] > state.pod_priority[victim] for p in preemptors), state.pods[victim].key


@pytest.mark.parametrize("seed", [1])
def test_generated_cluster_answer_is_valid_and_at_least_greedy(seed: int) -> None:
    objs = generate(GenerateSpec(nodes=30, pods=300, load=1.0, seed=seed))
    _, _, r = _solve(objs)
    assert r.violations == []
    levels = r.batch.levels
    mine, greedy = placed_per_level(r.batch, r.node_of), placed_per_level(r.batch, r.greedy.snapshot.node_of)
    assert [mine[lv] for lv in levels] >= [greedy[lv] for lv in levels]
    assert {t.name for t in r.certificate.tiers} >= {f"placed[priority={lv}]" for lv in levels}
