"""The scheduling queue: PrioritySort, backoff on a simulated clock, and requeue on cluster events."""
from __future__ import annotations

from builders import node, pod, state_of

from optisched.greedy.queue import ClusterEvent, SchedulingQueue
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.profile import default_config


def test_priority_then_creation_time_then_input_order():
    state = state_of(node("n"),
                     pod("late").priority(5).set("metadata.creationTimestamp", "2025-01-01T00:00:09Z"),
                     pod("early").priority(5).set("metadata.creationTimestamp", "2025-01-01T00:00:01Z"),
                     pod("no-time").priority(5),
                     pod("high").priority(100).set("metadata.creationTimestamp", "2025-01-02T00:00:00Z"),
                     pod("tie-a").priority(1), pod("tie-b").priority(1))
    q = SchedulingQueue(state, state.pending)
    names = [state.pods[p].metadata.name for p in q.initial_order()]
    assert names == ["high", "no-time", "early", "late", "tie-a", "tie-b"]


def test_a_queue_seed_shuffles_within_each_priority_only():
    pods = [pod(f"p{i}").priority(10 * (i % 3)).set("metadata.creationTimestamp", f"2025-01-01T00:00:{i:02d}Z")
            for i in range(12)]
    state = state_of(node("n"), *pods)
    orders = {tuple(SchedulingQueue(state, state.pending, shuffle=seed).initial_order()) for seed in range(5)}
    assert len(orders) > 1
    for order in orders:
        assert [int(state.pod_priority[p]) for p in order] == sorted(state.pod_priority[list(order)].tolist(), reverse=True)
    assert SchedulingQueue(state, state.pending, shuffle=3).initial_order() == \
        SchedulingQueue(state, state.pending, shuffle=3).initial_order()  # seeded
    assert GreedyOptions().queue_seed is None  # by default, creation times decide (the recorded traces)


def test_backoff_doubles_up_to_ten_seconds():
    state = state_of(node("n"), pod("p"))
    q = SchedulingQueue(state, state.pending)
    p = q.pop()
    durations = []
    for _ in range(6):
        durations.append(q.backoff_duration(p))
        q.park(p, frozenset({"InterPodAffinity"}))
        assert q.on_event(ClusterEvent.ASSIGNED_POD_ADD) == 1
        assert q.pop() == p  # the clock jumps to the backoff expiry
    assert durations == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_an_event_only_moves_pods_it_could_help():
    state = state_of(node("n"), pod("a"), pod("b"))
    q = SchedulingQueue(state, state.pending)
    a, b = q.pop(), q.pop()
    q.park(a, frozenset({"NodeResourcesFit"}))
    q.park(b, frozenset({"PodTopologySpread"}))
    assert q.on_event(ClusterEvent.ASSIGNED_POD_ADD) == 1  # a new pod cannot free resources
    assert q.pop() == b
    assert q.on_event(ClusterEvent.ASSIGNED_POD_DELETE) == 1
    assert q.pop() == a


AFFINITY = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}


def _cluster():
    # the web pod (higher priority, tried first) needs a db pod on its node; the db pod comes later
    return state_of(node("n1"), node("n2"),
                    pod("web").priority(10).label(app="web").set("spec.affinity", AFFINITY),
                    pod("db").priority(1).label(app="db"))


def test_a_pod_waiting_for_affinity_is_retried_after_the_db_pod_binds():
    state = _cluster()
    result = GreedyScheduler(state, default_config(), GreedyOptions()).run()
    placements = result.placements()
    assert placements["default/db"] is not None
    assert placements["default/web"] == placements["default/db"]
    attempts = [c.attempt for c in result.cycles if state.pods[c.pod].metadata.name == "web"]
    assert attempts == [1, 2]


def test_no_requeue_gives_one_attempt_per_pod():
    state = _cluster()
    result = GreedyScheduler(state, default_config(), GreedyOptions(requeue=False)).run()
    assert result.placements()["default/web"] is None
    assert len(result.cycles) == 2
