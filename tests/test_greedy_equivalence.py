"""The optimized greedy engine against the reference code paths it stands in for, on generated clusters.

``GreedyOptions(reference=True)`` runs the plain code: every plugin called per cycle over the nodes,
one ``SelectVictimsOnNode`` per candidate node. The default options run the vectorized and cached
paths. Both must decide the same in every cycle: the whole trace (filter failures and reasons, every
score, preemption candidates and victims, FitError messages), the final placements, the messages of
the pods left pending and the victims of every preemption.
"""
from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from helpers.mixed import mixed_cluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import trace_of
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.profile import default_config

# (seed, nodes, pods, load, tie-break, requeue): loads below, near and above capacity
CASES = [
    (1, 100, 800, 0.4, TieBreak.FIRST, True),
    (2, 120, 900, 0.8, TieBreak.HEAP, False),
    (3, 150, 1100, 1.2, TieBreak.FIRST, False),
    (4, 100, 900, 1.2, TieBreak.RANDOM, True),
    (5, 300, 1500, 0.8, TieBreak.FIRST, False),
]


def _state(seed: int, nodes: int, pods: int, load: float):  # type: ignore[no-untyped-def]
    objs = generate(GenerateSpec(nodes=nodes, pods=pods, pending_fraction=0.5, seed=seed, load=load))
    return compile_cluster(cluster_from_objects(objs))


def _run(seed: int, nodes: int, pods: int, load: float, options: GreedyOptions) -> dict:
    state = _state(seed, nodes, pods, load)
    config = default_config()
    res = GreedyScheduler(state, config, options).run()
    doc = trace_of(res, config, options.tie_break)
    doc["messages"] = {state.pods[p].key: m for p, m in res.unschedulable.items()}
    return json.loads(json.dumps(doc))


def _first_difference(ref: list, got: list) -> str | None:
    for i, (a, b) in enumerate(zip(ref, got)):
        if a != b:
            keys = [k for k in a if a.get(k) != b.get(k)]
            return f"cycle {i} ({a['pod']}): {keys}"
    return None if len(ref) == len(got) else f"{len(ref)} cycles vs {len(got)}"


@pytest.mark.parametrize("seed,nodes,pods,load,tie_break,requeue", CASES,
                         ids=[f"seed {c[0]}, {c[1]} nodes, load {c[3]}, {c[4]}, requeue {c[5]}" for c in CASES])
def test_optimized_engine_decides_as_the_reference(seed, nodes, pods, load, tie_break, requeue):
    options = GreedyOptions(tie_break=tie_break, seed=seed, requeue=requeue)
    ref = _run(seed, nodes, pods, load, replace(options, reference=True))
    got = _run(seed, nodes, pods, load, options)
    assert ref["preempted"], "the case should exercise preemption"
    assert _first_difference(ref["cycles"], got["cycles"]) is None
    assert got["final"] == ref["final"]
    assert got["messages"] == ref["messages"]
    assert got["preempted"] == ref["preempted"]


def test_dry_runs_summing_every_move_with_bincount_decide_as_the_reference(monkeypatch):
    """ResourceWorld sums large moves (taking every lower-priority pod off) per column with bincount;
    these clusters are too small to reach the size where it starts, so here every move takes it."""
    from optisched.plugins.noderesources import fit
    monkeypatch.setattr(fit, "_MANY", 1)
    seed, nodes, pods, load, tie_break, requeue = CASES[1]
    options = GreedyOptions(tie_break=tie_break, seed=seed, requeue=requeue)
    ref = _run(seed, nodes, pods, load, replace(options, reference=True))
    got = _run(seed, nodes, pods, load, options)
    assert ref["preempted"]
    assert _first_difference(ref["cycles"], got["cycles"]) is None
    assert (got["final"], got["messages"], got["preempted"]) == (ref["final"], ref["messages"], ref["preempted"])


def _mixed_doc(seed: int, options: GreedyOptions, nominate: bool, twins: bool = False) -> dict:
    state = compile_cluster(cluster_from_objects(mixed_cluster(seed, twins)))
    config = default_config()
    sched = GreedyScheduler(state, config, options)
    if nominate:  # as if earlier preemptions had nominated these pods and they were still waiting
        rng = random.Random(seed)
        for p in rng.sample(state.pending, 3):
            sched.nominated[p] = rng.randrange(state.num_nodes)
    res = sched.run()
    doc = trace_of(res, config, options.tie_break)
    doc["messages"] = {state.pods[p].key: m for p, m in res.unschedulable.items()}
    return json.loads(json.dumps(doc))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), requeue=st.booleans(), nominate=st.booleans())
def test_optimized_engine_decides_as_the_reference_when_rules_cross_priorities(seed, requeue, nominate):
    """Preemptors whose affinity, anti-affinity and spread constraints count their victims, and victims
    whose anti-affinity rejects the preemptor, with PDBs, host ports, start-time ties and pods nominated
    to nodes the filters must count them on."""
    options = GreedyOptions(requeue=requeue)
    ref = _mixed_doc(seed, replace(options, reference=True), nominate)
    got = _mixed_doc(seed, options, nominate)
    assert _first_difference(ref["cycles"], got["cycles"]) is None
    assert (got["final"], got["messages"], got["preempted"]) == (ref["final"], ref["messages"], ref["preempted"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), requeue=st.booleans(), nominate=st.booleans())
def test_a_failed_cycle_is_reused_only_while_what_it_read_holds(seed, requeue, nominate):
    """Every pending pod has a twin of the same shape: the optimized engine reuses a failed cycle's record
    for the twin when the snapshot, the nominations and the start index are unchanged."""
    options = GreedyOptions(requeue=requeue)
    ref = _mixed_doc(seed, replace(options, reference=True), nominate, twins=True)
    got = _mixed_doc(seed, options, nominate, twins=True)
    assert _first_difference(ref["cycles"], got["cycles"]) is None
    assert (got["final"], got["messages"], got["preempted"]) == (ref["final"], ref["messages"], ref["preempted"])
