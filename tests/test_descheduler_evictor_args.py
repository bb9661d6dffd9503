"""DefaultEvictor's constraint arguments and the strategies' namespaces / labelSelector, each in a table
of hand-built cases whose outcomes follow kubernetes-sigs/descheduler v0.34.0
``pkg/framework/plugins/defaultevictor/defaultevictor.go`` and ``constraints.go``; and nodeFit asking only
what upstream's ``pkg/descheduler/node/node.go`` ``NodeFit`` asks."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from builders import state_of
from helpers.descheduler import CFG, owned, policy, tnode, tpod

from optisched.descheduler import evictions_of
from optisched.errors import InputError

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
TAINTS = "RemovePodsViolatingNodeTaints"


def _n1():  # type: ignore[no-untyped-def]
    return tnode("n1", 4000, 4000, 10).taint("dedicated", "x", "NoSchedule")


def _n2():  # type: ignore[no-untyped-def]
    return tnode("n2", 4000, 4000, 10)


def _p(name: str, **kw):  # type: ignore[no-untyped-def]
    return tpod(name, 100, "n1", **kw)


def _evicted(objs: list, evictor: dict | None = None, args: dict | None = None) -> list[str]:
    pol = policy(TAINTS, args or {}, "deschedule", evictor)
    return sorted(e.pod.split("/")[1] for e in evictions_of(state_of(_n1(), _n2(), *objs), CFG, pol, NOW))


def _pc(name: str, value: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def _pdb(name: str, selector: dict | None, ns: str = "default") -> dict:
    spec: dict = {"maxUnavailable": 1}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def _started(p, ago: timedelta):  # type: ignore[no-untyped-def]
    return p.set("status.startTime", (NOW - ago).isoformat())


def _evict_annotated(p):  # type: ignore[no-untyped-def]
    p["metadata"]["annotations"] = {"descheduler.alpha.kubernetes.io/evict": "true"}
    return p


LOW, HIGH = _p("low").priority(10), _p("high").priority(100)

PRIORITY_ROWS = [
    pytest.param([LOW, HIGH], {"priorityThreshold": {"value": 50}}, ["low"],
                 id="a pod at or above the threshold value stays"),
    pytest.param([LOW, HIGH, _p("edge").priority(50)], {"priorityThreshold": {"value": 50}}, ["low"],
                 id="a pod exactly at the threshold stays"),
    pytest.param([LOW, HIGH, _pc("mid", 50)], {"priorityThreshold": {"name": "mid"}}, ["low"],
                 id="a threshold named by PriorityClass takes that class's value"),
    pytest.param([LOW, HIGH], {"priorityThreshold": {"value": 50}, "evictSystemCriticalPods": True}, ["high", "low"],
                 id="with evictSystemCriticalPods the threshold is not applied"),
    pytest.param([LOW, _evict_annotated(_p("high").priority(100))], {"priorityThreshold": {"value": 50}},
                 ["high", "low"], id="the evict annotation lifts the threshold"),
]

SELECTOR_ROWS = [
    pytest.param([_p("web").label(app="web"), _p("db").label(app="db")],
                 {"labelSelector": {"matchLabels": {"app": "web"}}}, ["web"], id="only pods matching labelSelector go"),
    pytest.param([_p("web").label(app="web"), _evict_annotated(_p("db").label(app="db"))],
                 {"labelSelector": {"matchLabels": {"app": "web"}}}, ["db", "web"],
                 id="the evict annotation lifts labelSelector"),
]

REPLICA_ROWS = [
    pytest.param([_p("a"), _p("b")], {"minReplicas": 3}, [], id="an owner with fewer pods than minReplicas keeps them"),
    pytest.param([_p("a"), _p("b"), tpod("c", 100, None)], {"minReplicas": 3}, ["a", "b"],
                 id="a pending pod of the owner counts toward minReplicas"),
    pytest.param([_p("a"), _p("b")], {"minReplicas": 1}, ["a", "b"], id="minReplicas 1 checks nothing"),
    pytest.param([_p("a").set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "ux"},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "y", "uid": "uy"}])], {"minReplicas": 3}, ["a"],
                 id="a pod with several owners is not checked"),
    pytest.param([_p("a"), owned(_p("b"), name="other"), owned(_p("c"), name="other")], {"minReplicas": 2},
                 ["b", "c"], id="owners are counted separately"),
]

AGE_ROWS = [
    pytest.param([_started(_p("old"), timedelta(hours=1)), _started(_p("young"), timedelta(minutes=1))],
                 {"minPodAge": "10m"}, ["old"], id="a pod started less than minPodAge ago stays"),
    pytest.param([_p("unknown")], {"minPodAge": "10m"}, [], id="a pod without a start time stays"),
    pytest.param([_started(_p("old"), timedelta(minutes=90))], {"minPodAge": "1h30m"}, ["old"],
                 id="a pod exactly minPodAge old goes"),
]

PDB_ROWS = [
    pytest.param([_p("web").label(app="web"), _p("db").label(app="db"), _pdb("web", {"matchLabels": {"app": "web"}})],
                 {"ignorePodsWithoutPDB": True}, ["web"], id="a pod no budget selects stays"),
    pytest.param([_p("web").label(app="web"), _pdb("all", {})], {"ignorePodsWithoutPDB": True}, ["web"],
                 id="a budget with an empty selector covers every pod of its namespace"),
    pytest.param([_p("web").label(app="web"), _pdb("web", {"matchLabels": {"app": "web"}}, ns="other")],
                 {"ignorePodsWithoutPDB": True}, [], id="a budget of another namespace does not cover"),
    pytest.param([_p("web").label(app="web")], {}, ["web"], id="without the argument budgets are not asked"),
]

BARE_ROWS = [
    pytest.param([_p("bare", owner=None)], {"evictFailedBarePods": True}, [],
                 id="evictFailedBarePods does not let a running bare pod go"),
    pytest.param([_p("bare", owner=None), _p("owned")], {}, ["owned"], id="a bare pod stays by default"),
]


@pytest.mark.parametrize(("objs", "evictor", "expected"),
                         PRIORITY_ROWS + SELECTOR_ROWS + REPLICA_ROWS + AGE_ROWS + PDB_ROWS + BARE_ROWS)
def test_default_evictor_constraints(objs: list, evictor: dict, expected: list[str]) -> None:
    assert _evicted(objs, evictor) == expected


@pytest.mark.parametrize(("evictor", "field"), [
    pytest.param({"priorityThreshold": {"value": 5, "name": "x"}}, "priorityThreshold.name",
                 id="a threshold with both value and name is refused"),
    pytest.param({"minPodAge": "ten minutes"}, "minPodAge", id="a minPodAge that is not a duration is refused"),
    pytest.param({"minReplicas": -1}, "minReplicas", id="a negative minReplicas is refused"),
])
def test_bad_evictor_arguments_name_the_field(evictor: dict, field: str) -> None:
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        policy(TAINTS, {}, "deschedule", evictor)


def test_a_threshold_naming_a_missing_priority_class_is_an_error() -> None:
    with pytest.raises(InputError, match=r"priorityThreshold\.name.*no PriorityClass 'gold'"):
        _evicted([LOW], {"priorityThreshold": {"name": "gold"}})


SCOPE_ROWS = [
    pytest.param([_p("a"), _p("b", ns="team")], {"namespaces": {"include": ["team"]}}, ["b"],
                 id="namespaces.include keeps the strategy to those namespaces"),
    pytest.param([_p("a"), _p("b", ns="team")], {"namespaces": {"exclude": ["team"]}}, ["a"],
                 id="namespaces.exclude keeps the strategy out of those namespaces"),
    pytest.param([_p("a").label(tier="web"), _p("b")], {"labelSelector": {"matchLabels": {"tier": "web"}}}, ["a"],
                 id="the strategy's labelSelector limits it to matching pods"),
]


@pytest.mark.parametrize(("objs", "args", "expected"), SCOPE_ROWS)
def test_strategy_scope(objs: list, args: dict, expected: list[str]) -> None:
    assert _evicted(objs, args=args) == expected


def test_both_include_and_exclude_is_refused() -> None:
    with pytest.raises(InputError, match="namespaces.*only one of include and exclude"):
        policy(TAINTS, {"namespaces": {"include": ["a"], "exclude": ["b"]}}, "deschedule")


def _affine(name: str, to: str):  # type: ignore[no-untyped-def]
    return _p(name).set("spec.affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": to}}, "topologyKey": "kubernetes.io/hostname"}]}})


def _repels(p, app: str):  # type: ignore[no-untyped-def]
    return p.set("spec.affinity", {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}})


NODE_FIT_ROWS = [
    pytest.param([_affine("web", "db"), _p("db").label(app="db").tolerate("dedicated", "x")], ["web"],
                 id="the pod's own required pod affinity is not asked"),
    pytest.param([_repels(_p("web"), "cache"), tpod("cache", 100, "n2").label(app="cache")], [],
                 id="the pod's own anti-affinity against a pod on the other node is asked"),
    pytest.param([_p("web").label(app="web"), _repels(tpod("guard", 100, "n2"), "web")], ["web"],
                 id="another pod's anti-affinity against the pod is not asked"),
    pytest.param([_p("web"), tpod("hog", 3950, "n2")], [], id="the other node's free resources are asked"),
]


@pytest.mark.parametrize(("objs", "expected"), NODE_FIT_ROWS)
def test_node_fit_asks_only_upstreams_predicates(objs: list, expected: list[str]) -> None:
    assert _evicted(objs, {"nodeFit": True}) == expected


def test_node_fit_ignores_a_toleration_of_the_unschedulable_taint() -> None:
    pod = _p("web").tolerate("node.kubernetes.io/unschedulable", "", "NoSchedule", op="Exists")
    pol = policy(TAINTS, {}, "deschedule", {"nodeFit": True})
    state = state_of(_n1(), _n2().unschedulable(), pod)
    assert evictions_of(state, CFG, pol, NOW) == []
