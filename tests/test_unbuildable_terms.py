"""Terms kube-scheduler v1.35.4 cannot build: a ``Gt``/``Lt`` value that is no integer in node affinity,
a label selector ``metav1.LabelSelectorAsSelector`` rejects. A preferred term (or a soft spread
constraint) fails PreScore with an Error whenever two or more nodes pass the filters (the cycle places
the pod nowhere), a required term matches no node; optimal mode agrees; every such term draws an input
warning naming the file, the pod and the field."""
from __future__ import annotations

import json

import pytest
from builders import node, pod, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import optisched
from optisched.cli.input_warnings import input_warnings
from optisched.model.loader import cluster_from_objects, load_cluster
from optisched.model.state import compile_cluster
from optisched.profile import default_config

GT_MESSAGE = ('running PreScore plugin "NodeAffinity": [0].matchExpressions[0].values[0]: Invalid value: "1.5": '
              "for 'Gt', 'Lt' operators, the value must be an integer")
NOT_INTEGER = "Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer"
NA = ".spec.affinity.nodeAffinity"
BAD_SELECTOR = {"matchLabels": {"app": "a b"}}


def gt(value: str = "1.5") -> dict:
    return {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": [value]}]}


def preferring(p, value: str = "1.5"):  # type: ignore[no-untyped-def]
    return p.set("spec.affinity", {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": gt(value)}]}})


def nodes(n: int) -> list[dict]:
    return [node(f"n{i}").label(gen=str(i)) for i in range(1, n + 1)]


def both_modes(*objs: dict) -> tuple[dict, dict]:
    greedy = optisched.schedule(cluster_from_objects([dict(o) for o in objs]), requeue=False).placements()
    optimal = optisched.solve(cluster_from_objects([dict(o) for o in objs]), time_limit=10).placements()
    return greedy, optimal


def test_a_preferred_gt_that_is_no_integer_fails_the_cycle_in_both_modes():
    p = preferring(pod("p"))
    result = optisched.schedule(cluster_from_objects([*nodes(2), p]), requeue=False)
    assert result.cycles[0].message == GT_MESSAGE and result.cycles[0].preemption is None
    greedy, optimal = both_modes(*nodes(2), p)
    assert greedy["default/p"] is None and optimal["default/p"] is None


def test_the_optimal_explanation_names_the_prescore_error():
    res = optisched.solve(cluster_from_objects([*nodes(3), preferring(pod("p"))]), time_limit=10)
    (why,) = res.explanations
    assert why.kind == "excluded" and why.rules == {"NodeAffinity PreScore": 3}


def test_with_one_feasible_node_scoring_is_skipped_and_both_modes_place_it():
    p = preferring(pod("p")).set("spec.nodeSelector", {"gen": "2"})
    assert both_modes(*nodes(3), p) == ({"default/p": "n2"}, {"default/p": "n2"})


def test_an_integer_value_is_scored_as_usual():
    greedy, optimal = both_modes(*nodes(3), preferring(pod("p"), "1"))
    assert greedy["default/p"] in ("n2", "n3") and optimal["default/p"] in ("n2", "n3")


def test_a_required_term_with_such_a_value_matches_no_node_while_the_other_terms_count():
    terms = [gt(), {"matchExpressions": [{"key": "gen", "operator": "In", "values": ["3"]}]}]
    p = pod("p").set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}})
    assert both_modes(*nodes(3), p) == ({"default/p": "n3"}, {"default/p": "n3"})
    alone = pod("q").set("spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [gt()]}}})
    result = optisched.schedule(cluster_from_objects([*nodes(3), alone]), requeue=False)
    assert result.placements()["default/q"] is None
    assert result.cycles[0].message.startswith("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity")


def test_a_soft_spread_constraint_with_a_bad_selector_is_placed_by_neither_mode():
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
              "labelSelector": BAD_SELECTOR}
    greedy, optimal = both_modes(*nodes(2), pod("p").set("spec.topologySpreadConstraints", [spread]))
    assert greedy["default/p"] is None and optimal["default/p"] is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zones=st.lists(st.sampled_from("ab"), min_size=1, max_size=4), pinned=st.booleans(),
       fits=st.lists(st.booleans(), min_size=4, max_size=4))
def test_optimal_places_such_a_pod_exactly_when_greedy_does(zones, pinned, fits):
    """On a cluster whose nodes hold nothing, the nodes passing the filters are those passing the static
    rules: both modes place the pod exactly when one node alone passes."""
    objs = [node(f"n{i}", cpu="4" if fits[i] else "500m").label(zone=z) for i, z in enumerate(zones)]
    p = preferring(pod("p").req(cpu="1"))
    if pinned:
        p = p.set("spec.nodeSelector", {"zone": "a"})
    greedy, optimal = both_modes(*objs, p)
    passing = [f"n{i}" for i, z in enumerate(zones) if fits[i] and (z == "a" or not pinned)]
    assert greedy["default/p"] == optimal["default/p"] == (passing[0] if len(passing) == 1 else None)


SPREAD_HARD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": BAD_SELECTOR}
WARNED = [
    ("a preferred node-affinity term", {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": gt()}]}}},
     (f"{NA}.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: "
     f"{NOT_INTEGER}: kube-scheduler's NodeAffinity PreScore fails")),
    ("a required node-affinity term", {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [gt()]}}}},
     (f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: "
     f"{NOT_INTEGER}: kube-scheduler cannot build the term, which matches no node")),
    ("a hard spread constraint's selector", {"topologySpreadConstraints": [SPREAD_HARD]},
     ".spec.topologySpreadConstraints[0].labelSelector: values[0][app]: Invalid value: \"a b\""),
    ("a soft spread constraint's selector",
     {"topologySpreadConstraints": [{**SPREAD_HARD, "whenUnsatisfiable": "ScheduleAnyway"}]},
     "kube-scheduler's PodTopologySpread PreScore fails"),
    ("a pod anti-affinity term's namespace selector", {"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {
            "topologyKey": "zone", "namespaceSelector": BAD_SELECTOR}}]}}},
     (".spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
     ".namespaceSelector: values[0][app]: Invalid value")),
]


@pytest.mark.parametrize("spec,expected", [w[1:] for w in WARNED], ids=[w[0] for w in WARNED])
def test_each_unbuildable_term_draws_a_warning_naming_file_pod_and_field(tmp_path, spec, expected):
    pods = tmp_path / "pods.yaml"
    p = pod("p", "shop")
    p["spec"].update(spec)
    pods.write_text(json.dumps(p))
    (tmp_path / "nodes.yaml").write_text(json.dumps(nodes(2)))
    state = compile_cluster(load_cluster([str(tmp_path / "nodes.yaml"), str(pods)]))
    warned = [w for w in input_warnings(state, default_config()) if "Pod/shop/p" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{pods}: Pod/shop/p .spec.") and expected in warned[0]


def test_the_replicas_of_a_workload_share_one_warning():
    pods = [preferring(pod(f"web-{i}")) for i in range(7)]
    state = compile_cluster(cluster_from_objects([*nodes(2), *pods, preferring(pod("other"), "2.5")]))
    warned = input_warnings(state, default_config())
    assert len(warned) == 2
    assert warned[0].startswith("<objects>: Pod/default/web-0, Pod/default/web-1, Pod/default/web-2, "
                                "Pod/default/web-3, Pod/default/web-4 and 2 more pods .spec.affinity")
    assert warned[1].startswith("<objects>: Pod/default/other .spec.affinity") and '"2.5"' in warned[1]


def test_a_pod_without_such_terms_draws_no_warning():
    state = compile_cluster(cluster_from_objects([*nodes(2), preferring(pod("p"), "1")]))
    assert input_warnings(state, default_config()) == []


@pytest.mark.parametrize("mode", [[], ["--mode", "optimal", "--time-limit", "5"]], ids=["greedy", "optimal"])
def test_the_command_prints_the_warning(tmp_path, capsys, mode):
    f = tmp_path / "cluster.yaml"
    f.write_text(json.dumps([*nodes(2), preferring(pod("p"))]))
    code, out, err = run_cli(["schedule", str(f), *mode], capsys)
    assert code == 0 and "default/p" in out
    assert f"warning: {f}: Pod/default/p {NA}.preferredDuringSchedulingIgnoredDuringExecution[0]" in err
