"""Invariants of greedy mode on random generated clusters (hypothesis drives the generator's seed and shape)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.profile import default_config

specs = st.builds(GenerateSpec, nodes=st.integers(5, 25), pods=st.integers(20, 150),
                  pending_fraction=st.floats(0.3, 0.9), load=st.floats(0.3, 1.4), zones=st.integers(1, 4),
                  gpu_fraction=st.floats(0.0, 0.3), seed=st.integers(0, 10_000))


def run(spec: GenerateSpec, requeue: bool):  # type: ignore[no-untyped-def]
    state = compile_cluster(cluster_from_objects(generate(spec)))
    return state, GreedyScheduler(state, default_config(), GreedyOptions(requeue=requeue)).run()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs, requeue=st.booleans())
def test_greedy_never_overcommits_and_preempts_only_lower_priority(spec, requeue):
    state, result = run(spec, requeue)
    snap = result.snapshot
    # every resource fits on every node after the run (the generator never overcommits bound pods)
    assert (snap.requested <= state.allocatable).all()
    # the snapshot's totals are exactly the pods it holds
    recomputed = Snapshot(state, with_bound=False)
    for p in np.flatnonzero(snap.node_of >= 0):
        recomputed.add(int(p), int(snap.node_of[p]))
    assert (recomputed.requested == snap.requested).all()
    # preemption never evicts a pod of equal or higher priority than its preemptor
    for victim, (preemptor, _) in result.preempted.items():
        assert state.pod_priority[victim] < state.pod_priority[preemptor]
    # pods bound in the input stay where they were unless preempted
    for p in np.flatnonzero(state.pod_node >= 0):
        assert snap.node_of[p] == state.pod_node[p] or p in result.preempted
    # a pod with preemptionPolicy Never never caused an eviction
    for preemptor, _ in result.preempted.values():
        assert state.pods[preemptor].spec.preemption_policy != "Never"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs)
def test_same_input_same_decisions(spec):
    _, a = run(spec, True)
    _, b = run(spec, True)
    assert a.placements() == b.placements()
