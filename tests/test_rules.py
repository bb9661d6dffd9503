"""Table-driven unit tests per rule, on small hand-built clusters (kube's *_test.go tables)."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of

from optisched.framework import Code, CycleState
from optisched.profile import default_config, parse_config
from optisched.registry import instantiate

PROFILE = default_config().profiles[0]


def run_filter(plugin: str, objs, pod_name: str = "default/p", profile=PROFILE):
    snap = snapshot_of(*objs)
    filters, _ = instantiate(snap, profile)
    rule = filters[plugin]
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    st = rule.pre_filter(cycle)
    nodes = np.arange(snap.state.num_nodes)
    if st.code == Code.SKIP:
        return {n: "pass" for n in snap.state.node_names}
    if st.code != Code.SUCCESS:
        return {n: f"prefilter:{st.reasons[0]}" for n in snap.state.node_names}
    res = rule.filter(cycle, nodes)
    return {snap.state.node_names[i]: ("pass" if res.code[i] == 0 else
                                      f"{Code(int(res.code[i])).label}:{'|'.join(res.reasons_of(i))}")
            for i in range(len(nodes))}


def run_score(plugin: str, objs, pod_name: str = "default/p", profile=PROFILE):
    snap = snapshot_of(*objs)
    _, scores = instantiate(snap, profile)
    rule = scores[plugin]
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    nodes = np.arange(snap.state.num_nodes)
    if rule.pre_score(cycle, nodes).code == Code.SKIP:
        return "skip"
    raw = rule.score(cycle, nodes)
    norm = rule.normalize(cycle, raw)
    return {n: (int(r), int(s)) for n, r, s in zip(snap.state.node_names, raw, norm)}


UNRES = "UnschedulableAndUnresolvable"

# ----------------------------------------------------------------------------- filters
FILTER_CASES = [
    ("NodeUnschedulable rejects a cordoned node",
     "NodeUnschedulable", [node("a"), node("b").unschedulable(), pod("p")],
     {"a": "pass", "b": f"{UNRES}:node(s) were unschedulable"}),
    ("NodeUnschedulable lets a pod tolerating the unschedulable taint in",
     "NodeUnschedulable", [node("b").unschedulable(), pod("p").tolerate("node.kubernetes.io/unschedulable", op="Exists")],
     {"b": "pass"}),
    ("NodeName keeps only the named node",
     "NodeName", [node("a"), node("b"), pod("p").set("spec.nodeName", None).set("spec.nodeName", "b")],
     None),
    ("TaintToleration rejects an untolerated NoSchedule taint",
     "TaintToleration", [node("a").taint("gpu", "true"), node("b"), pod("p")],
     {"a": f"{UNRES}:node(s) had untolerated taint(s)", "b": "pass"}),
    ("TaintToleration ignores PreferNoSchedule when filtering",
     "TaintToleration", [node("a").taint("x", effect="PreferNoSchedule"), pod("p")], {"a": "pass"}),
    ("TaintToleration accepts a matching toleration",
     "TaintToleration", [node("a").taint("gpu", "true"), pod("p").tolerate("gpu", "true")], {"a": "pass"}),
    ("TaintToleration: Exists with an empty key tolerates everything",
     "TaintToleration", [node("a").taint("gpu", "true", "NoExecute"), pod("p").tolerate("", op="Exists", effect="")],
     {"a": "pass"}),
    ("NodeAffinity applies nodeSelector",
     "NodeAffinity", [node("a").labels({"disk": "ssd"}), node("b"), pod("p").set("spec.nodeSelector", {"disk": "ssd"})],
     {"a": "pass", "b": f"{UNRES}:node(s) didn't match Pod's node affinity/selector"}),
    ("NodeAffinity Gt compares integers",
     "NodeAffinity", [node("a").labels({"cores": "16"}), node("b").labels({"cores": "4"}), node("c"),
                      pod("p").set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                          "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}]}}})],
     {"a": "pass", "b": f"{UNRES}:node(s) didn't match Pod's node affinity/selector",
      "c": f"{UNRES}:node(s) didn't match Pod's node affinity/selector"}),
    ("NodeAffinity NotIn matches nodes without the label",
     "NodeAffinity", [node("a").labels({"zone": "z1"}), node("b"),
                      pod("p").set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                          "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}]}}})],
     {"a": f"{UNRES}:node(s) didn't match Pod's node affinity/selector", "b": "pass"}),
    ("NodeAffinity terms are ORed",
     "NodeAffinity", [node("a").labels({"x": "1"}), node("b").labels({"y": "1"}), node("c"),
                      pod("p").set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                          "nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "Exists"}]},
                                                {"matchExpressions": [{"key": "y", "operator": "Exists"}]}]}}})],
     {"a": "pass", "b": "pass", "c": f"{UNRES}:node(s) didn't match Pod's node affinity/selector"}),
    ("NodeAffinity conflicting matchFields reject in PreFilter",
     "NodeAffinity", [node("a"), pod("p").set("spec.affinity", {"nodeAffinity": {
         "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [
             {"key": "metadata.name", "operator": "In", "values": ["a"]},
             {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}})],
     {"a": "prefilter:pod affinity terms conflict"}),
    ("NodePorts rejects a node whose host port is taken",
     "NodePorts", [node("a"), node("b"),
                   pod("q").on("a").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]),
                   pod("p").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}])],
     {"a": "Unschedulable:node(s) didn't have free ports for the requested pod ports", "b": "pass"}),
    ("NodePorts: different host IPs on the same port do not conflict",
     "NodePorts", [node("a"),
                   pod("q").on("a").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 53, "hostIP": "10.0.0.1"}]}]),
                   pod("p").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 53, "hostIP": "10.0.0.2"}]}])],
     {"a": "pass"}),
    ("NodePorts: 0.0.0.0 conflicts with any IP on the same port",
     "NodePorts", [node("a"),
                   pod("q").on("a").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 53, "hostIP": "10.0.0.1"}]}]),
                   pod("p").set("spec.containers", [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 53}]}])],
     {"a": "Unschedulable:node(s) didn't have free ports for the requested pod ports"}),
    ("NodeResourcesFit lists every insufficient resource",
     "NodeResourcesFit", [node("a", cpu="1", memory="1Gi"), pod("p").req(cpu="2", memory="2Gi")],
     {"a": f"{UNRES}:Insufficient cpu|Insufficient memory"}),
    ("NodeResourcesFit: short only because of other pods is Unschedulable",
     "NodeResourcesFit", [node("a", cpu="2"), pod("q").on("a").req(cpu="1500m"), pod("p").req(cpu="1")],
     {"a": "Unschedulable:Insufficient cpu"}),
    ("NodeResourcesFit counts pods against the pods allocatable",
     "NodeResourcesFit", [node("a", pods="1"), pod("q").on("a"), pod("p")], {"a": "Unschedulable:Too many pods"}),
    ("NodeResourcesFit checks extended resources",
     "NodeResourcesFit", [node("a").alloc(nvidia_gpu="1"), node("b"), pod("p").lim(nvidia_gpu="2")],
     {"a": f"{UNRES}:Insufficient nvidia.com/gpu", "b": f"{UNRES}:Insufficient nvidia.com/gpu"}),
]


@pytest.mark.parametrize("case,plugin,objs,want", FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
def test_filter(case, plugin, objs, want):
    got = run_filter(plugin, objs)
    if want is None:  # NodeName
        assert got == {"a": f"{UNRES}:node(s) didn't match the requested node name", "b": "pass"}
    else:
        assert got == want


def test_nodeports_frees_a_port_when_any_holder_leaves():
    """Upstream keeps used ports as a set per node: removing one of two holders frees the port."""
    ports = [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 9000}]}]
    snap = snapshot_of(node("a"), pod("q1").on("a").set("spec.containers", ports),
                       pod("q2").on("a").set("spec.containers", ports), pod("p").set("spec.containers", ports))
    filters, _ = instantiate(snap, PROFILE)
    rule = filters["NodePorts"]
    cycle = CycleState(snap.state.pod_index["default/p"], snap, PROFILE)
    rule.pre_filter(cycle)
    assert rule.filter(cycle, np.array([0])).code[0] == Code.UNSCHEDULABLE
    snap.remove(snap.state.pod_index["default/q1"])
    assert rule.filter(cycle, np.array([0])).code[0] == 0


def _spread_pod(name: str, *constraints, labels=None):
    p = pod(name).label(**(labels or {"foo": "bar"}))
    p.set("spec.topologySpreadConstraints", list(constraints))
    return p


ZONE = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"foo": "bar"}}}
DOCS_NODES = [node("node1").labels({"zone": "zoneA", "node": "node1"}), node("node2").labels({"zone": "zoneA", "node": "node2"}),
              node("node3").labels({"zone": "zoneB", "node": "node3"}), node("node4").labels({"zone": "zoneB", "node": "node4"})]
DOCS_PODS = [pod("p1").label(foo="bar").on("node1"), pod("p2").label(foo="bar").on("node2"),
             pod("p3").label(foo="bar").on("node3")]
SKEW = "Unschedulable:node(s) didn't match pod topology spread constraints"


def test_spread_docs_example_one_constraint():
    """Docs, 'Pod Topology Spread Constraints': 2/1 pods in zoneA/zoneB, maxSkew 1 -> only zoneB."""
    got = run_filter("PodTopologySpread", [*DOCS_NODES, *DOCS_PODS, _spread_pod("p", ZONE)])
    assert got == {"node1": SKEW, "node2": SKEW, "node3": "pass", "node4": "pass"}


def test_spread_docs_example_two_constraints():
    """Docs: adding a per-node constraint (maxSkew 1) leaves only node4."""
    per_node = {**ZONE, "topologyKey": "node"}
    got = run_filter("PodTopologySpread", [*DOCS_NODES, *DOCS_PODS, _spread_pod("p", ZONE, per_node)])
    assert got == {"node1": SKEW, "node2": SKEW, "node3": SKEW, "node4": "pass"}


def test_spread_min_domains_treats_missing_domains_as_empty():
    """minDomains 3 with only 2 zones: the global minimum counts as 0, so a zone with 1 pod is full."""
    c = {**ZONE, "minDomains": 3}
    got = run_filter("PodTopologySpread", [*DOCS_NODES, pod("p1").label(foo="bar").on("node1"), _spread_pod("p", c)])
    assert got == {"node1": SKEW, "node2": SKEW, "node3": "pass", "node4": "pass"}


def test_spread_node_without_the_key_is_unresolvable():
    got = run_filter("PodTopologySpread", [*DOCS_NODES, node("bare"), _spread_pod("p", ZONE)])
    assert got["bare"] == f"{UNRES}:node(s) didn't match pod topology spread constraints (missing required label)"


def test_spread_node_affinity_policy_ignore_counts_every_node():
    """Honor (default) leaves zoneA out of the domains when the pod cannot go there: zoneB's one pod is the
    minimum and node4 passes (1+1-1 = 1). Ignore counts the empty zoneA: 1+1-0 = 2 > maxSkew."""
    sel = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zoneB"]}]}]}}}
    honor = _spread_pod("p", ZONE).set("spec.affinity", sel)
    got = run_filter("PodTopologySpread", [*DOCS_NODES, pod("p3").label(foo="bar").on("node3"), honor])
    assert got["node4"] == "pass"
    ignore = _spread_pod("p", {**ZONE, "nodeAffinityPolicy": "Ignore"}).set("spec.affinity", sel)
    got = run_filter("PodTopologySpread", [*DOCS_NODES, pod("p3").label(foo="bar").on("node3"), ignore])
    assert got["node4"] == SKEW


AFF = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}]}


def test_pod_affinity_requires_a_matching_pod_in_the_domain():
    objs = [node("a").labels({"zone": "z1"}), node("b").labels({"zone": "z2"}), node("c"),
            pod("db").label(app="db").on("a"), pod("p").label(app="web").set("spec.affinity", {"podAffinity": AFF})]
    got = run_filter("InterPodAffinity", objs)
    assert got == {"a": "pass", "b": f"{UNRES}:node(s) didn't match pod affinity rules",
                   "c": f"{UNRES}:node(s) didn't match pod affinity rules"}


def test_pod_affinity_first_pod_of_a_self_affine_series_goes_anywhere_with_the_key():
    objs = [node("a").labels({"zone": "z1"}), node("c"), pod("p").label(app="db").set("spec.affinity", {"podAffinity": AFF})]
    assert run_filter("InterPodAffinity", objs) == {"a": "pass", "c": f"{UNRES}:node(s) didn't match pod affinity rules"}


def test_pod_anti_affinity_and_existing_pods_anti_affinity():
    anti = {"podAntiAffinity": AFF}
    objs = [node("a").labels({"zone": "z1"}), node("b").labels({"zone": "z2"}),
            pod("db").label(app="db").on("a"), pod("p").label(app="db").set("spec.affinity", anti)]
    assert run_filter("InterPodAffinity", objs) == {"a": "Unschedulable:node(s) didn't match pod anti-affinity rules",
                                                    "b": "pass"}
    objs = [node("a").labels({"zone": "z1"}), node("b").labels({"zone": "z2"}),
            pod("db").label(app="x").on("a").set("spec.affinity", anti), pod("p").label(app="db")]
    assert run_filter("InterPodAffinity", objs) == {
        "a": "Unschedulable:node(s) didn't satisfy existing pods anti-affinity rules", "b": "pass"}


def test_pod_affinity_namespace_selector_resolves_namespaces():
    term = {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}},
                                                                 "namespaceSelector": {"matchLabels": {"team": "data"}}}]}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "data", "labels": {"team": "data"}}}
    objs = [ns, node("a").labels({"zone": "z1"}), node("b").labels({"zone": "z2"}),
            pod("db", "data").label(app="db").on("a"), pod("db2").label(app="db").on("b"),
            pod("p").label(app="web").set("spec.affinity", {"podAffinity": term})]
    assert run_filter("InterPodAffinity", objs) == {"a": "pass", "b": f"{UNRES}:node(s) didn't match pod affinity rules"}


# ----------------------------------------------------------------------------- scores
def test_taint_toleration_score_counts_intolerable_prefer_no_schedule():
    objs = [node("a"), node("b").taint("x", effect="PreferNoSchedule"),
            node("c").taint("x", effect="PreferNoSchedule").taint("y", effect="PreferNoSchedule"), pod("p")]
    assert run_score("TaintToleration", objs) == {"a": (0, 100), "b": (1, 50), "c": (2, 0)}


def test_node_affinity_score_sums_matching_weights_and_skips_without_preferences():
    pref = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
        {"weight": 30, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}
    objs = [node("a").labels({"disk": "ssd", "gpu": "1"}), node("b").labels({"disk": "ssd"}), node("c"),
            pod("p").set("spec.affinity", pref)]
    assert run_score("NodeAffinity", objs) == {"a": (40, 100), "b": (10, 25), "c": (0, 0)}
    assert run_score("NodeAffinity", [node("a"), pod("p")]) == "skip"


def test_least_allocated_uses_non_zero_requests():
    """A best-effort pod counts as 100m / 200Mi: (4000-100)*100/4000 = 97, (8Gi-200Mi)*100/8Gi = 97."""
    assert run_score("NodeResourcesFit", [node("a", cpu="4", memory="8Gi"), pod("p")]) == {"a": (97, 97)}


def test_balanced_allocation_skips_best_effort_and_scores_balance():
    assert run_score("NodeResourcesBalancedAllocation", [node("a"), pod("p")]) == "skip"
    # cpu 1/4 = 0.25, memory 4/8 = 0.5: (1 - 0.125) * 100 = 87
    got = run_score("NodeResourcesBalancedAllocation", [node("a", cpu="4", memory="8Gi"), pod("p").req(cpu="1", memory="4Gi")])
    assert got == {"a": (87, 87)}


RTCR = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{
    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "intel.com/foo", "weight": 5}, {"name": "memory", "weight": 1}, {"name": "cpu", "weight": 3}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}}]}]}
).profiles[0]


def test_requested_to_capacity_ratio_docs_bin_packing_example():
    """Docs, 'Resource Bin Packing': node1 scores 5, node2 scores 7 for the same pod."""
    n1 = node("node1", cpu="8", memory="1024Mi").alloc(**{"intel.com/foo": "4"})
    n2 = node("node2", cpu="8", memory="1024Mi").alloc(**{"intel.com/foo": "8"})
    used1 = pod("u1").on("node1").req(cpu="1", memory="256Mi", **{"intel.com/foo": "1"})
    used2 = pod("u2").on("node2").req(cpu="6", memory="512Mi", **{"intel.com/foo": "2"})
    new = pod("p").req(cpu="2", memory="256Mi", **{"intel.com/foo": "2"})
    snap = snapshot_of(n1, n2, used1, used2, new)
    _, scores = instantiate(snap, RTCR)
    rule = scores["NodeResourcesFit"]
    cycle = CycleState(snap.state.pod_index["default/p"], snap, RTCR)
    rule.pre_score(cycle, np.arange(2))
    # node1: foo 3/4=75, memory 512/1024=50, cpu 3/8=37 -> (75*5+50+37*3)/9 = 59.6 -> 60 in 0..100 (docs: 5 on 0..10)
    # node2: foo 4/8=50, memory 768/1024=75, cpu 8/8=100 -> (250+75+300)/9 = 69.4 -> 69 (docs: 7)
    assert rule.score(cycle, np.arange(2)).tolist() == [60, 69]


def test_most_allocated_prefers_fuller_nodes():
    prof = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}).profiles[0]
    snap = snapshot_of(node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"),
                       pod("q").on("a").req(cpu="2", memory="2Gi"), pod("p").req(cpu="1", memory="1Gi"))
    _, scores = instantiate(snap, prof)
    cycle = CycleState(snap.state.pod_index["default/p"], snap, prof)
    rule = scores["NodeResourcesFit"]
    rule.pre_score(cycle, np.arange(2))
    assert rule.score(cycle, np.arange(2)).tolist() == [75, 25]


def test_image_locality_scales_by_spread():
    img = {"names": ["registry.example/app:1"], "sizeBytes": 500 * 1024 * 1024}
    n1 = node("a")
    n1["status"]["images"] = [img]
    objs = [n1, node("b"), pod("p").set("spec.containers", [{"name": "c", "image": "registry.example/app:1"}])]
    # 500 MiB * 1/2 nodes = 250 MiB; (250-23)*100/(1000-23) = 23
    assert run_score("ImageLocality", objs) == {"a": (23, 23), "b": (0, 0)}


def test_pod_topology_spread_score_prefers_emptier_zones():
    soft = {**ZONE, "whenUnsatisfiable": "ScheduleAnyway"}
    got = run_score("PodTopologySpread", [*DOCS_NODES, *DOCS_PODS, _spread_pod("p", soft)])
    assert got["node3"][1] == got["node4"][1] == 100 and got["node1"][1] < 100


def test_inter_pod_affinity_score_min_max_normalizes():
    pref = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}}]}}
    objs = [node("a").labels({"zone": "z1"}), node("b").labels({"zone": "z2"}), pod("db").label(app="db").on("a"),
            pod("p").set("spec.affinity", pref)]
    assert run_score("InterPodAffinity", objs) == {"a": (10, 100), "b": (0, 0)}
    assert run_score("InterPodAffinity", [node("a"), pod("p")]) == "skip"
