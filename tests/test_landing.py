"""A plan's landing prediction: kube-scheduler's greedy replay after the evictions, against the target."""
from __future__ import annotations

import numpy as np
import yaml
from builders import node, pod, run_cli, state_of
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.plans.landing import predict_landing
from optisched.profile import default_config

CFG = default_config()
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]


def _tight() -> list[dict]:
    """small (priority 10) and big (priority 5, 2 CPUs) fit together only with small on n2; kube places
    small first, on the emptier n1 (LeastAllocated), and big is left without room."""
    return [node("n1", cpu="2"), node("n2", cpu="1"),
            pod("small").req(cpu="1").priority(10), pod("big").req(cpu="2").priority(5)]


def test_replay_flags_pods_kube_places_elsewhere():
    state = state_of(*_tight())
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=5))
    landing = predict_landing(state, CFG, r.node_of)
    assert landing.target == {"default/small": "n2", "default/big": "n1"}
    assert landing.landed == {"default/small": "n1", "default/big": None}
    assert landing.differs == {"default/small": ("n2", "n1"), "default/big": ("n1", None)}


def test_replay_re_creates_owned_movers_and_drops_bare_ones():
    """A plan that moves an owned pod and evicts a bare one: the owned pod comes back pending and is
    placed by the replay; the bare one is gone."""
    objs = [node("n1", cpu="2"), node("n2", cpu="2"),
            pod("owned").req(cpu="1").set("metadata.ownerReferences", OWNER).on("n1"), pod("bare").req(cpu="1").on("n1")]
    state = state_of(*objs)
    node_of = state.pod_node.copy()
    node_of[state.pod_index["default/owned"]] = state.node_index["n2"]
    node_of[state.pod_index["default/bare"]] = -1
    landing = predict_landing(state, CFG, node_of)
    assert landing.target == {"default/owned": "n2"}
    assert landing.landed["default/owned"] in ("n1", "n2")
    assert "default/bare" not in landing.landed


def test_the_replacement_of_a_pod_being_resized_requests_its_spec():
    """The evicted pod held 3 CPUs while its resize down to 1 was in progress; the pod its controller
    re-creates has no status, so it requests 1 CPU (and a 3-CPU pending pod now fits beside it)."""
    objs = [node("n1", cpu="4"), node("n2", cpu="4"),
            pod("owned").req(cpu="1").set("metadata.ownerReferences", OWNER).on("n1").status_resources(
                "c0", {"cpu": "3"})]
    state = state_of(*objs)
    cpu = state.resource_col("cpu")
    assert int(state.pod_requests[state.pod_index["default/owned"], cpu]) == 3000
    node_of = state.pod_node.copy()
    node_of[state.pod_index["default/owned"]] = state.node_index["n2"]
    after = predict_landing(state, CFG, node_of).replay.state
    assert int(after.pod_requests[after.pod_index["default/owned"], cpu]) == 1000


def test_plan_file_carries_the_target_and_the_replay(tmp_path, capsys):
    src = tmp_path / "cluster.yaml"
    src.write_text(yaml.safe_dump_all([o.build() for o in _tight()]))
    plan = tmp_path / "plan.yaml"
    code, out, err = run_cli(["preempt", str(src), "--mode", "optimal", "--time-limit", "5", "--output", str(plan)],
                             capsys)
    assert code == 0, err
    (head,) = list(yaml.safe_load_all(plan.read_text()))
    assert head["target"] == {"default/small": "n2", "default/big": "n1"}
    assert {d["pod"]: d["landing"] for d in head["differs"]} == {"default/small": "n1", "default/big": None}
    assert "0 of 2 pod(s) land on the plan" in out and "(pending)" in out


def _recompiled(state, node_of):  # type: ignore[no-untyped-def]
    """The cluster after the evictions, compiled afresh from its pod list (what the delta must equal)."""
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    from optisched.model.objects import PodStatus
    from optisched.model.state import compile_cluster
    at = max([p.metadata.creation_timestamp.replace(tzinfo=UTC) for p in state.pods if p.metadata.creation_timestamp],
             default=datetime(2000, 1, 1, tzinfo=UTC))
    gone = (state.pod_node >= 0) & (node_of != state.pod_node)
    kept = [p for i, p in enumerate(state.pods) if not gone[i]]
    back = [p for i, p in enumerate(state.pods) if gone[i] and p.metadata.owner_references]
    back = [p.model_copy(update={"metadata": p.metadata.model_copy(update={"creation_timestamp": at + timedelta(seconds=k + 1)}),
                                 "spec": p.spec.model_copy(update={"node_name": None}), "status": PodStatus()})
            for k, p in enumerate(back)]
    return compile_cluster(replace(state.cluster, pods=kept + back))


@st.composite
def _evictions(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 4))
    objs: list = [node(f"n{i}", cpu="4") for i in range(n)]
    for j in range(draw(st.integers(1, 8))):
        b = pod(f"p{j}").req(cpu=draw(st.sampled_from(["500m", "1", "2"]))).priority(draw(st.sampled_from([0, 10])))
        if draw(st.booleans()):
            b = b.set("metadata.ownerReferences", OWNER)
        where = draw(st.integers(-1, n - 1))
        objs.append(b.on(f"n{where}") if where >= 0 else b)
    state = state_of(*objs)
    node_of = np.array([draw(st.integers(-1, n - 1)) if draw(st.booleans()) else int(x) for x in state.pod_node])
    return state, node_of


@settings(max_examples=40, deadline=None)
@given(_evictions())
def test_the_state_after_evictions_is_the_recompiled_one_and_replays_the_same(case):
    """The replay's state is a delta on the compiled arrays: rows, arrays and the replay's landings
    equal those of compiling the evicted cluster afresh."""
    from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
    state, node_of = case
    ref = _recompiled(state, node_of)
    landing = predict_landing(state, CFG, node_of)
    got = landing.replay.state
    assert [p.key for p in got.pods] == [p.key for p in ref.pods]
    assert [p.metadata.creation_timestamp for p in got.pods] == [p.metadata.creation_timestamp for p in ref.pods]
    for name in ("pod_requests", "pod_nonzero", "pod_node", "pod_priority"):
        assert np.array_equal(getattr(got, name)[:, :len(ref.resources)] if name == "pod_requests"
                              else getattr(got, name), getattr(ref, name)), name
    assert landing.replay.placements() == GreedyScheduler(ref, CFG, GreedyOptions(record=False)).run().placements()


def test_a_plan_moving_a_pod_being_resized_predicts_its_replacement_by_its_spec():
    """a holds 3 CPUs on n1 while its resize down to 1 is in progress; the plan empties n1 and moves a to
    the 2-CPU n2, where its replacement (1 CPU, no status) lands."""
    from optisched.reschedule import stage

    state = state_of(node("n1", cpu="4"), node("n2", cpu="2"),
                     pod("a").req(cpu="1").set("metadata.ownerReferences", OWNER).on("n1").status_resources(
                         "c0", {"cpu": "3"}))
    target = state.pod_node.copy()
    target[state.pod_index["default/a"]] = state.node_index["n2"]
    for incremental in (True, False):
        staging = stage(state, CFG, target, {}, emptied=frozenset({"n1"}), incremental=incremental)
        assert [[(m.key, m.target, m.predicted) for m in w.moves] for w in staging.waves] == [
            [("default/a", "n2", "n2")]]
