"""Property: the violation counts of a reschedule summary, taken once per class of identical pods and
vectorized over the class, equal the plain path that takes each pod out of the snapshot and runs the
filters on its own node; and an anti-affinity term matched once per distinct (namespace, labels) equals
the term matched against every pod."""
from __future__ import annotations

import numpy as np
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.descheduler.duplicates import over_average
from optisched.descheduler.node_fit import anti_terms, term_matches
from optisched.descheduler.violations import (
    anti_affinity_violated,
    anti_affinity_violated_each,
    matched_by,
    preferred_affinity_violated,
)
from optisched.profile import default_config
from optisched.reschedule.violations import (
    _filter_violations,
    daemon_only,
    filter_violations_per_pod,
    violating,
)

APPS = ("web", "api", "db")


def _spread(draw, app: str, when: str) -> dict:  # type: ignore[no-untyped-def]
    selector = draw(st.sampled_from([{"matchLabels": {"app": app}}, {"matchLabels": {"app": "web"}}, {},
                                     {"matchExpressions": [{"key": "app", "operator": "Exists"}]}]))
    c = {"maxSkew": draw(st.integers(1, 2)), "topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/hostname"])),
         "whenUnsatisfiable": when, "labelSelector": selector}
    if when == "DoNotSchedule" and draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    return c


def _template(draw, app: str):  # type: ignore[no-untyped-def]
    """What every replica of ``app`` shares: labels, owner, constraints, tolerations, affinity."""
    spec: dict = {}
    cons = [_spread(draw, app, w) for w in ("DoNotSchedule", "ScheduleAnyway") if draw(st.booleans())]
    if cons:
        spec["topologySpreadConstraints"] = cons
    affinity: dict = {}
    if draw(st.booleans()):
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": draw(st.sampled_from([["a"], ["a", "b"]]))}]}]}}
    if draw(st.booleans()):
        term = {"labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
                "topologyKey": draw(st.sampled_from(["zone", "kubernetes.io/hostname"]))}
        if namespaces := draw(st.sampled_from([[], ["other"], ["default", "other"]])):
            term["namespaces"] = namespaces
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]} if draw(st.booleans()) \
            else {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}]}
    if affinity:
        spec["affinity"] = affinity
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}]
    return spec, draw(st.sampled_from(["default", "other"])), draw(st.booleans())


@st.composite
def clusters(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 6))
    objs: list = []
    for i in range(n):
        b = node(f"n{i}", cpu="64", pods="200")
        zone = draw(st.sampled_from(["a", "b", "c", None]))
        if zone is not None:
            b = b.label(zone=zone)
        if draw(st.integers(0, 3)) == 0:
            b = b.taint("maintenance", effect="NoSchedule")
        objs.append(b)
    templates = {app: _template(draw, app) for app in APPS}
    for j in range(draw(st.integers(1, 14))):
        app = draw(st.sampled_from(APPS))
        spec, namespace, terminating = templates[app]
        b = pod(f"p{j}", namespace).req(cpu="100m").label(app=app).set(
            "metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": app,
                                          "controller": True}])
        for key, value in spec.items():
            b = b.set(f"spec.{key}", value)
        if terminating and draw(st.booleans()):
            b = b.set("metadata.deletionTimestamp", "2026-01-01T00:00:00Z")
        where = draw(st.integers(-1, n - 1))
        objs.append(b.on(f"n{where}") if where >= 0 else b)
    state = state_of(*objs)
    other = np.array([draw(st.integers(-1, n - 1)) for _ in state.pods], dtype=np.int64)
    return state, other


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_class_path_finds_the_violations_the_per_pod_path_finds(case, soft):
    state, other = case
    config = default_config()
    for node_of in (state.pod_node, other):
        assert _filter_violations(state, config, node_of, soft) == filter_violations_per_pod(state, config, node_of, soft)


def _per_pod(state, config, node_of, soft):  # type: ignore[no-untyped-def]
    """Every predicate asked pod by pod, in the order the summary takes them."""
    out = filter_violations_per_pod(state, config, node_of, soft)
    placed = node_of >= 0
    rows = np.flatnonzero(placed & ~daemon_only(state)).tolist()
    for p in rows:
        if p not in out and anti_terms(state.pods[p]) and anti_affinity_violated(state, p, node_of, placed):
            out[p] = "InterPodAntiAffinity"
    for p in over_average(state, node_of, ~daemon_only(state) & placed):
        out.setdefault(p, "Duplicates")
    for p in rows if soft else ():
        if p in out:
            continue
        if preferred_affinity_violated(state, p, int(node_of[p])):
            out[p] = "PreferredNodeAffinity"
        elif anti_terms(state.pods[p], True) and anti_affinity_violated(state, p, node_of, placed, preferred=True):
            out[p] = "PreferredAntiAffinity"
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_every_violation_counted_per_class_is_the_one_counted_per_pod_in_the_same_order(case, soft):
    state, other = case
    config = default_config()
    for node_of in (state.pod_node, other):
        found = violating(state, config, node_of, soft=soft)
        assert list(found.items()) == list(_per_pod(state, config, node_of, soft).items())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_anti_affinity_per_class_is_anti_affinity_per_pod(case, preferred):
    state, other = case
    for node_of in (state.pod_node, other):
        placed = node_of >= 0
        for p in np.flatnonzero(placed).tolist():
            if anti_terms(state.pods[p], preferred):
                one = anti_affinity_violated_each(state, np.array([p]), node_of, placed, preferred)
                assert bool(one[0]) == anti_affinity_violated(state, p, node_of, placed, preferred)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_term_matched_per_label_group_matches_the_pods_it_matches_one_by_one(case):
    state, _ = case
    for owner in state.pods:
        for term in anti_terms(owner) + anti_terms(owner, True):
            expected = [term_matches(term, owner, q) for q in state.pods]
            assert matched_by(state, term, owner).tolist() == expected


def test_a_replica_breaking_spread_is_found_once_its_own_count_is_taken_out():
    """Three replicas on n0 (zone a), none in zone b, maxSkew 1: taken out, each sees 2 - 0 + 1 > 1;
    a fourth replica alone in zone b sees 0 + 1 - 2 within the skew."""
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    objs = [node("n0").label(zone="a"), node("n1").label(zone="b")]
    objs += [pod(f"w{i}").req(cpu="100m").label(app="web").set("spec.topologySpreadConstraints", spread).on(
        "n0" if i < 3 else "n1") for i in range(4)]
    state = state_of(*objs)
    found = violating(state, default_config(), state.pod_node)
    assert found == {0: "PodTopologySpread", 1: "PodTopologySpread", 2: "PodTopologySpread"}
