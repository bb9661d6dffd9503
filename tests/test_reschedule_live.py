"""The staging's replays on one greedy setup kept across waves (optisched/reschedule/live.py) against each
replay built afresh (the reference): the same plans on random clusters of several waves, the live
snapshot undone exactly after each trial, and the one difference on purpose — a pod replaced in an
earlier wave is a new pod (younger, last on its node), which preemption's choice of victims reads."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.profile import default_config
from optisched.reschedule import Budgets, stage
from optisched.reschedule.live import LiveCluster
from optisched.reschedule.replays import Replays
from optisched.reschedule.waves import Move, cordon

CFG = default_config()
OWNERS = ["web", "api", "db", "cache"]


def owned(name: str, owner: str):  # type: ignore[no-untyped-def]
    return pod(name).label(app=owner).set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}])


@st.composite
def plans(draw, preempting: bool = False):  # type: ignore[no-untyped-def]
    """A cluster of 3 to 5 nodes in two zones, 4 to 14 pods of one priority, spread, anti-affinity, host
    ports (never two holders of a port on one node: there an eviction frees it, below), a budget of one
    disruption, some pods pending; a random target and maybe a node to empty. Maybe (``preempting``:
    always, with the budget and one pod per workload and wave, so that waves follow) one pending pod of
    higher priority that takes a whole node it is pinned to: it preempts every pod there in the first
    replay, where both paths start from the input; no other pod can preempt (the paths differ where
    preemption reads start times and node order, below), so the victims are what later waves read."""
    n = draw(st.integers(3, 5))
    objs: list = [node(f"n{i}", cpu="4").zone(f"z{i % 2}") for i in range(n)]
    free = [4000] * n
    ported = [False] * n  # a host port held on the node (never twice: kube-scheduler placed them)
    for j in range(draw(st.integers(4, 14))):
        owner = draw(st.sampled_from(OWNERS))
        cpu = draw(st.sampled_from([250, 500, 1000, 1500]))
        b = owned(f"p{j}", owner) if draw(st.integers(0, 5)) else pod(f"p{j}")
        port = draw(st.integers(0, 4)) == 0
        b = b.set("spec.containers", [{"name": "c0", "image": "app:1", "resources": {"requests": {"cpu": f"{cpu}m"}},
                                       "ports": [{"containerPort": 9100, "hostPort": 9100}] if port else []}])
        b = b.set("metadata.creationTimestamp", f"2026-01-01T00:{j:02d}:00Z")
        if owner == "db":
            b = b.apart("db")
        if owner == "api":
            b = b.set("spec.topologySpreadConstraints", [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": "api"}}}])
        where = draw(st.one_of(st.just(-1), st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, n - 1)))
        if where >= 0 and free[where] >= cpu and not (port and ported[where]):
            free[where] -= cpu
            ported[where] |= port
            b = b.on(f"n{where}")
        objs.append(b)
    if preempting or draw(st.booleans()):
        pinned = {"kubernetes.io/hostname": f"n{draw(st.integers(0, n - 1))}"}
        objs.append(pod("preemptor").req(cpu="4").priority(100).set("spec.nodeSelector", pinned))
    if preempting or draw(st.booleans()):
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "web", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}})
    state = state_of(*objs)
    lowest = 0 if preempting else -1  # preempting: no pod left without a node (those moves are dropped)
    target = np.array([draw(st.integers(lowest, n - 1)) if draw(st.booleans()) else int(state.pod_node[p])
                       for p in range(len(state.pods))], dtype=np.int64)
    emptied = frozenset({"n0"}) if draw(st.booleans()) else frozenset()
    if emptied:
        target[target == 0] = 1
    return state, target, emptied, "1" if preempting else draw(st.sampled_from([None, "1"]))


def _outcome(staging) -> tuple:  # type: ignore[no-untyped-def]
    return ([[(m.key, m.source, m.target, m.predicted, m.reason) for m in w.moves] for w in staging.waves],
            [(m.key, why) for m, why in staging.dropped], staging.notes, staging.final,
            [c.to_dict() for c in staging.cycles], staging.replays, staging.minimal)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_the_live_setup_stages_every_plan_as_the_replays_built_afresh_do(case):
    """Not ``homeless``: a replacement left pending by a wave is the other difference on purpose (below)."""
    _assert_same_staging(*case)


def _assert_same_staging(state, target, emptied, per_workload) -> None:  # type: ignore[no-untyped-def]
    budgets = Budgets(max_unavailable_per_workload=per_workload)
    fresh = stage(state, CFG, target, {}, budgets, emptied, incremental=False)
    live = stage(state, CFG, target, {}, budgets, emptied)
    assert _outcome(live) == _outcome(fresh)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(preempting=True))
def test_pods_preempted_by_a_kept_wave_are_staged_as_the_replays_built_afresh_do(case):
    """A victim of the preemptor is gone (bare) or re-created as a new pod (owned) in both paths, and a
    move planned for it later is dropped in both."""
    _assert_same_staging(*case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.data())
def test_a_trial_is_undone_exactly(case, data):
    """After any trial and its undo, the live snapshot (each node's pod order included) and a replay's
    answer are what they were before it."""
    state, _, emptied, _ = case
    base = cordon(state, emptied)
    bound = np.flatnonzero(state.pod_node >= 0).tolist()
    if not bound:
        return
    live = LiveCluster(base, CFG)
    current, gone = state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool)

    def moves(rows: list[int]) -> list[Move]:
        return [Move(p, state.pods[p].key, "", None, "") for p in rows]

    first = data.draw(st.lists(st.sampled_from(bound), unique=True, max_size=4))
    before = live.trial(moves(first), current, gone)
    live.undo()
    pods_on = [list(x) for x in live.snapshot.pods_on]
    requested = live.snapshot.requested.copy()
    other = data.draw(st.lists(st.sampled_from(bound), unique=True, max_size=4))
    live.trial(moves(other), current, gone)
    live.undo()
    assert [list(x) for x in live.snapshot.pods_on] == pods_on
    assert np.array_equal(live.snapshot.requested, requested)
    again = live.trial(moves(first), current, gone)
    assert again.landed == before.landed and np.array_equal(again.after, before.after)


def _replaced_then_preempting() -> list:
    """n1 (cordoned) holds a (priority 0, the oldest pod) and h (priority 100); n2 holds x (priority 0,
    younger than a). Wave 1 moves a to n2; wave 2 moves h, whose replacement fits only on n2 once one of
    a and x is gone."""
    return [node("n1", cpu="4"), node("n2", cpu="4").label(pool="b"),
            owned("a", "ra").req(cpu="1500m").set("metadata.creationTimestamp", "2026-01-01T00:00:00Z").on("n1"),
            owned("h", "rh").req(cpu="2").priority(100).set("metadata.creationTimestamp", "2026-01-03T00:00:00Z")
            .set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}]}}})
            .on("n1"),
            owned("x", "rx").req(cpu="1500m").set("metadata.creationTimestamp", "2026-01-02T00:00:00Z").on("n2")]


@pytest.mark.parametrize("incremental,victim", [
    (True, "default/a"),  # a's replacement started when wave 1 bound it: the youngest, so the victim
    (False, "default/x"),  # replayed afresh, a keeps its original start time: x is the younger
], ids=["kept live, the pod replaced in wave 1 is the younger and is preempted",
        "built afresh, the replaced pod keeps its input start time and the other is preempted"])
def test_a_pod_replaced_in_an_earlier_wave_is_a_new_pod_for_preemption(incremental, victim):
    state = state_of(*_replaced_then_preempting())
    base = cordon(state, frozenset({"n1"}))
    live = LiveCluster(base, CFG) if incremental else None
    current, gone = state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool)
    a = Move(state.pod_index["default/a"], "default/a", "n1", "n2", "")
    first = Replays(base, CFG, current, gone, {}, live)
    wave1 = first([a])
    first.keep([a])
    assert wave1.landed == {"default/a": "n2"}
    h = Move(state.pod_index["default/h"], "default/h", "n1", "n2", "")
    wave2 = Replays(base, CFG, wave1.after, wave1.gone, {}, live)([h])
    assert wave2.landed == {"default/h": "n2"} and wave2.preempts == {"default/h": victim}


@pytest.mark.parametrize("incremental,landed", [
    (True, "n2"),  # the replacement, unbound, goes where there is room once x has left
    (False, None),  # built afresh, the pending pod is a's original object, still naming n1 (cordoned)
], ids=["kept live, a replacement left pending by wave 1 is scheduled in wave 2",
        "built afresh, the pod left pending is its original, bound by name to the node it left"])
def test_a_replacement_left_pending_by_a_wave_stays_a_new_unbound_pod(incremental, landed):
    """fit-pending may evict a pod without a node for it: wave 1 evicts a from n1 (cordoned) while n2 is
    full, so its replacement stays pending; wave 2 evicts x, a bare pod, from n2."""
    state = state_of(node("n1", cpu="4"), node("n2", cpu="4"), owned("a", "ra").req(cpu="1").on("n1"),
                     pod("x").req(cpu="4").on("n2"))
    base = cordon(state, frozenset({"n1"}))
    live = LiveCluster(base, CFG) if incremental else None
    current, gone = state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool)
    a = Move(state.pod_index["default/a"], "default/a", "n1", None, "")
    first = Replays(base, CFG, current, gone, {}, live)
    wave1 = first([a])
    first.keep([a])
    assert wave1.landed == {"default/a": None}
    x = Move(state.pod_index["default/x"], "default/x", "n2", None, "")
    wave2 = Replays(base, CFG, wave1.after, wave1.gone, {}, live)([x])
    assert wave2.landed == {"default/a": landed}
    assert wave2.gone[state.pod_index["default/x"]]


def _port(b):  # type: ignore[no-untyped-def]
    return b.set("spec.containers", [{"name": "c0", "image": "app:1", "ports": [{"containerPort": 80, "hostPort": 80}],
                                      "resources": {"requests": {"cpu": "100m"}}}])


def _two_on_one_port() -> list:
    """a and b both hold host port 80 on n1 (bound there without kube-scheduler); p, pending, holds port 80
    and may only run on n1."""
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}
    return [node("n1"), node("n2"), _port(owned("a", "ra")).on("n1"), _port(owned("b", "rb")).on("n1"),
            _port(pod("p")).set("spec.affinity", pinned)]


@pytest.mark.parametrize("incremental,landed", [
    (True, "n1"),  # RemovePod(a) took port 80 out of n1's used ports, though b holds it
    (False, None),  # built afresh from the pods left, b holds port 80 on n1
], ids=["kept live, an eviction frees its host port on the node as kube-scheduler's cache does",
        "built afresh, the port another pod on the node holds stays used"])
def test_an_evicted_pod_frees_its_host_port_as_a_set(incremental, landed):
    """kubernetes v1.35 ``HostPortInfo.Remove`` deletes the (ip, protocol, port) entry of the node, whoever
    else holds it: after a's eviction kube-scheduler's NodeInfo for n1 has port 80 free."""
    state = state_of(*_two_on_one_port())
    live = LiveCluster(state, CFG) if incremental else None
    current, gone = state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool)
    a = Move(state.pod_index["default/a"], "default/a", "n1", "n2", "")
    trial = Replays(state, CFG, current, gone, {}, live)([a])
    assert trial.landed == {"default/p": landed, "default/a": "n2"}


def test_undoing_an_eviction_puts_a_freed_host_port_back_as_it_was():
    """Wave 1 evicts a (port 80 on n1 is then free, b holding it notwithstanding); a trial evicting b and
    undone leaves port 80 free, not used again by b's return."""
    state = state_of(*_two_on_one_port()[:-1])
    live = LiveCluster(state, CFG)
    current, gone = state.pod_node.copy(), np.zeros(len(state.pods), dtype=bool)
    a = Move(state.pod_index["default/a"], "default/a", "n1", "n2", "")
    wave1 = live.trial([a], current, gone)
    live.keep()
    ports = next(fw.filter_rules["NodePorts"] for fw in live.sched._frameworks.values())
    n1 = state.node_index["n1"]
    before = ports.save_node(n1)
    assert not any(before.values())
    b = Move(state.pod_index["default/b"], "default/b", "n1", "n2", "")
    live.trial([b], wave1.after, wave1.gone)
    live.undo()
    assert ports.save_node(n1) == before
