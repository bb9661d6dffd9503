"""NodeAffinity against kube-scheduler v1.35's own tables: ``TestNodeAffinity`` and
``TestNodeAffinityPriority`` in ``pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go``,
row by row (one node per Filter row, named and labelled as upstream's), plus greedy/CP-SAT agreement
on the score when only the profile's ``addedAffinity`` prefers nodes."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of

from optisched.framework import Code, CycleState
from optisched.model.selectors import requirement_error
from optisched.profile import default_config, parse_config
from optisched.registry import instantiate

UNRES = "UnschedulableAndUnresolvable"
POD = "node(s) didn't match Pod's node affinity/selector"
ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
CONFLICT = "pod affinity terms conflict"


def profile_with(added: dict | None):
    if added is None:
        return default_config().profiles[0]
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"pluginConfig": [{"name": "NodeAffinity",
                                                         "args": {"addedAffinity": added}}]}]}).profiles[0]


def required(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def expr(key: str, op: str, *values: str) -> dict:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def names_in(*names: str) -> dict:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def filter_row(p, labels: dict, node_name: str = "node1", added: dict | None = None):
    """(PreFilter outcome, Filter outcome) on one node, as the upstream test runs the plugin.
    PreFilter: ``skip``, ``ok``, ``nodes:[...]`` or the rejection reason."""
    profile = profile_with(added)
    snap = snapshot_of(node(node_name).labels(labels), p)
    filters, _ = instantiate(snap, profile)
    rule = filters["NodeAffinity"]
    cycle = CycleState(snap.state.pod_index["default/p"], snap, profile)
    st = rule.pre_filter(cycle)
    if st.code == Code.SKIP:
        pre = "skip"
    elif st.code != Code.SUCCESS:
        pre = f"{Code(int(st.code)).label}:{st.reasons[0]}"
    elif st.nodes is not None:
        pre = "nodes:" + ",".join(n for n, keep in zip(snap.state.node_names, st.nodes) if keep)
    else:
        pre = "ok"
    if pre == "skip":
        return pre, "pass"  # the framework does not call Filter of a plugin that skipped
    res = rule.filter(cycle, np.arange(1))
    got = "pass" if res.code[0] == 0 else f"{Code(int(res.code[0])).label}:{'|'.join(res.reasons_of(0))}"
    return pre, got


def bare() -> dict:
    return pod("p")


def sel(labels: dict) -> dict:
    return pod("p").set("spec.nodeSelector", labels)


def aff(affinity: dict, node_selector: dict | None = None) -> dict:
    p = pod("p").set("spec.affinity", affinity)
    return p.set("spec.nodeSelector", node_selector) if node_selector else p


GPU_NOT_AMD = required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]})
ZONE_FOO_ADDED = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchFields": [names_in("node2")]}]}}

# (upstream row name, pod, node labels, node name, addedAffinity, want PreFilter, want Filter)
FILTER_ROWS = [
    ("missing labels", sel({"foo": "bar"}), {}, "node1", None, "ok", f"{UNRES}:{POD}"),
    ("same labels", sel({"foo": "bar"}), {"foo": "bar"}, "node1", None, "ok", "pass"),
    ("node labels are superset", sel({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "node1", None, "ok", "pass"),
    ("node labels are subset", sel({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "node1", None, "ok",
     f"{UNRES}:{POD}"),
    ("Pod with matchExpressions using In operator that matches the existing node",
     aff(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})), {"foo": "bar"}, "node1", None,
     "ok", "pass"),
    ("Pod with matchExpressions using Gt operator that matches the existing node",
     aff(required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})), {"kernel-version": "0206"},
     "node1", None, "ok", "pass"),
    ("Pod with matchExpressions using NotIn operator that matches the existing node",
     aff(required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})), {"mem-type": "DDR3"},
     "node1", None, "ok", "pass"),
    ("Pod with matchExpressions using Exists operator that matches the existing node",
     aff(required({"matchExpressions": [expr("GPU", "Exists")]})), {"GPU": "NVIDIA-GRID-K1"}, "node1", None,
     "ok", "pass"),
    ("Pod with affinity that don't match node's labels won't schedule onto the node",
     aff(required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})), {"foo": "bar"}, "node1", None,
     "ok", f"{UNRES}:{POD}"),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
     aff(required({"matchExpressions": []})), {"foo": "bar"}, "node1", None, "ok", f"{UNRES}:{POD}"),
    ("Pod with no Affinity will schedule onto a node", bare(), {"foo": "bar"}, "node1", None, "skip", "pass"),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node",
     aff({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}), {"foo": "bar"}, "node1", None,
     "skip", "pass"),
    ("Pod with multiple matchExpressions ANDed that matches the existing node",
     aff(GPU_NOT_AMD), {"GPU": "NVIDIA-GRID-K1"}, "node1", None, "ok", "pass"),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node",
     aff(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]})),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", None, "ok", f"{UNRES}:{POD}"),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
     aff(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                  {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]})), {"foo": "bar"}, "node1", None,
     "ok", "pass"),
    ("Pod with an Affinity and a PodSpec.NodeSelector both are satisfied, will schedule onto the node",
     aff(required({"matchExpressions": [expr("foo", "Exists")]}), {"foo": "bar"}), {"foo": "bar"}, "node1", None,
     "ok", "pass"),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied, won't schedule onto "
     + "the node",
     aff(required({"matchExpressions": [expr("foo", "Exists")]}), {"foo": "bar"}), {"foo": "barrrrrr"}, "node1",
     None, "ok", f"{UNRES}:{POD}"),
    ("Pod with an invalid value in Affinity term won't be scheduled onto the node",
     aff(required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})), {"foo": "bar"},
     "node1", None, "ok", f"{UNRES}:{POD}"),
    ("Pod with matchFields using In operator that matches the existing node",
     aff(required({"matchFields": [names_in("node1")]})), {}, "node1", None, "nodes:node1", "pass"),
    ("Pod with matchFields using In operator that does not match the existing node",
     aff(required({"matchFields": [names_in("node1")]})), {}, "node2", None, "nodes:", f"{UNRES}:{POD}"),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches",
     aff(required({"matchFields": [names_in("node1"), names_in("node2")]},
                  {"matchExpressions": [expr("foo", "In", "bar")]})), {"foo": "bar"}, "node2", None, "ok", "pass"),
    ("Pod with one term: matchFields does not match, but matchExpressions matches",
     aff(required({"matchFields": [names_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]})),
     {"foo": "bar"}, "node2", None, "nodes:", f"{UNRES}:{POD}"),
    ("Pod with one term: both matchFields and matchExpressions match",
     aff(required({"matchFields": [names_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]})),
     {"foo": "bar"}, "node1", None, "nodes:node1", "pass"),
    ("Pod with two terms: both matchFields and matchExpressions do not match",
     aff(required({"matchFields": [names_in("node1")]}, {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]})),
     {"foo": "bar"}, "node2", None, "ok", f"{UNRES}:{POD}"),
    ("Pod with two terms of node.Name affinity",
     aff(required({"matchFields": [names_in("node1")]}, {"matchFields": [names_in("node2")]})), {}, "node2", None,
     "nodes:node2", "pass"),
    ("Pod with two conflicting mach field requirements",
     aff(required({"matchFields": [names_in("node1"), names_in("node2")]})), {"foo": "bar"}, "node2", None,
     f"{UNRES}:{CONFLICT}", f"{UNRES}:{POD}"),
    ("Matches added affinity and Pod's node affinity",
     aff(required({"matchExpressions": [expr("zone", "In", "foo")]})), {"zone": "foo"}, "node2", ZONE_FOO_ADDED,
     "ok", "pass"),
    ("Matches added affinity but not Pod's node affinity",
     aff(required({"matchExpressions": [expr("zone", "In", "bar")]})), {"zone": "foo"}, "node2", ZONE_FOO_ADDED,
     "ok", f"{UNRES}:{POD}"),
    ("Doesn't match added affinity", bare(), {"zone": "foo"}, "node2",
     {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
         {"matchExpressions": [expr("zone", "In", "bar")]}]}}, "ok", f"{UNRES}:{ENFORCED}"),
]


@pytest.mark.parametrize("p,labels,node_name,added,want_pre,want", [r[1:] for r in FILTER_ROWS],
                         ids=[r[0] for r in FILTER_ROWS])
def test_upstream_filter_rows(p, labels, node_name, added, want_pre, want):
    pre, got = filter_row(p, labels, node_name, added)
    # upstream's "nodes:node1" result on a snapshot without node1 reads "nodes:" here (names of absent nodes drop)
    assert (pre, got) == (want_pre, want)


def test_filter_rejects_where_prefilter_would_not_run():
    """Upstream's "...even if PreFilter is not called" rows: Filter alone gives the same verdicts."""
    for p, labels in ((sel({"foo": "bar"}), {"foo": "bar", "baz": "blah"}), (aff(GPU_NOT_AMD), {"GPU": "NVIDIA-GRID-K1"})):
        assert filter_row(p, labels)[1] == "pass"
    assert filter_row(aff(GPU_NOT_AMD), {"GPU": "AMD"})[1] == f"{UNRES}:{POD}"


# ------------------------------------------------------------------ invalid requirements, per operator
INVALID = [
    ("In with a value that is not a label value", expr("foo", "In", "bar", "a b"), {"foo": "bar"}),
    ("NotIn with a value that is not a label value", expr("foo", "NotIn", "-x"), {"foo": "bar"}),
    ("In with a value longer than 63 characters", expr("foo", "In", "a" * 64), {"foo": "a" * 64}),
    ("Exists with a key that is not a qualified name", expr("bad key", "Exists"), {"bad key": "1"}),
    ("DoesNotExist with a key whose prefix is not a DNS subdomain", expr("Bad_Prefix/x", "DoesNotExist"), {}),
    ("Gt with a value beyond int64", expr("n", "Gt", "9223372036854775808"), {"n": "9"}),
    ("Lt with a value with underscores", expr("n", "Lt", "1_000"), {"n": "9"}),
    ("Gt with a negative number, which is no label value", expr("n", "Gt", "-5"), {"n": "9"}),
    ("Gt with a word, which the API server lets through", expr("n", "Gt", "many"), {"n": "9"}),
]


@pytest.mark.parametrize("req,labels", [r[1:] for r in INVALID], ids=[r[0] for r in INVALID])
def test_a_term_with_an_invalid_requirement_matches_no_node(req, labels):
    """``labels.NewRequirement`` fails, the term cannot be built, the node is rejected."""
    assert requirement_error(req["key"], req["operator"], req.get("values", [])) is not None
    assert filter_row(aff(required({"matchExpressions": [req]})), labels)[1] == f"{UNRES}:{POD}"


def test_an_invalid_term_does_not_spoil_the_other_terms():
    """``LazyErrorNodeSelector``: terms are ORed and only the broken one is lost."""
    p = aff(required({"matchExpressions": [expr("foo", "In", "a b")]}, {"matchExpressions": [expr("foo", "Exists")]}))
    assert filter_row(p, {"foo": "bar"})[1] == "pass"


@pytest.mark.parametrize("key,op,values", [
    ("example.com/gpu", "In", ["a-b_c.d", ""]), ("kernel-version", "Gt", ["0204"]), ("x", "Exists", []),
], ids=["prefixed key with empty and dotted values", "integer with a leading zero", "Exists"])
def test_valid_requirements_pass_validation(key, op, values):
    assert requirement_error(key, op, values) is None


# ------------------------------------------------------------------ TestNodeAffinityPriority
def preferred(*terms: tuple[int, list[dict]]) -> dict:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": {"matchExpressions": exprs}} for w, exprs in terms]}


LABEL1, LABEL2, LABEL3 = {"foo": "bar"}, {"key": "value"}, {"az": "az1"}
LABEL4, LABEL5 = {"abc": "az11", "def": "az22"}, {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred((2, [expr("foo", "In", "bar")]), (4, [expr("key", "In", "value")]),
                      (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]))


def score_row(pod_affinity: dict | None, nodes: list[tuple[str, dict]], added: dict | None):
    """Normalized NodeAffinity score per node, or "skip" when PreScore skips (every node then gets 0)."""
    profile = profile_with(added)
    p = pod("p") if pod_affinity is None else pod("p").set("spec.affinity", {"nodeAffinity": pod_affinity})
    snap = snapshot_of(*[node(n).labels(lb) for n, lb in nodes], p)
    _, scores = instantiate(snap, profile)
    rule = scores["NodeAffinity"]
    cycle = CycleState(snap.state.pod_index["default/p"], snap, profile)
    every = np.arange(snap.state.num_nodes)
    if rule.pre_score(cycle, every).code == Code.SKIP:
        return "skip"
    norm = rule.normalize(cycle, rule.score(cycle, every))
    return dict(zip(snap.state.node_names, norm.tolist()))


PRIORITY_ROWS = [
    ("all nodes are same priority as NodeAffinity is nil", None,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, "skip"),
    ("no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
     AFFINITY1, [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], None, {"node1": 0, "node2": 0, "node3": 0}),
    ("only node1 matches the preferred scheduling requirements of pod", AFFINITY1,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, {"node1": 100, "node2": 0, "node3": 0}),
    ("all nodes matches the preferred scheduling requirements of pod but with different priorities", AFFINITY2,
     [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], None, {"node1": 18, "node5": 100, "node2": 36}),
    ("added affinity", None, [("node1", LABEL1), ("node2", LABEL2)], AFFINITY1, {"node1": 100, "node2": 0}),
    ("added affinity and pod has default affinity", AFFINITY1,
     [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)], preferred((3, [expr("key", "In", "value")])),
     {"node1": 40, "node2": 60, "node3": 100}),
]


@pytest.mark.parametrize("pod_affinity,nodes,added,want", [r[1:] for r in PRIORITY_ROWS],
                         ids=[r[0] for r in PRIORITY_ROWS])
def test_upstream_priority_rows(pod_affinity, nodes, added, want):
    assert score_row(pod_affinity, nodes, added) == want


def test_added_required_affinity_alone_does_not_score():
    """Only preferred terms score: an addedAffinity with required terms only leaves PreScore skipping."""
    added = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [expr("foo", "Exists")]}]}}
    assert score_row(None, [("node1", LABEL1)], added) == "skip"


def test_cp_sat_coefficients_follow_greedy_when_only_the_profile_prefers():
    """CP-SAT's NodeAffinity objective (encode_static) gives each node the greedy weighted score; with
    only ``addedAffinity`` preferring ``foo=bar`` that is no longer all zeros."""
    from optisched.greedy.framework_runner import Framework
    from optisched.model.snapshot import Snapshot
    from optisched.optimal.classes import build_batch
    from optisched.optimal.model import BatchModel
    from optisched.optimal.score import score_objective
    from optisched.optimal.score_terms import SCORE_SCALE

    profile = {"plugins": {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [
        {"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeAffinity"}]}},
        "pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": AFFINITY1}}]}
    cfg = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                        "profiles": [profile]})
    state = snapshot_of(node("node1").labels(LABEL1), node("node2").labels(LABEL2), pod("p")).state
    model = BatchModel(build_batch(state, cfg), cfg)
    objective, _ = score_objective(model)
    fw = Framework(Snapshot(state), cfg.profiles[0])
    greedy = fw.score(CycleState(state.pending[0], fw.snapshot, fw.profile), np.arange(state.num_nodes)).total
    cv = model.vars[0]
    coef = {v.Index(): k for v, k in zip(objective.vars, objective.coefs)}
    got = [coef.get(v.Index(), 0) for v in cv.arr_vars]
    assert got == [SCORE_SCALE * int(greedy[n]) for n in cv.arr_nodes.tolist()]
    assert sorted(got) == [0, SCORE_SCALE * 100]  # normalized 100 on node1 only (weight 1 in this profile)


def test_a_broken_preferred_term_fails_prescore_with_the_field_path():
    """``NewPreferredSchedulingTerms`` fails, so PreScore returns an Error and the cycle ends (two
    nodes pass the filters); the error names the term by its index."""
    from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler

    bad = preferred((1, [expr("foo", "In", "ok")]), (3, [expr("foo", "In", "a b")]))
    p = pod("p").set("spec.affinity", {"nodeAffinity": bad})
    result = GreedyScheduler(snapshot_of(node("node1"), node("node2"), p).state, default_config(),
                             GreedyOptions(requeue=False)).run()
    assert result.placements()["default/p"] is None
    assert result.cycles[0].message.startswith(
        'running PreScore plugin "NodeAffinity": [1].matchExpressions[0].values[0][foo]: Invalid value: "a b": '
        "a valid label must be an empty string")
