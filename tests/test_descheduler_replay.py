"""A descheduling cycle replayed through kube-scheduler: where the replacements land, the loop the
descheduler's users report (evicted pods landing back on the node they left), and a second cycle."""
from __future__ import annotations

from builders import state_of
from helpers.descheduler import CFG, policy, tnode, tpod

from optisched.descheduler import run_descheduler

WITH_DB = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
LNU = {"thresholds": {"cpu": 20, "pods": 20}, "targetThresholds": {"cpu": 50, "pods": 50}}


def _looping() -> list:
    """n1 holds a db (DaemonSet) and four web pods that require to run beside it; n2 is nearly empty.
    LowNodeUtilization sees n1 at 72.5% cpu and evicts web pods until it is at 50%; kube-scheduler can
    only put them back beside the db, on n1."""
    webs = [tpod(f"web-{i}", 600, "n1").label(app="web").set("spec.affinity", WITH_DB) for i in range(1, 5)]
    return [tnode("n1", 4000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110),
            tpod("db", 500, "n1", "DaemonSet").label(app="db"), tpod("cache", 100, "n2"), *webs]


def test_low_node_utilization_loop_lands_the_evicted_pods_back_on_their_node() -> None:
    out = run_descheduler(state_of(*_looping()), CFG, policy("LowNodeUtilization", LNU))
    assert [(e.pod, e.node, e.landed) for e in out.evictions] == [
        ("default/web-1", "n1", "n1"), ("default/web-2", "n1", "n1")]
    assert out.loops == ("default/web-1", "default/web-2")
    assert out.pending == () and out.emptied == ()
    # the next cycle finds n1 as it was and evicts two web pods from it again; which two is the order of
    # the node's pod list among equal priority and QoS, which upstream leaves unspecified
    assert len(out.second_cycle) == 2 and {e.node for e in out.second_cycle} == {"n1"}
    assert all(e.pod.startswith("default/web-") for e in out.second_cycle)


def test_replacements_land_on_the_underutilized_node_without_the_affinity() -> None:
    objs = _looping()
    for o in objs:
        o.get("spec", {}).pop("affinity", None)
    out = run_descheduler(state_of(*objs), CFG, policy("LowNodeUtilization", LNU))
    assert [e.landed for e in out.evictions] == ["n2", "n2"]
    assert out.loops == () and out.second_cycle == ()


def test_an_unplaceable_replacement_stays_pending_and_bare_pods_are_never_evicted() -> None:
    objs = [tnode("n1", 2000, 3000, 10).taint("k", "v"), tnode("n2", 2000, 3000, 10).taint("k", "v"),
            tpod("owned", 100, "n1"), tpod("bare", 100, "n1", None)]
    out = run_descheduler(state_of(*objs), CFG, policy("RemovePodsViolatingNodeTaints", point="deschedule",
                                                      evictor={"evictFailedBarePods": False}))
    assert [e.pod for e in out.evictions] == ["default/owned"]  # bare pods are never evicted
    assert out.pending == ("default/owned",) and out.emptied == ()
    assert out.to_dict()["evictions"][0] == {"pod": "default/owned", "from": "n1",
                                             "strategy": "RemovePodsViolatingNodeTaints", "landed": None}


def test_high_node_utilization_under_least_allocated_scoring_loops_instead_of_emptying_the_node() -> None:
    """HighNodeUtilization evicts the only pod of the underutilized n1 so that the node can be removed;
    kube-scheduler's default LeastAllocated scoring puts it back on the emptier n1 (upstream's docs ask
    for MostAllocated with this strategy)."""
    objs = [tnode("n1", 4000, 3000, 10), tnode("n2", 4000, 3000, 10), tpod("small", 100, "n1"),
            tpod("big", 2000, "n2")]
    out = run_descheduler(state_of(*objs), CFG, policy("HighNodeUtilization", {"thresholds": {"cpu": 20}}))
    assert [(e.pod, e.landed) for e in out.evictions] == [("default/small", "n1")]
    assert out.loops == ("default/small",) and out.emptied == ()
    assert len(out.second_cycle) == 1
