"""Label selectors kube-scheduler v1.35 cannot build (``metav1.LabelSelectorAsSelector`` fails): what
each rule does with them, after upstream. InterPodAffinity rows from ``TestRequiredAffinitySingleNode``
(``interpodaffinity/filtering_test.go``); the rest follow ``framework/types.go`` (PodInfo parsing),
``podtopologyspread/filtering.go`` (calPreFilterState) and preemption's PDB check."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of, state_of
from test_optimal_exact import greedy_allowed, model_allowed, only

from optisched.framework import Code, CycleState
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.objects import LabelSelector
from optisched.model.selectors import label_selector_matches, selector_error
from optisched.profile import default_config
from optisched.registry import instantiate

PROFILE = default_config().profiles[0]
BAD = "{{.bad-value.}}"
BAD_VALUE_MSG = (f'values[0][service]: Invalid value: "{BAD}": a valid label must be an empty string or consist of '
                 "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                 "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def affinity_in(key: str, topology: str, *values: str) -> dict:
    """Upstream's ``PodAffinityIn(key, topologyKey, values, required)``."""
    return {"labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]},
            "topologyKey": topology}


def with_terms(p, kind: str, *terms: dict):  # type: ignore[no-untyped-def]
    return p.set("spec.affinity", {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}})


def prefilter(plugin: str, *objs: dict, name: str = "default/p") -> tuple[str, str]:
    snap = snapshot_of(*objs)
    filters, _ = instantiate(snap, PROFILE)
    st = filters[plugin].pre_filter(CycleState(snap.state.pod_index[name], snap, PROFILE))
    return Code(int(st.code)).label, "; ".join(st.reasons)


# ------------------------------------------------------------------ the error text
@pytest.mark.parametrize("sel,want", [
    ({"matchExpressions": [{"key": "service", "operator": "In", "values": [BAD]}]}, BAD_VALUE_MSG),
    ({"matchLabels": {"app": "web"}}, None),
    ({}, None),
    ({"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]},
     ("key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
     "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
     "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
     "(e.g. 'example.com/MyName')")),
    ({"matchLabels": {"app": "x" * 64}}, f'values[0][app]: Invalid value: "{"x" * 64}": must be no more than 63 characters'),
], ids=["a value that is no label value, in apimachinery's words", "matchLabels", "empty selector",
        "a key with two slashes", "a matchLabels value over 63 characters"])
def test_selector_error_reports_what_label_selector_as_selector_reports(sel, want):
    assert selector_error(LabelSelector.model_validate(sel)) == want


def test_a_selector_that_cannot_be_built_matches_nothing():
    """Preemption's PDB check skips a PDB whose selector fails (``filterPodsWithPDBViolation``)."""
    sel = LabelSelector.model_validate({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a b"]}]})
    assert not label_selector_matches(sel, {"app": "web"})


# ------------------------------------------------------------------ InterPodAffinity, upstream rows
POD_LABEL = {"service": "securityscan"}


@pytest.mark.parametrize("terms", [
    (affinity_in("service", "region", BAD), affinity_in("service", "node", "antivirusscan", "value2")),
    (affinity_in("service", "region", "foo"), affinity_in("service", "node", BAD)),
], ids=["PodAffinity fails PreFilter with an invalid affinity label syntax",
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax"])
def test_upstream_invalid_affinity_rows(terms):
    p = with_terms(pod("p").label(**POD_LABEL), "podAffinity", *terms)
    assert prefilter("InterPodAffinity", node("node1"), p) == (
        "UnschedulableAndUnresolvable", f"parsing pod: requiredAffinityTerms: {BAD_VALUE_MSG}")


def test_every_broken_list_is_named():
    p = pod("p").set("spec.affinity", {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [affinity_in("service", "zone", BAD)]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": affinity_in("service", "zone", BAD)}]}})
    assert prefilter("InterPodAffinity", node("node1"), p) == (
        "UnschedulableAndUnresolvable",
        f"parsing pod: [requiredAffinityTerms: {BAD_VALUE_MSG}, preferredAntiAffinityTerms: {BAD_VALUE_MSG}]")


def test_a_placed_pod_with_a_broken_term_loses_that_whole_list():
    """``PodInfo`` of a placed pod keeps no required anti-affinity terms when one cannot be parsed, so
    its valid term no longer keeps the incoming pod away."""
    blocker = affinity_in("app", "kubernetes.io/hostname", "web")
    broken = affinity_in("app", "kubernetes.io/hostname", BAD)
    objs = [node("a"), pod("p").label(app="web")]
    q_ok = with_terms(pod("q").on("a"), "podAntiAffinity", blocker)
    q_broken = with_terms(pod("q").on("a"), "podAntiAffinity", blocker, broken)
    assert prefilter("InterPodAffinity", *objs, q_ok)[0] == "SUCCESS"
    snap = snapshot_of(*objs, q_ok)
    filters, _ = instantiate(snap, PROFILE)
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE)
    filters["InterPodAffinity"].pre_filter(cycle)
    assert filters["InterPodAffinity"].filter(cycle, np.arange(1)).code[0] == Code.UNSCHEDULABLE
    assert prefilter("InterPodAffinity", *objs, q_broken)[0] == "SKIP"


def test_cp_sat_places_a_pod_with_broken_affinity_nowhere():
    state = state_of(node("a"), node("b"), with_terms(pod("p"), "podAffinity", affinity_in("app", "zone", BAD)))
    config = only("InterPodAffinity")
    assert model_allowed(state, config, state.pending[0]) == greedy_allowed(state, config, state.pending[0]) == set()


# ------------------------------------------------------------------ PodTopologySpread
def spread(when: str, values: list[str]) -> dict:
    return {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": when,
            "labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": values}]}}


def test_a_broken_hard_constraint_is_an_error_not_a_fit_error():
    """``calPreFilterState`` fails: the cycle ends with an error, no PostFilter, so no preemption even
    with a low-priority pod to evict."""
    p = pod("p").priority(100).req(cpu="3").set("spec.topologySpreadConstraints", [spread("DoNotSchedule", [BAD])])
    state = state_of(node("a"), pod("low").on("a").req(cpu="3"), p)
    result = GreedyScheduler(state, default_config(), GreedyOptions(requeue=False)).run()
    rec = result.cycles[0]
    assert rec.chosen is None and rec.preemption is None
    assert rec.message == ('running PreFilter plugin "PodTopologySpread": obtaining pod\'s hard topology spread '
                           f"constraints: {BAD_VALUE_MSG}")
    assert result.placements()["default/low"] == "a"


def test_cp_sat_places_a_pod_with_a_broken_hard_constraint_nowhere():
    p = pod("p").set("spec.topologySpreadConstraints", [spread("DoNotSchedule", [BAD])])
    state = state_of(node("a"), node("b"), p)
    config = only("PodTopologySpread")
    assert model_allowed(state, config, state.pending[0]) == greedy_allowed(state, config, state.pending[0]) == set()


@pytest.mark.parametrize("nodes,placed", [(["a", "b"], None), (["a"], "a")],
                         ids=["two feasible nodes: PreScore fails and the pod stays pending",
                              "one feasible node: scoring is skipped and the pod lands"])
def test_a_broken_soft_constraint_fails_prescore(nodes, placed):
    """``initPreScoreState`` fails: an Error, but only when there is something to score."""
    p = pod("p").set("spec.topologySpreadConstraints", [spread("ScheduleAnyway", [BAD])])
    result = GreedyScheduler(state_of(*[node(n) for n in nodes], p), default_config(), GreedyOptions(requeue=False)).run()
    assert result.placements()["default/p"] == placed
    if placed is None:
        assert result.cycles[0].message == (
            'running PreScore plugin "PodTopologySpread": calculating preScoreState: obtaining pod\'s soft topology '
            f"spread constraints: {BAD_VALUE_MSG}")
