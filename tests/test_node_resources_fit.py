"""NodeResourcesFit: Filter (``fitsRequest``) and Score (LeastAllocated, MostAllocated,
RequestedToCapacityRatio) on small hand-built clusters, the Kubernetes docs' bin-packing example, and
every cycle of the recorded kube-scheduler v1.35.4 traces."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, snapshot_of
from helpers.replay import case_names, replay

from optisched.framework import Code, CycleState
from optisched.plugins.noderesources.fit import (
    NodeResourcesFit,
    is_extended_resource,
    is_scalar_resource_name,
)
from optisched.plugins.noderesources.scoring import (
    NodeResourcesFitScore,
    broken_linear,
    go_div,
    go_round,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
)
from optisched.profile import default_config, parse_config

DEFAULT = default_config().profiles[0]
UNRES = "UnschedulableAndUnresolvable"
UNSCH = "Unschedulable"
GPU = "nvidia.com/gpu"


def profile_with(fit_args: dict):
    """The default profile with NodeResourcesFit args (a KubeSchedulerConfiguration, parsed)."""
    return parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": fit_args}]}]}).profiles[0]


def strategy(kind: str, resources: list[tuple[str, int]] | None = None, shape=None):
    ss: dict = {"type": kind}
    if resources:
        ss["resources"] = [{"name": n, "weight": w} for n, w in resources]
    if shape:
        ss["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": s} for u, s in shape]}
    return profile_with({"scoringStrategy": ss})


def ext(**res: str) -> dict:
    """Resource names that are not Python identifiers: ``ext(foo="2")`` is ``{"example.com/foo": "2"}``."""
    return {f"example.com/{k}": v for k, v in res.items()}


# ------------------------------------------------------------------------------------ Filter
def verdicts(objs, profile=DEFAULT, pod_name: str = "default/p") -> dict[str, str]:
    snap = snapshot_of(*objs)
    rule = NodeResourcesFit(snap, profile)
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    assert rule.pre_filter(cycle).code == Code.SUCCESS
    nodes = np.arange(snap.state.num_nodes)
    res = rule.filter(cycle, nodes)
    return {snap.state.node_names[i]: "pass" if res.code[i] == 0 else
            f"{Code(int(res.code[i])).label}: {', '.join(res.reasons_of(i))}" for i in range(len(nodes))}


FILTER_CASES = [
    ("request equal to what is free fits",
     [node("a", cpu="2", memory="2Gi"), pod("q").on("a").req(cpu="1", memory="1Gi"), pod("p").req(cpu="1", memory="1Gi")],
     DEFAULT, {"a": "pass"}),
    ("short only because of other pods is Unschedulable (preemption may help)",
     [node("a", cpu="2"), pod("q").on("a").req(cpu="1500m"), pod("p").req(cpu="1")],
     DEFAULT, {"a": f"{UNSCH}: Insufficient cpu"}),
    ("a request above the node's whole allocatable is UnschedulableAndUnresolvable",
     [node("a", cpu="2"), pod("p").req(cpu="3")],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu"}),
    ("every insufficient resource is listed, cpu before memory; one unresolvable makes the node unresolvable",
     [node("a", cpu="2", memory="4Gi"), pod("q").on("a").req(cpu="1500m"), pod("p").req(cpu="1", memory="5Gi")],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu, Insufficient memory"}),
    ("Too many pods comes first and is never unresolvable",
     [node("a", cpu="1", pods="1"), pod("q").on("a").req(cpu="800m"), pod("p").req(cpu="500m")],
     DEFAULT, {"a": f"{UNSCH}: Too many pods, Insufficient cpu"}),
    ("Too many pods with an unresolvable resource",
     [node("a", memory="1Gi", pods="1"), pod("q").on("a"), pod("p").req(memory="2Gi")],
     DEFAULT, {"a": f"{UNRES}: Too many pods, Insufficient memory"}),
    ("a node with no pods allocatable rejects every pod",
     [node("a", pods="0"), pod("p")],
     DEFAULT, {"a": f"{UNSCH}: Too many pods"}),
    ("a pod without requests only needs a pod slot (no 100m/200Mi defaults in the filter)",
     [node("a", cpu="1", memory="1Gi"), pod("q").on("a").req(cpu="1", memory="1Gi"), pod("p")],
     DEFAULT, {"a": "pass"}),
    ("a zero request is not checked even on an overcommitted node",
     [node("a", cpu="1"), pod("q").on("a").req(cpu="2"), pod("p").req(cpu="0", memory="1Mi")],
     DEFAULT, {"a": "pass"}),
    ("ephemeral-storage is checked after memory",
     [node("a", memory="1Gi").alloc(ephemeral_storage="10Gi"), pod("q").on("a").req(ephemeral_storage="8Gi"),
      pod("p").req(memory="2Gi", ephemeral_storage="4Gi")],
     DEFAULT, {"a": f"{UNRES}: Insufficient memory, Insufficient ephemeral-storage"}),
    ("an extended resource the node lacks is unresolvable there; the node with it passes",
     [node("a"), node("b").alloc(nvidia_gpu="2"), pod("p").lim(nvidia_gpu="1")],
     DEFAULT, {"a": f"{UNRES}: Insufficient {GPU}", "b": "pass"}),
    ("extended resource used up by other pods",
     [node("b").alloc(nvidia_gpu="2"), pod("q").on("b").lim(nvidia_gpu="2"), pod("p").lim(nvidia_gpu="1")],
     DEFAULT, {"b": f"{UNSCH}: Insufficient {GPU}"}),
    ("a node's extended resource the pod does not request is irrelevant",
     [node("b", cpu="1").alloc(nvidia_gpu="0"), pod("p").req(cpu="1")],
     DEFAULT, {"b": "pass"}),
    ("several scalar resources are listed after the native ones, in name order",
     [node("a", cpu="1").alloc(**ext(bar="1")), pod("p").req(cpu="2").lim(**ext(foo="1", bar="2"))],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu, Insufficient example.com/bar, Insufficient example.com/foo"}),
    ("ignoredResources skips an extended resource",
     [node("a"), pod("p").lim(**ext(foo="1", bar="1"))],
     profile_with({"ignoredResources": ["example.com/foo"]}), {"a": f"{UNRES}: Insufficient example.com/bar"}),
    ("ignoredResourceGroups skips every extended resource of the group",
     [node("a"), pod("p").lim(**ext(foo="1", bar="1")).lim(nvidia_gpu="1")],
     profile_with({"ignoredResourceGroups": ["example.com"]}), {"a": f"{UNRES}: Insufficient {GPU}"}),
    ("hugepages are scalar resources that cannot be ignored",
     [node("a").alloc(**{"hugepages-2Mi": "64Mi"}), pod("p").req(memory="128Mi").lim(**{"hugepages-2Mi": "128Mi",
                                                                                         "memory": "128Mi"})],
     profile_with({"ignoredResources": ["hugepages-2Mi"]}), {"a": f"{UNRES}: Insufficient hugepages-2Mi"}),
    ("a *kubernetes.io/ resource is a (non-ignorable) scalar resource",
     [node("a"), pod("p").lim(**{"example.kubernetes.io/foo": "1"})],
     profile_with({"ignoredResourceGroups": ["example.kubernetes.io"]}),
     {"a": f"{UNRES}: Insufficient example.kubernetes.io/foo"}),
    ("effective requests: an init container bigger than the app containers sets the request",
     [node("a", cpu="2"), pod("p").req(cpu="500m").init({"cpu": "3"})],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu"}),
    ("effective requests: a sidecar adds to the app containers",
     [node("a", cpu="2"), pod("q").on("a").req(cpu="500m"), pod("p").req(cpu="1").init({"cpu": "1"}, sidecar=True)],
     DEFAULT, {"a": f"{UNSCH}: Insufficient cpu"}),
    ("effective requests: pod overhead is added",
     [node("a", cpu="2"), pod("p").req(cpu="1900m").overhead(cpu="200m")],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu"}),
    ("effective requests: pod-level requests replace the containers' sum",
     [node("a", cpu="2"), pod("p").req(cpu="500m").pod_level(cpu="2500m")],
     DEFAULT, {"a": f"{UNRES}: Insufficient cpu"}),
]


@pytest.mark.parametrize(("objs", "profile", "want"), [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])
def test_filter(objs, profile, want):
    assert verdicts(objs, profile) == want


def test_fits_with_other_usage_is_what_preemption_asks():
    """``fits`` answers for a hypothetical usage: here with the other pod gone the node fits."""
    snap = snapshot_of(node("a", cpu="2"), pod("q").on("a").req(cpu="1500m"), pod("p").req(cpu="1"))
    rule = NodeResourcesFit(snap, DEFAULT)
    nodes = np.array([0])
    p = snap.state.pod_index["default/p"]
    assert rule.fits(p, nodes, snap.requested[nodes]).reasons_of(0) == ["Insufficient cpu"]
    assert rule.fits(p, nodes, np.zeros_like(snap.requested[nodes])).code.tolist() == [0]


@pytest.mark.parametrize(("name", "extended", "scalar"), [
    ("cpu", False, False), ("pods", False, False), ("ephemeral-storage", False, False),
    ("nvidia.com/gpu", True, True), ("example.com/foo", True, True), ("hugepages-1Gi", False, True),
    ("kubernetes.io/foo", False, True), ("example.kubernetes.io/foo", False, True),
    ("attachable-volumes-csi-x", False, True), ("requests.example.com/foo", False, False), ("foo", False, False),
])
def test_resource_name_classes(name, extended, scalar):
    assert (is_extended_resource(name), is_scalar_resource_name(name)) == (extended, scalar)


# ------------------------------------------------------------------------------------ Score
def scores(objs, profile=DEFAULT, pod_name: str = "default/p") -> dict[str, int]:
    snap = snapshot_of(*objs)
    rule = NodeResourcesFitScore(snap, profile)
    cycle = CycleState(snap.state.pod_index[pod_name], snap, profile)
    nodes = np.arange(snap.state.num_nodes)
    assert rule.pre_score(cycle, nodes).code == Code.SUCCESS  # NodeResourcesFit never skips
    raw = rule.score(cycle, nodes)
    assert rule.normalize(cycle, raw).tolist() == raw.tolist()  # no NormalizeScore
    return dict(zip(snap.state.node_names, raw.tolist()))


LEAST = DEFAULT
MOST = strategy("MostAllocated")

SCORE_CASES = [
    # LeastAllocated, default resources cpu:1 memory:1
    ("least: a pod without requests counts 100m and 200Mi (non-zero requests)",
     [node("a", cpu="4", memory="8Gi"), pod("p")], LEAST,
     {"a": (3900 * 100 // 4000 + (8192 - 200) * 100 // 8192) // 2}),
    ("least: the node's pods count with their non-zero requests too",
     [node("a", cpu="1", memory="1Gi"), pod("q").on("a"), pod("p").req(cpu="100m", memory="100Mi")], LEAST,
     {"a": (800 * 100 // 1000 + (1024 - 300) * 100 // 1024) // 2}),
    ("least: a resource over capacity scores 0",
     [node("a", cpu="1", memory="1Gi"), pod("q").on("a").req(cpu="1", memory="0"), pod("p").req(cpu="1", memory="512Mi")], LEAST,
     {"a": (0 + 50) // 2}),
    ("least: weights; a resource the node lacks is left out of the weight sum",
     [node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi").alloc(nvidia_gpu="4"),
      pod("p").req(cpu="1", memory="2Gi").lim(nvidia_gpu="1")],
     strategy("LeastAllocated", [("cpu", 3), ("memory", 1), (GPU, 4)]),
     {"a": (75 * 3 + 50 * 1) // 4, "b": (75 * 3 + 50 * 1 + 75 * 4) // 8}),
    ("least: a scalar resource the pod does not request is left out even where the node has it",
     [node("b", cpu="4", memory="4Gi").alloc(nvidia_gpu="4"), pod("p").req(cpu="1", memory="2Gi")],
     strategy("LeastAllocated", [("cpu", 1), ("memory", 1), (GPU, 5)]), {"b": (75 + 50) // 2}),
    ("least: ephemeral-storage uses actual requests, no default for a pod without one",
     [node("a", cpu="4", memory="4Gi").alloc(ephemeral_storage="10Gi"), pod("p")],
     strategy("LeastAllocated", [("ephemeral-storage", 1)]), {"a": 100}),
    ("least: 'pods' is not a resource the scorer accounts (always left out)",
     [node("a", cpu="4", memory="4Gi"), pod("p").req(cpu="1")],
     strategy("LeastAllocated", [("pods", 5), ("cpu", 1)]), {"a": 75}),
    ("least: nothing left to score is 0",
     [node("a"), pod("p")], strategy("LeastAllocated", [(GPU, 1)]), {"a": 0}),
    # MostAllocated
    ("most: requested share, weighted",
     [node("a", cpu="4", memory="4Gi"), pod("q").on("a").req(cpu="1", memory="0"),
      pod("p").req(cpu="1", memory="1Gi")],
     strategy("MostAllocated", [("cpu", 2), ("memory", 1)]), {"a": (50 * 2 + 25) // 3}),
    ("most: requested is capped at capacity (defaults can exceed it)",
     [node("a", cpu="100m", memory="8Gi"), pod("q").on("a"), pod("p").req(memory="4Gi")], MOST,
     {"a": (100 + (200 + 4096) * 100 // 8192) // 2}),
    ("most: an empty node with a tiny pod",
     [node("a", cpu="4", memory="8Gi"), pod("p").req(cpu="1m", memory="1")], MOST, {"a": 0}),
    # RequestedToCapacityRatio
    ("rtcr: integer-percent utilization through the shape scaled x10, rounded weighted mean",
     [node("a", cpu="3", memory="3Gi"), pod("p").req(cpu="1", memory="2Gi")],
     strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], [(0, 0), (100, 10)]),
     {"a": 50}),  # 33 and 66 -> (33 + 66) / 2 = 49.5 -> 50 (half away from zero)
    ("rtcr: a resource scoring 0 leaves the weight sum",
     [node("a", cpu="4", memory="4Gi").alloc(nvidia_gpu="4"), pod("q").on("a").req(cpu="0", memory="0").lim(nvidia_gpu="1"),
      pod("p").req(cpu="1m", memory="1").lim(nvidia_gpu="2")],
     strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1), (GPU, 3)], [(0, 0), (100, 10)]),
     {"a": 75}),  # cpu 0%, memory 0% -> score 0, dropped; gpu 75% -> 75
    ("rtcr: decreasing segment truncates toward zero like Go",
     [node("a", cpu="100", memory="100Gi"), pod("p").req(cpu="45", memory="45Gi")],
     strategy("RequestedToCapacityRatio", None, [(0, 0), (30, 7), (100, 2)]),
     {"a": 60}),  # 70 + (-50 * 15) / 70 = 70 - 10 (not -11)
    ("rtcr: requested over capacity counts as 100% utilization",
     [node("a", cpu="1", memory="1Gi"), pod("q").on("a").req(cpu="1", memory="0"),
      pod("p").req(cpu="500m", memory="512Mi")],
     strategy("RequestedToCapacityRatio", None, [(0, 10), (100, 0)]),
     {"a": 50}),  # cpu 150% -> 100 -> 0 (dropped), memory 50% -> 50
    ("rtcr: no resource scoring above 0 is 0",
     [node("a", cpu="1", memory="1Gi"), pod("p").req(cpu="1", memory="1Gi")],
     strategy("RequestedToCapacityRatio", None, [(0, 10), (100, 0)]), {"a": 0}),
]


@pytest.mark.parametrize(("objs", "profile", "want"), [c[1:] for c in SCORE_CASES],
                         ids=[c[0] for c in SCORE_CASES])
def test_score(objs, profile, want):
    assert scores(objs, profile) == want


# ---------------------------------------------- the Kubernetes docs' bin-packing example ("Resource Bin Packing")
DOCS_RTCR = strategy("RequestedToCapacityRatio", [("intel.com/foo", 5), ("memory", 1), ("cpu", 3)],
                     [(0, 0), (100, 10)])
DOCS_CLUSTER = [
    node("node1", cpu="8", memory="1Gi").alloc(**{"intel.com/foo": "4"}),
    pod("used1").on("node1").req(cpu="1", memory="256Mi").lim(**{"intel.com/foo": "1"}),
    node("node2", cpu="8", memory="1Gi").alloc(**{"intel.com/foo": "8"}),
    pod("used2").on("node2").req(cpu="6", memory="512Mi").lim(**{"intel.com/foo": "2"}),
    pod("p").req(cpu="2", memory="256Mi").lim(**{"intel.com/foo": "2"}),
]


def test_docs_example_utilizations():
    """The docs' per-resource utilizations: node 1 foo 75%, memory 50%, cpu 37(.5)%; node 2 50%, 75%, 100%."""
    snap = snapshot_of(*DOCS_CLUSTER)
    rule = NodeResourcesFitScore(snap, DOCS_RTCR)
    req, alloc = rule.scorer.inputs(np.arange(2), rule.scorer.pod_requests(snap.state.pod_index["default/p"]))
    assert (req * 100 // alloc).tolist() == [[75, 50, 37], [50, 75, 100]]


def test_docs_example_in_the_docs_0_to_10_scale():
    """The docs compute with the unscaled shape {{0, 0}, {100, 10}}: 7, 5, 3 -> 5 and 5, 7, 10 -> 7."""
    per = broken_linear([(0, 0), (100, 10)], np.array([[75, 50, 37], [50, 75, 100]]))
    assert per.tolist() == [[7, 5, 3], [5, 7, 10]]
    weights = np.array([5, 1, 3])
    assert go_round((per * weights).sum(axis=1) / weights.sum()).tolist() == [5, 7]


def test_docs_example_v1_35_scores():
    """v1.35 scales the shape by 10: node 1 (375 + 50 + 111) / 9 = 59.6 -> 60, node 2 (250 + 75 + 300) / 9 -> 69
    (the ``v2-requested-to-capacity-ratio`` trace records these numbers from kube-scheduler v1.35.4)."""
    assert scores(DOCS_CLUSTER, DOCS_RTCR) == {"node1": 60, "node2": 69}


# ---------------------------------------------------------------------------- pure helpers
def test_go_div_truncates_toward_zero():
    assert go_div(np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])).tolist() == [3, -3, -3, 3]


def test_go_round_halves_away_from_zero():
    assert go_round(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4999999999999996, 0.49999999999999994])).tolist() == \
        [1, 2, 3, -1, -3, 2, 0]


def test_broken_linear_outside_the_points():
    pts = [(20, 30), (80, 90)]
    assert broken_linear(pts, np.array([0, 20, 50, 80, 100])).tolist() == [30, 30, 60, 90, 90]


def test_strategies_on_raw_rows():
    req = np.array([[50, 0], [150, 10]])
    alloc = np.array([[100, 0], [100, 20]])
    w = np.array([1, 1])
    assert least_allocated(req, alloc, w).tolist() == [50, (0 + 50) // 2]
    assert most_allocated(req, alloc, w).tolist() == [50, (100 + 50) // 2]
    assert requested_to_capacity_ratio(req, alloc, w, [(0, 0), (100, 10)]).tolist() == [50, 75]


# ------------------------------------------------------------------ conformance with the traces
def _filter_problems(step, rule) -> list[str]:
    cs = step.cycle_state
    if "NodeResourcesFit" not in cs.profile.plugins.get("filter", ()):
        return []
    if rule.pre_filter(cs).code != Code.SUCCESS:
        return [f"cycle {step.index}: PreFilter rejected"]
    passed, fails = step.filter_expectation("NodeResourcesFit")
    rows = np.concatenate([passed, step.rows(list(fails))]).astype(np.int64)
    if len(rows) == 0:
        return []
    res = rule.filter(cs, rows)
    out = []
    for k, r in enumerate(rows):
        name = step.state.node_names[r]
        got = (Code(int(res.code[k])).label, res.reasons_of(k)) if res.code[k] else ("pass", [])
        want = (fails[name]["code"], sorted(fails[name]["reasons"])) if name in fails else ("pass", [])
        if (got[0], sorted(got[1])) != want:
            out.append(f"cycle {step.index} {step.cycle['pod']} on {name}: {got} != {want}")
    return out


def score_problems(step, rule) -> list[str]:
    """A score rule's skip decision and raw, normalized and weighted scores against one recorded cycle.

    Cycles with a single feasible node are not scored by kube-scheduler, but the trace still records
    what each plugin gives that node: those are checked too."""
    cyc, cs = step.cycle, step.cycle_state
    if not cyc.get("scores") or rule.name not in cs.profile.plugins.get("score", ()):
        return []
    feasible = step.feasible
    skipped = rule.pre_score(cs, feasible).code == Code.SKIP
    if skipped != (rule.name in (cyc.get("skippedScorePlugins") or [])):
        return [f"cycle {step.index} {cyc['pod']}: skip {skipped}"]
    if skipped:
        return []
    raw = rule.score(cs, feasible)
    norm = rule.normalize(cs, raw)
    weight = cs.profile.score_weights[rule.name]
    out = []
    for k, r in enumerate(feasible):
        e = cyc["scores"][step.state.node_names[r]]
        got = (int(raw[k]), int(norm[k]), int(norm[k]) * weight)
        want = (e["raw"].get(rule.name, 0), e["normalized"].get(rule.name, 0), e["plugins"].get(rule.name, 0))
        if got != want:
            out.append(f"cycle {step.index} {cyc['pod']} on {step.state.node_names[r]}: {got} != {want}")
    return out


@pytest.mark.parametrize("case", case_names())
def test_matches_every_recorded_cycle(case):
    problems: list[str] = []
    rules = None
    cycles = 0
    for step in replay(case):
        if rules is None:
            snap, profile = step.cycle_state.snapshot, step.cycle_state.profile
            rules = NodeResourcesFit(snap, profile), NodeResourcesFitScore(snap, profile)
        problems += _filter_problems(step, rules[0])
        problems += score_problems(step, rules[1])
        cycles += 1
    assert cycles > 0
    assert not problems, problems[:5]


def _random_cluster(seed: int) -> list[dict]:
    """Nodes of odd sizes, some overcommitted by their bound pods, pods with and without requests."""
    import random
    rng = random.Random(seed)
    objs: list[dict] = []
    for i in range(12):
        objs.append(node(f"n{i}", cpu=f"{rng.choice([500, 1000, 3000, 7900])}m", memory=f"{rng.choice([1, 3, 64])}Gi"))
        for k in range(rng.randint(0, 5)):
            p = pod(f"b{i}-{k}").on(f"n{i}")
            objs.append(p.req(cpu=f"{rng.choice([0, 100, 999, 4000])}m", memory=f"{rng.choice([0, 100, 2500])}Mi")
                        if rng.random() < 0.8 else p)
    for k in range(6):
        p = pod(f"p{k}")
        objs.append(p.req(cpu=f"{rng.choice([0, 1, 250, 3000])}m", memory=f"{rng.choice([0, 1, 300])}Mi")
                    if k else p)
    return objs


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind,resources", [("LeastAllocated", None), ("MostAllocated", None),
                                            ("LeastAllocated", [("memory", 3), ("cpu", 1)]),
                                            ("MostAllocated", [("cpu", 2), ("memory", 1), ("ephemeral-storage", 1)])])
def test_column_scorer_matches_the_matrix_scorer(seed, kind, resources):
    """When every configured resource counts on every node, the per-column path gives the strategy's
    scores over the (requested, allocatable) matrix, overcommitted nodes and pods without requests included."""
    objs = _random_cluster(seed)
    if resources and any(r == "ephemeral-storage" for r, _ in resources):
        for o in objs:
            if o["kind"] == "Node":
                o["status"]["allocatable"]["ephemeral-storage"] = "10Gi"
    snap = snapshot_of(*objs)
    profile = strategy(kind, resources)
    rule = NodeResourcesFitScore(snap, profile)
    assert rule.scorer.columns is not None
    nodes = np.array([3, 0, 7, 7, 11, 5])
    for name, p in snap.state.pod_index.items():
        if snap.node_of[p] >= 0:
            continue
        cycle = CycleState(p, snap, profile)
        rule.pre_score(cycle, nodes)
        want = rule.score_inputs(*rule.scorer.inputs(nodes, rule.scorer.pod_requests(p)))
        assert rule.score(cycle, nodes).tolist() == want.tolist(), name


def _fits_per_column(rule: NodeResourcesFit, p: int, nodes: np.ndarray, used: np.ndarray) -> list[tuple[int, list[str]]]:
    """``fitsRequest`` node by node and resource by resource: (code, reasons) per node."""
    state = rule.snapshot.state
    out = []
    for i, n in enumerate(nodes.tolist()):
        alloc, reasons, unresolvable = state.allocatable[n], [], False
        if used[i, rule.pods_col] + 1 > alloc[rule.pods_col]:
            reasons.append("Too many pods")
        for j, text in zip(rule.check_cols.tolist(), rule.reasons):
            need = state.pod_requests[p, j]
            if need > 0 and need > alloc[j] - used[i, j]:
                reasons.append(text)
                unresolvable |= bool(need > alloc[j])
        out.append((0 if not reasons else int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE),
                    reasons))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_fits_matches_a_per_node_check(seed):
    """``fits`` (all checked rows at once) gives each node the codes and reasons of a per-node, per-resource
    ``fitsRequest``: against the snapshot as pods come and go, and against given usage."""
    objs = _random_cluster(seed)
    for o in objs:
        if o["kind"] == "Node":
            o["status"]["allocatable"]["pods"] = str(seed % 3 + 1)
            o["status"]["allocatable"][GPU] = str(seed % 2)
    objs.append(pod("g").req(cpu="1m").lim(nvidia_gpu="1"))
    snap = snapshot_of(*objs)
    rule = NodeResourcesFit(snap, DEFAULT)
    nodes = np.array([3, 0, 7, 7, 11, 5, 1])
    pending = [p for p in snap.state.pod_index.values() if snap.node_of[p] < 0]
    rng = np.random.default_rng(seed)

    def check(p: int, used: np.ndarray | None) -> None:
        res = rule.fits(p, nodes, used)
        want = _fits_per_column(rule, p, nodes, snap.requested[nodes] if used is None else used)
        assert [(int(c), res.reasons_of(i)) for i, c in enumerate(res.code.tolist())] == want

    for step in range(8):
        for p in pending:
            check(p, None)
            check(p, np.maximum(snap.requested[nodes] - rng.integers(0, 2000, size=snap.requested[nodes].shape), 0))
        p = pending[step % len(pending)]
        if snap.node_of[p] >= 0:
            snap.remove(p)
        else:
            snap.add(p, int(rng.integers(0, 12)))
