"""PodTopologySpread: filter and score, on hand-built clusters and against every recorded trace cycle.

The hand-built cases follow the Kubernetes docs ("Pod Topology Spread Constraints": the 4-node two-zone
cluster, two constraints, conflicting constraints, node affinity, implicit conventions, cluster-level
defaults) and upstream's ``filtering_test.go`` / ``scoring_test.go`` edge cases (minDomains, inclusion
policies, matchLabelKeys, missing keys, ignored nodes, system defaulting and its selector).
"""
from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
from helpers.replay import case_names, replay

from optisched.framework import Code, CycleState
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.plugins.podtopologyspread.common import (
    REASON,
    REASON_MISSING_LABEL,
    default_selector,
    resolve_constraints,
)
from optisched.plugins.podtopologyspread.filtering import PodTopologySpread
from optisched.plugins.podtopologyspread.scoring import PodTopologySpreadScore, go_round
from optisched.profile import PodTopologySpreadArgs, default_config

PROFILE = default_config().profiles[0]
ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"
SKEW = f"Unschedulable:{REASON}"
MISSING = f"UnschedulableAndUnresolvable:{REASON_MISSING_LABEL}"


# ----------------------------------------------------------------------------- object builders
def node(name: str, taints: list | None = None, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"taints": taints or []}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def pod(name: str, on: str | None = None, labels: dict | None = None, spread: list | None = None,
        ns: str = "default", **spec) -> dict:
    meta = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    if "owner" in spec:
        meta["ownerReferences"] = [spec.pop("owner")]
    if spec.pop("terminating", False):
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    body = {"containers": [{"name": "c", "image": "app:1"}], **spec}
    if spread is not None:
        body["topologySpreadConstraints"] = spread
    out = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    if on is not None:
        body["nodeName"] = on
        out["status"] = {"phase": "Running"}
    return out


def tsc(key: str = "zone", skew: int = 1, hard: bool = True, selector: dict | None = None, **extra) -> dict:
    """A constraint; ``selector`` defaults to ``matchLabels: {foo: bar}`` (pass ``{}`` for the empty one)."""
    c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"foo": "bar"}} if selector is None else selector}
    if c["labelSelector"] == "nil":
        del c["labelSelector"]
    c.update(extra)
    return c


def affinity(key: str, op: str, *values: str) -> dict:
    req = {"key": key, "operator": op}
    if values:
        req["values"] = list(values)
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [req]}]}}}


FOO = {"foo": "bar"}
# the docs' 4-node cluster, node=<name> and zone=zoneA|zoneB, with foo=bar pods on node1, node2, node3
DOCS_NODES = [node("node1", node="node1", zone="zoneA"), node("node2", node="node2", zone="zoneA"),
              node("node3", node="node3", zone="zoneB"), node("node4", node="node4", zone="zoneB")]
DOCS_PODS = [pod("p1", "node1", FOO), pod("p2", "node2", FOO), pod("p3", "node3", FOO)]


def snapshot(objs: list[dict]) -> Snapshot:
    return Snapshot(compile_cluster(cluster_from_objects(copy.deepcopy(objs))))


def run_filter(objs: list[dict], pod_name: str = "default/p", profile=PROFILE):
    """{node: "pass" | "Code:reason"} for every node, or "skip" when PreFilter skips."""
    snap = snapshot(objs)
    rule = PodTopologySpread(snap, profile)
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    if rule.pre_filter(cycle).code == Code.SKIP:
        return "skip"
    res = rule.filter(cycle, np.arange(snap.state.num_nodes))
    return {name: "pass" if res.code[i] == 0 else f"{Code(int(res.code[i])).label}:{'|'.join(res.reasons_of(i))}"
            for i, name in enumerate(snap.state.node_names)}


def run_score(objs: list[dict], pod_name: str = "default/p", feasible: list[str] | None = None, profile=PROFILE):
    """{node: (raw, normalized)} over the feasible nodes (all by default), or "skip"."""
    snap = snapshot(objs)
    rule = PodTopologySpreadScore(snap, profile)
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    names = feasible if feasible is not None else snap.state.node_names
    nodes = np.array([snap.state.node_index[n] for n in names], dtype=np.int64)
    if rule.pre_score(cycle, nodes).code == Code.SKIP:
        return "skip"
    raw = rule.score(cycle, nodes)
    norm = rule.normalize(cycle, raw)
    return {n: (int(r), int(s)) for n, r, s in zip(names, raw, norm)}


def list_profile(*constraints: dict):
    return dataclasses.replace(PROFILE, spread=PodTopologySpreadArgs(tuple(constraints), "List"))


def ok(*names: str) -> dict[str, str]:
    return dict.fromkeys(names, "pass")


def fail(reason: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, reason)


# ----------------------------------------------------------------------------- filter
ALL4 = ("node1", "node2", "node3", "node4")
FILTER_CASES = [
    # --- the docs' examples
    ("docs: one constraint, zoneA 2 / zoneB 1 pods, maxSkew 1: only zoneB",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()])],
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4")}),
    ("docs: maxSkew 2 lets zoneA in",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(skew=2)])], ok(*ALL4)),
    ("docs: topologyKey node, maxSkew 1: only the empty node4",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc("node")])],
     {**fail(SKEW, "node1", "node2", "node3"), **ok("node4")}),
    ("docs: two constraints (zone and node) are ANDed: only node4",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(), tsc("node")])],
     {**fail(SKEW, "node1", "node2", "node3"), **ok("node4")}),
    ("docs: conflicting constraints (zoneA 3 on node1+node2, zoneB 2 on node3): nothing fits",
     [node("node1", node="node1", zone="zoneA"), node("node2", node="node2", zone="zoneA"),
      node("node3", node="node3", zone="zoneB"), pod("p1", "node1", FOO), pod("p2", "node1", FOO),
      pod("p3", "node2", FOO), pod("p4", "node3", FOO), pod("p5", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(), tsc("node")])],
     fail(SKEW, "node1", "node2", "node3")),
    ("docs: node affinity NotIn zoneC leaves the empty zoneC out of the minimum: zoneB fits",
     [*DOCS_NODES, node("node5", node="node5", zone="zoneC"), *DOCS_PODS,
      pod("p", labels=FOO, spread=[tsc()], affinity=affinity("zone", "NotIn", "zoneC"))],
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4", "node5")}),
    ("docs: without the affinity the empty zoneC is the minimum: only zoneC fits",
     [*DOCS_NODES, node("node5", node="node5", zone="zoneC"), *DOCS_PODS,
      pod("p", labels=FOO, spread=[tsc()])],
     {**fail(SKEW, *ALL4), **ok("node5")}),
    ("docs: nodeSelector is honored like required affinity",
     [*DOCS_NODES, node("node5", node="node5", zone="zoneC", tier="other"), *DOCS_PODS,
      pod("p", labels=FOO, spread=[tsc()], nodeSelector={"node": "node3"})],
     # only node3 counts: its domain zoneB (1 pod) is the only one, the minimum is 1
     ok(*ALL4, "node5")),
    ("docs: a node without the key is bypassed (its pods do not count) and cannot take the pod",
     [node("node1", node="node1"), *DOCS_NODES[1:], *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()])],
     {**fail(MISSING, "node1"), **ok("node2", "node3", "node4")}),
    ("docs: an incoming pod its own selector does not match adds nothing (self-match 0)",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels={"foo": "other"}, spread=[tsc()])], ok(*ALL4)),
    # --- minDomains
    ("minDomains 3 with 2 zones: global minimum 0, zones with 1 pod are full",
     [*DOCS_NODES, pod("p1", "node1", FOO), pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(minDomains=3)])], fail(SKEW, *ALL4)),
    ("minDomains 2 with 2 zones has no effect",
     [*DOCS_NODES, pod("p1", "node1", FOO), pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(minDomains=2)])], ok(*ALL4)),
    ("minDomains counts eligible domains only: affinity to zoneB leaves 1 domain < 2",
     [*DOCS_NODES, pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(minDomains=2)], affinity=affinity("zone", "In", "zoneB"))],
     {**ok("node1", "node2"), **fail(SKEW, "node3", "node4")}),
    # --- nodeAffinityPolicy / nodeTaintsPolicy
    ("nodeAffinityPolicy Honor (default): zoneA, outside the affinity, is no domain; min is zoneB's 1",
     [*DOCS_NODES, pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc()], affinity=affinity("zone", "In", "zoneB"))], ok(*ALL4)),
    ("nodeAffinityPolicy Ignore: the empty zoneA counts, min 0, zoneB is full",
     [*DOCS_NODES, pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(nodeAffinityPolicy="Ignore")], affinity=affinity("zone", "In", "zoneB"))],
     {**ok("node1", "node2"), **fail(SKEW, "node3", "node4")}),
    ("nodeTaintsPolicy Ignore (default): the tainted empty zoneC is the minimum",
     [*DOCS_NODES, node("node5", [{"key": "k", "value": "v", "effect": "NoSchedule"}], node="node5", zone="zoneC"),
      pod("p1", "node1", FOO), pod("p3", "node3", FOO), pod("p", labels=FOO, spread=[tsc()])],
     {**fail(SKEW, *ALL4), **ok("node5")}),
    ("nodeTaintsPolicy Honor: an untolerated NoSchedule taint leaves zoneC out",
     [*DOCS_NODES, node("node5", [{"key": "k", "value": "v", "effect": "NoSchedule"}], node="node5", zone="zoneC"),
      pod("p1", "node1", FOO), pod("p3", "node3", FOO), pod("p", labels=FOO, spread=[tsc(nodeTaintsPolicy="Honor")])],
     ok(*ALL4, "node5")),
    ("nodeTaintsPolicy Honor: a tolerated taint keeps zoneC in",
     [*DOCS_NODES, node("node5", [{"key": "k", "value": "v", "effect": "NoExecute"}], node="node5", zone="zoneC"),
      pod("p1", "node1", FOO), pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(nodeTaintsPolicy="Honor")],
          tolerations=[{"key": "k", "operator": "Exists"}])],
     {**fail(SKEW, *ALL4), **ok("node5")}),
    ("nodeTaintsPolicy Honor ignores PreferNoSchedule taints",
     [*DOCS_NODES, node("node5", [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}], node="node5",
                        zone="zoneC"),
      pod("p1", "node1", FOO), pod("p3", "node3", FOO), pod("p", labels=FOO, spread=[tsc(nodeTaintsPolicy="Honor")])],
     {**fail(SKEW, *ALL4), **ok("node5")}),
    # --- selectors
    ("matchLabelKeys: only pods of the same revision count",
     [*DOCS_NODES, pod("old1", "node1", {**FOO, "rev": "1"}), pod("old2", "node2", {**FOO, "rev": "1"}),
      pod("new3", "node3", {**FOO, "rev": "2"}),
      pod("p", labels={**FOO, "rev": "2"}, spread=[tsc(matchLabelKeys=["rev"])])],
     # rev=2: zoneA 0, zoneB 1 -> zoneB is full; without the key it would be zoneA 2 / zoneB 1
     {**ok("node1", "node2"), **fail(SKEW, "node3", "node4")}),
    ("matchLabelKeys: a key the pod lacks is ignored",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(matchLabelKeys=["rev"])])],
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4")}),
    ("a nil labelSelector matches nothing, matchLabelKeys or not",
     [*DOCS_NODES, *DOCS_PODS, pod("p1b", "node1", FOO),
      pod("p", labels=FOO, spread=[tsc(selector="nil", matchLabelKeys=["foo"])])], ok(*ALL4)),
    ("an empty labelSelector counts no pod (countPodsMatchSelector) but matches the pod itself",
     [*DOCS_NODES, *DOCS_PODS, pod("p1b", "node1", FOO), pod("p", labels=FOO, spread=[tsc(selector={})])],
     ok(*ALL4)),
    ("matchExpressions select the counted pods",
     [*DOCS_NODES, pod("a1", "node1", {"app": "x"}), pod("a2", "node2", {"app": "y"}), pod("a3", "node3", {"app": "z"}),
      pod("p", labels={"app": "x"}, spread=[tsc(selector={"matchExpressions": [
          {"key": "app", "operator": "In", "values": ["x", "y"]}]})])],
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4")}),
    ("pods in another namespace do not count",
     [*DOCS_NODES, pod("p1", "node1", FOO), pod("p2", "node2", FOO, ns="other"),
      pod("p3", "node3", FOO), pod("p", labels=FOO, spread=[tsc()])], ok(*ALL4)),
    ("terminating pods do not count",
     [*DOCS_NODES, pod("p1", "node1", FOO), pod("p2", "node2", FOO, terminating=True),
      pod("p3", "node3", FOO), pod("p", labels=FOO, spread=[tsc()])], ok(*ALL4)),
    # --- keys and constraint order
    ("every constraint's key must be on a counted node: node2 lacks 'rack', its pod does not count",
     [node("node1", zone="zoneA", rack="r1"), node("node2", zone="zoneA"), node("node3", zone="zoneB", rack="r3"),
      pod("p1", "node1", FOO), pod("p2", "node2", FOO), pod("p2b", "node2", FOO), pod("p3", "node3", FOO),
      pod("p", labels=FOO, spread=[tsc(), tsc("rack", skew=5)])],
     {**ok("node1", "node3"), **fail(MISSING, "node2")}),
    ("pods on a node lacking the second key do not count: zoneA 0 / zoneB 0, node1 misses 'rack'",
     [node("node1", zone="zoneA"), node("node2", zone="zoneA", rack="r2"), node("node3", zone="zoneB", rack="r3"),
      pod("p1", "node1", FOO), pod("p1b", "node1", FOO), pod("p", labels=FOO, spread=[tsc(), tsc("rack")])],
     {**fail(MISSING, "node1"), **ok("node2", "node3")}),
    ("the first failing constraint decides: skew on the first wins over a missing second key",
     [node("node1", zone="zoneA"), node("node2", zone="zoneA", rack="r2"), node("node3", zone="zoneB", rack="r3"),
      pod("q1", "node2", FOO), pod("q2", "node2", FOO), pod("p", labels=FOO, spread=[tsc(), tsc("rack")])],
     {**fail(SKEW, "node1", "node2"), **ok("node3")}),
    ("a missing first key decides even when the second constraint is skewed",
     [node("node1", rack="r2"), node("node2", zone="zoneA", rack="r2"), node("node3", zone="zoneB", rack="r3"),
      pod("q1", "node2", FOO), pod("q2", "node2", FOO), pod("p", labels=FOO, spread=[tsc(), tsc("rack")])],
     {**fail(MISSING, "node1"), **fail(SKEW, "node2"), **ok("node3")}),
    ("a node with the key but outside every domain (affinity) has 0 pods: passes",
     [*DOCS_NODES, node("node5", zone="zoneC"), *DOCS_PODS,
      pod("p", labels=FOO, spread=[tsc()], affinity=affinity("zone", "In", "zoneA", "zoneB"))],
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4", "node5")}),
    ("no eligible domain at all: minimum 0, self-match 1 <= maxSkew",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()], affinity=affinity("zone", "In", "zoneZ"))],
     ok(*ALL4)),
    ("hostname key: domains are nodes",
     [node("a", **{HOST_KEY: "a"}), node("b", **{HOST_KEY: "b"}), pod("x", "a", FOO),
      pod("p", labels=FOO, spread=[tsc(HOST_KEY)])], {"a": SKEW, "b": "pass"}),
    ("two constraints on one key count separately (v1.33+ per-constraint state)",
     [*DOCS_NODES, pod("a1", "node1", {"app": "a"}), pod("a2", "node2", {"app": "a"}), pod("b3", "node3", {"app": "b"}),
      pod("p", labels={"app": "a"}, spread=[
          tsc(selector={"matchLabels": {"app": "a"}}, skew=2),
          tsc(selector={"matchLabels": {"app": "b"}}, skew=1)])],
     # app=a: zoneA 2, zoneB 0 -> zoneA 3-0 > 2; app=b (no self-match): zoneB 1-0 = 1 ok
     {**fail(SKEW, "node1", "node2"), **ok("node3", "node4")}),
    # --- which constraints filter
    ("only ScheduleAnyway constraints: PreFilter skips",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)])], "skip"),
    ("no constraints and System defaulting (soft only): PreFilter skips",
     [*DOCS_NODES, *DOCS_PODS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
                                "spec": {"selector": FOO}}, pod("p", labels=FOO)], "skip"),
]


@pytest.mark.parametrize("objs,want", [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_filter(objs, want):
    assert run_filter(objs) == want


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc", "namespace": "default"},
           "spec": {"selector": FOO}}
HARD_ZONE_DEFAULT = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


def test_list_defaults_filter_pods_a_service_selects():
    """List defaulting with a DoNotSchedule default: applies with the Service's selector."""
    profile = list_profile(HARD_ZONE_DEFAULT)
    got = run_filter([*DOCS_NODES, *DOCS_PODS, SERVICE, pod("p", labels=FOO)], profile=profile)
    assert got == {**fail(SKEW, "node1", "node2"), **ok("node3", "node4")}


def test_list_defaults_skip_pods_nothing_selects():
    profile = list_profile(HARD_ZONE_DEFAULT)
    assert run_filter([*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO)], profile=profile) == "skip"


def test_list_defaults_do_not_apply_to_pods_with_own_constraints():
    """A pod with only soft constraints gets no hard default."""
    profile = list_profile(HARD_ZONE_DEFAULT)
    objs = [*DOCS_NODES, *DOCS_PODS, SERVICE, pod("p", labels=FOO, spread=[tsc(hard=False)])]
    assert run_filter(objs, profile=profile) == "skip"


# ----------------------------------------------------------------------------- AddPod / RemovePod
def _cycle(objs, profile=PROFILE):
    snap = snapshot(objs)
    rule = PodTopologySpread(snap, profile)
    cycle = CycleState(snap.state.pod_index["default/p"], snap, profile)
    assert rule.pre_filter(cycle).code == Code.SUCCESS
    nodes = np.arange(snap.state.num_nodes)

    def verdicts():
        res = rule.filter(cycle, nodes)
        return ["pass" if c == 0 else "fail" for c in res.code]

    return snap, rule, cycle, verdicts


def test_filter_follows_pods_added_and_removed_after_prefilter():
    """Nominated pods and preemption dry runs add and remove pods after PreFilter (AddPod/RemovePod)."""
    snap, rule, cycle, verdicts = _cycle([*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()])])
    assert verdicts() == ["fail", "fail", "pass", "pass"]
    p1 = snap.state.pod_index["default/p1"]
    snap.remove(p1)  # zoneA 1, zoneB 1
    assert verdicts() == ["pass"] * 4
    assert rule.pre_filter(cycle).code == Code.SUCCESS  # the engines re-run PreFilter: same state
    assert verdicts() == ["pass"] * 4
    snap.add(p1, 2)  # zoneA 1, zoneB 2
    assert verdicts() == ["pass", "pass", "fail", "fail"]
    snap.remove(p1)
    snap.add(p1, 0)  # back to the start
    assert verdicts() == ["fail", "fail", "pass", "pass"]


def test_remove_pod_decrements_terminating_pods_as_upstream():
    """``updateWithPod`` has no terminating-pod check: removing one (a victim) moves its domain to -1 + ..."""
    objs = [*DOCS_NODES, pod("p1", "node1", FOO), pod("t1", "node1", FOO, terminating=True), pod("p3", "node3", FOO),
            pod("p", labels=FOO, spread=[tsc()])]
    snap, _, _, verdicts = _cycle(objs)
    assert verdicts() == ["pass"] * 4  # zoneA 1 (t1 not counted), zoneB 1
    snap.remove(snap.state.pod_index["default/t1"])  # zoneA 0 by upstream's delta, min 0
    assert verdicts() == ["pass", "pass", "fail", "fail"]


def test_remove_pod_decrements_with_an_empty_selector_as_upstream():
    """PreFilter counts nothing for an empty selector, RemovePod still subtracts matching pods."""
    objs = [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(selector={})])]
    snap, _, _, verdicts = _cycle(objs)
    assert verdicts() == ["pass"] * 4
    snap.remove(snap.state.pod_index["default/p3"])  # zoneB -1: zoneA 0 + 1 - (-1) = 2 > 1
    assert verdicts() == ["fail", "fail", "pass", "pass"]


def test_a_new_cycle_starts_from_the_snapshot():
    snap, rule, _, _ = _cycle([*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()])])
    snap.remove(snap.state.pod_index["default/p1"])
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE)
    rule.pre_filter(cycle)
    assert rule.filter(cycle, np.arange(4)).code.tolist() == [0, 0, 0, 0]


# ----------------------------------------------------------------------------- score
LN4, LN5, LN6 = math.log(4), math.log(5), math.log(6)
SCORE_CASES = [
    ("docs cluster, soft zone constraint: zoneA 2 pods, zoneB 1 (weight ln 4)",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)])], None,
     # raw round(2 ln4) = 3, round(ln4) = 1; normalized 100*(3+1-s)/3
     {"node1": (3, 33), "node2": (3, 33), "node3": (1, 100), "node4": (1, 100)}),
    ("maxSkew adds maxSkew-1 per constraint",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False, skew=3)])], None,
     {"node1": (5, 60), "node2": (5, 60), "node3": (3, 100), "node4": (3, 100)}),
    ("hostname: per-node counts, weight ln(feasible + 2)",
     [*DOCS_NODES, *DOCS_PODS, pod("p1b", "node1", FOO), pod("p", labels=FOO, spread=[tsc("node", hard=False)])],
     None,
     # 'node' is not the hostname key: domains = nodes, size 4 -> ln 6; node1 2 pods
     {"node1": (round(2 * LN6), 100 * (4 + 0 - 4) // 4), "node2": (2, 100 * (4 + 0 - 2) // 4),
      "node3": (2, 50), "node4": (0, 100)}),
    ("kubernetes.io/hostname key: counts per node",
     [node("a", **{HOST_KEY: "a"}), node("b", **{HOST_KEY: "b"}), node("c", **{HOST_KEY: "c"}),
      pod("x1", "a", FOO), pod("x2", "a", FOO), pod("x3", "b", FOO), pod("p", labels=FOO, spread=[tsc(HOST_KEY, hard=False)])],
     None, {"a": (round(2 * LN5), 0), "b": (2, 33), "c": (0, 100)}),
    ("zero everywhere: all 100",
     [*DOCS_NODES, pod("p", labels=FOO, spread=[tsc(hard=False)])], None,
     {n: (0, 100) for n in ALL4}),
    ("a feasible node without the key is ignored: raw 0, normalized 0, out of min/max",
     [*DOCS_NODES, node("bare"), *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)])], None,
     {"node1": (3, 33), "node2": (3, 33), "node3": (1, 100), "node4": (1, 100), "bare": (0, 0)}),
    ("every feasible node ignored: all 0",
     [node("bare1"), node("bare2"), pod("p", labels=FOO, spread=[tsc(hard=False)])], None,
     {"bare1": (0, 0), "bare2": (0, 0)}),
    ("domain totals count pods on infeasible nodes of a feasible node's domain",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)])], ["node2", "node4"],
     # zoneA still 2 (node1's pod counts), zoneB 1
     {"node2": (3, 33), "node4": (1, 100)}),
    ("only the feasible nodes' domains make the weight: one domain, ln 3",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)])], ["node1", "node2"],
     {"node1": (round(2 * math.log(3)), 100), "node2": (round(2 * math.log(3)), 100)}),
    ("nodeAffinityPolicy Honor: pods on nodes outside the affinity do not count",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False)],
                                   affinity=affinity("node", "In", "node2", "node3", "node4"))],
     ["node2", "node3", "node4"],
     {"node2": (1, 100), "node3": (1, 100), "node4": (1, 100)}),
    ("nodeAffinityPolicy Ignore: they do",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False, nodeAffinityPolicy="Ignore")],
                                   affinity=affinity("node", "In", "node2", "node3", "node4"))],
     ["node2", "node3", "node4"],
     {"node2": (3, 33), "node3": (1, 100), "node4": (1, 100)}),
    ("nodeTaintsPolicy Honor: pods on untolerated tainted nodes do not count",
     [node("t1", [{"key": "k", "effect": "NoSchedule"}], zone="zoneA"), node("a2", zone="zoneA"), node("b1", zone="zoneB"),
      pod("x1", "t1", FOO), pod("x2", "t1", FOO), pod("x3", "b1", FOO),
      pod("p", labels=FOO, spread=[tsc(hard=False, nodeTaintsPolicy="Honor")])], ["a2", "b1"],
     {"a2": (0, 100), "b1": (1, 0)}),
    ("two soft constraints add up",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc(hard=False), tsc("node", hard=False)])], None,
     # zone: A 2, B 1 (ln 4); node: 1,1,1,0 (ln 6)
     # raw round(2 ln4 + ln6) = 5, round(ln4 + ln6) = 3, round(ln4) = 1; normalized 100*(5+1-s)/5
     {"node1": (5, 20), "node2": (5, 20), "node3": (3, 60), "node4": (1, 100)}),
    ("hard constraints only: PreScore skips",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO, spread=[tsc()])], None, "skip"),
    ("no constraints and nothing selects the pod: skip",
     [*DOCS_NODES, *DOCS_PODS, pod("p", labels=FOO)], None, "skip"),
    ("system defaults: a Service selects the pod (hostname skew 3, zone skew 5)",
     [node("a", **{HOST_KEY: "a", ZONE_KEY: "z1"}), node("b", **{HOST_KEY: "b", ZONE_KEY: "z1"}),
      node("c", **{HOST_KEY: "c", ZONE_KEY: "z2"}), SERVICE,
      pod("x1", "a", FOO), pod("x2", "a", FOO), pod("x3", "c", FOO), pod("p", labels=FOO)], None,
     # hostname ln 5: a 2, b 0, c 1; zone ln 4: z1 2, z2 1; +2 and +4
     {"a": (round(2 * LN5 + 2 + 2 * LN4 + 4), None), "b": (round(2 + 2 * LN4 + 4), None),
      "c": (round(LN5 + 2 + LN4 + 4), None)}),
    ("system defaults: a node without a zone is not ignored; the '' zone counts in the weight",
     [node("a", **{HOST_KEY: "a", ZONE_KEY: "z1"}), node("b", **{HOST_KEY: "b"}), SERVICE,
      pod("x1", "a", FOO), pod("x2", "b", FOO), pod("x3", "b", FOO), pod("p", labels=FOO)], None,
     # hostname ln 4: a 1, b 2; zone: values {z1, ""} -> ln 4, z1 1, b has no zone term
     {"a": (round(LN4 + 2 + LN4 + 4), None), "b": (round(2 * LN4 + 2), None)}),
    ("List defaults with the pod's own constraints absent and empty defaults: skip",
     [*DOCS_NODES, *DOCS_PODS, SERVICE, pod("p", labels=FOO)], None, "skip-list"),
]


@pytest.mark.parametrize("objs,feasible,want", [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES])
def test_score(objs, feasible, want):
    if want == "skip-list":
        assert run_score(objs, feasible=feasible, profile=list_profile()) == "skip"
        return
    got = run_score(objs, feasible=feasible)
    if isinstance(want, dict) and any(v[1] is None for v in want.values()):
        raw = {n: r for n, (r, _) in got.items()}
        assert raw == {n: r for n, (r, _) in want.items()}
        hi, lo = max(raw.values()), min(raw.values())
        assert {n: s for n, (_, s) in got.items()} == {n: 100 * (hi + lo - r) // hi for n, r in raw.items()}
    else:
        assert got == want


def test_list_defaults_require_all_keys():
    """With List defaulting a node lacking a default key is ignored (requireAllTopologies)."""
    profile = list_profile({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"})
    got = run_score([*DOCS_NODES, node("bare"), *DOCS_PODS, SERVICE, pod("p", labels=FOO)], profile=profile)
    assert got == {"node1": (3, 33), "node2": (3, 33), "node3": (1, 100), "node4": (1, 100), "bare": (0, 0)}


def test_go_round_is_half_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, 2.4999999999999996, 0.49999999999999994, -0.5, -1.5, 3.0])
    assert go_round(x).tolist() == [1.0, 2.0, 3.0, 2.0, 0.0, -1.0, -2.0, 3.0]


# ----------------------------------------------------------------------------- constraint resolution
def _owned(kind: str, api: str, name: str = "w") -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": "u1", "controller": True}


def _selector_of(objs: list[dict]):
    snap = snapshot(objs)
    return default_selector(snap, snap.state.pods[snap.state.pod_index["default/p"]])


def _matches(sel, labels: dict) -> bool:
    return sel.matches(labels)


def test_default_selector_merges_services_of_the_namespace():
    objs = [node("a"), SERVICE,
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s2", "namespace": "default"},
             "spec": {"selector": {"tier": "web"}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s3", "namespace": "other"},
             "spec": {"selector": {"foo": "bar", "x": "y"}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s4", "namespace": "default"},
             "spec": {"selector": {"foo": "bar", "missing": "1"}}},
            pod("p", labels={"foo": "bar", "tier": "web", "x": "y"})]
    sel = _selector_of(objs)
    assert sel.labels == frozenset({("foo", "bar"), ("tier", "web")}) and not sel.exprs


def test_default_selector_adds_the_replicaset_selector():
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "w"},
                                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}}
    sel = _selector_of([node("a"), rs, pod("p", labels={"app": "w", "env": "prod"}, owner=_owned("ReplicaSet", "apps/v1"))])
    assert _matches(sel, {"app": "w", "env": "prod"}) and not _matches(sel, {"app": "w", "env": "dev"})


def test_default_selector_statefulset_and_rc():
    ss = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "db"}}}}
    sel = _selector_of([node("a"), ss, pod("p", labels={"app": "db"}, owner=_owned("StatefulSet", "apps/v1"))])
    assert sel.labels == frozenset({("app", "db")})
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"selector": {"app": "old"}}}
    sel = _selector_of([node("a"), rc, pod("p", labels={"app": "old"}, owner=_owned("ReplicationController", "v1"))])
    assert sel.labels == frozenset({("app", "old")})


def test_default_selector_ignores_unknown_owners_and_missing_workloads():
    assert _selector_of([node("a"), pod("p", labels=FOO, owner=_owned("Job", "batch/v1"))]).empty
    assert _selector_of([node("a"), pod("p", labels=FOO, owner=_owned("ReplicaSet", "apps/v1"))]).empty
    # a ReplicaSet owner reference with the wrong group is not a ReplicaSet
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "w", "namespace": "default"},
          "spec": {"selector": {"matchLabels": FOO}}}
    assert _selector_of([node("a"), rs, pod("p", labels=FOO, owner=_owned("ReplicaSet", "extensions/v1beta1"))]).empty


def test_default_constraints_take_the_default_selector_not_match_label_keys():
    """``buildDefaultConstraints`` replaces the selector after merging matchLabelKeys: they are lost."""
    snap = snapshot([node("a"), SERVICE, pod("p", labels={**FOO, "rev": "2"})])
    p = snap.state.pods[snap.state.pod_index["default/p"]]
    defaults = ({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "matchLabelKeys": ["rev"]},)
    (c,) = resolve_constraints(snap, p, defaults, "ScheduleAnyway")
    assert c.selector.labels == frozenset(FOO.items())


def test_own_constraint_defaults():
    snap = snapshot([node("a"), pod("p", labels={**FOO, "rev": "2"}, spread=[tsc(hard=True, matchLabelKeys=["rev"])])])
    p = snap.state.pods[snap.state.pod_index["default/p"]]
    (c,) = resolve_constraints(snap, p, (), "DoNotSchedule")
    assert (c.min_domains, c.honor_affinity, c.honor_taints) == (1, True, False)
    assert c.selector.labels == frozenset({("foo", "bar"), ("rev", "2")})
    assert resolve_constraints(snap, p, (), "ScheduleAnyway") == []


# ----------------------------------------------------------------------------- against kube-scheduler
def _filter_problems(step, rule) -> list[str]:
    passed, fails = step.filter_expectation("PodTopologySpread")
    cs = step.cycle_state
    st = rule.pre_filter(cs)
    assert st.code in (Code.SUCCESS, Code.SKIP)
    rows = np.concatenate([passed, step.rows(list(fails))]) if fails else passed
    if len(rows) == 0:
        return []
    res = None if st.code == Code.SKIP else rule.filter(cs, rows)
    out = []
    for k, r in enumerate(rows):
        name = step.state.node_names[r]
        code = 0 if res is None else int(res.code[k])
        got = (Code(code).label if code else "pass", sorted(res.reasons_of(k)) if code else [])
        want = (fails[name]["code"], sorted(fails[name]["reasons"])) if name in fails else ("pass", [])
        if got != want:
            out.append(f"cycle {step.index} ({step.cycle['pod']}) {name}: {got} != {want}")
    return out


def _score_problems(step, rule) -> list[str]:
    cyc = step.cycle
    if not (cyc.get("scored") and cyc.get("scores")):
        return []
    cs, feasible = step.cycle_state, step.feasible
    skipped = rule.pre_score(cs, feasible).code == Code.SKIP
    if skipped != ("PodTopologySpread" in (cyc.get("skippedScorePlugins") or [])):
        return [f"cycle {step.index} ({cyc['pod']}): skip {skipped}"]
    if skipped:
        return []
    raw = rule.score(cs, feasible)
    norm = rule.normalize(cs, raw)
    weight = cs.profile.score_weights["PodTopologySpread"]
    out = []
    for k, r in enumerate(feasible):
        name = step.state.node_names[r]
        e = cyc["scores"][name]
        got = (int(raw[k]), int(norm[k]), int(norm[k]) * weight)
        want = (e["raw"].get("PodTopologySpread", 0), e["normalized"].get("PodTopologySpread", 0),
                e["plugins"].get("PodTopologySpread", 0))
        if got != want:
            out.append(f"cycle {step.index} ({cyc['pod']}) {name}: {got} != {want}")
    return out


@pytest.mark.parametrize("case", case_names())
def test_matches_kube_scheduler(case):
    """Every recorded cycle: per-node pass/fail, code and reasons; raw, normalized, weighted and skips."""
    problems: list[str] = []
    filt = score = None
    cycles = 0
    for step in replay(case):
        if filt is None:
            snap, profile = step.cycle_state.snapshot, step.cycle_state.profile
            filt, score = PodTopologySpread(snap, profile), PodTopologySpreadScore(snap, profile)
        problems += _filter_problems(step, filt)
        problems += _score_problems(step, score)
        cycles += 1
    assert cycles > 0
    assert not problems, problems[:10]
