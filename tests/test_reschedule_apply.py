"""``--apply`` against a local HTTP server that speaks the pods list, the eviction subresource and a
node's GET and PATCH (:mod:`helpers.fake_api`; no API server can run here): 429 then 200, 500, a
replacement landing elsewhere, which stops the run, and the nodes cordoned and marked before the first
eviction and uncordoned, their marks removed, after the plan or a stop."""
from __future__ import annotations

import copy
import importlib.util
import re

import pytest
import yaml
from conftest import require
from helpers.fake_api import EXAMPLE, FakeCluster, Servers, kubeconfig, landings

import optisched
from optisched.reschedule.apply import apply_plan

# An empty node the consolidation keeps empty: the plan holds it cordoned while it runs.
N4 = {"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "n4", "labels": {"kubernetes.io/hostname": "n4", "optisched.io/hourly-cost": "0.4"}},
      "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
STRATEGIC = "application/strategic-merge-patch+json"
MARKS = ("optisched.io/cordoned-by", "optisched.io/cordoned-at", "optisched.io/cordoned-for")


def cordon_body(plan, why: str = "emptied") -> dict:  # type: ignore[no-untyped-def]
    """kubectl cordon's patch (``spec.unschedulable: true``) with the run's mark."""
    return {"spec": {"unschedulable": True}, "metadata": {"annotations": {
        "optisched.io/cordoned-by": plan.plan_id, "optisched.io/cordoned-at": ANY_TIME, "optisched.io/cordoned-for": why}}}


class _AnyTime(str):
    """Equal to any RFC 3339 UTC time (the mark's time of cordoning)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", other) is not None

    __hash__ = str.__hash__


ANY_TIME = _AnyTime("<time>")
# kubectl uncordon's patch (the field is omitempty: null drops it) and the mark's removal
UNCORDON = {"metadata": {"annotations": dict.fromkeys(MARKS)}, "spec": {"unschedulable": None}}


@pytest.fixture(autouse=True)
def _kubernetes_client() -> None:
    """The real client talks to the fake server: skips without the kube extra (fails under OPTISCHED_REQUIRE_ALL)."""
    require(importlib.util.find_spec("kubernetes") is not None,
            "the kube extra (pip install -e '.[kube]') talks to live clusters")


@pytest.fixture
def serve():  # type: ignore[no-untyped-def]
    servers = Servers()

    def start(cluster: FakeCluster):  # type: ignore[no-untyped-def]
        api = servers.start(cluster)
        start.host = servers.host  # type: ignore[attr-defined]
        return api

    yield start
    servers.close()


@pytest.fixture(scope="module")
def plan():  # type: ignore[no-untyped-def]
    return optisched.reschedule(optisched.load([str(EXAMPLE)]), goal="consolidate", time_limit=5)


def test_a_429_is_retried_until_the_budget_allows_it(plan, serve):
    cluster = FakeCluster({"web-31": [429, 429]}, landings(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.stopped is None and report.waves_done == 1
    assert sorted(report.evicted) == ["default/web-31", "default/web-32"]
    assert cluster.posts.count("web-31") == 3


def test_a_500_is_reported_and_skipped(plan, serve):
    cluster = FakeCluster({"web-32": [500]}, landings(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.evicted == ["default/web-31"] and report.skipped[0][0] == "default/web-32"
    assert report.stopped is None and "default/web-32" in cluster.pods
    assert report.uncordoned == ["n3"] and cluster.unschedulable() == []  # n3 holds web-32 still: not emptied


def test_a_replacement_landing_elsewhere_stops_the_run(plan, serve):
    lands = landings(plan) | {"web-31": "n3"}
    report = apply_plan(plan, serve(FakeCluster({}, lands)), sleep=lambda s: None, poll=0.01)
    assert report.stopped is not None and "landed on" in report.stopped and "'n3'" in report.stopped
    assert report.waves_done == 0


def test_a_budget_that_never_allows_it_stops_at_the_deadline(plan, serve):
    cluster = FakeCluster({"web-31": [429] * 100_000}, landings(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, retry_for=0.2)
    assert report.stopped is not None and "429" in report.stopped and report.evicted == []


def test_the_command_reads_the_cluster_plans_and_applies_it(serve, tmp_path, capsys):
    """End to end through the kubeconfig: a live read of the fake server, the plan, then --apply."""
    from builders import run_cli

    cluster = FakeCluster({"web-31": [429]}, {"web-31": "n1", "web-32": "n2"})
    serve(cluster)
    code, out, err = run_cli(["reschedule", "--kubeconfig", kubeconfig(tmp_path, serve.host), "--apply",
                              "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "replacements predicted on target: 2/2" in out and "applied 1 wave(s), 2 eviction(s)" in out
    assert {"default/web-31-r", "default/web-32-r"} <= set(cluster.pods)
    assert cluster.log[0] == ("PATCH", "n3") and "cordoned n3" in out and cluster.unschedulable() == ["n3"]
    plan_id = re.search(r"^plan: ([0-9a-f]{12})$", out, re.MULTILINE).group(1)
    assert cluster.annotations("n3")["optisched.io/cordoned-by"] == plan_id and f"plan {plan_id}: applied" in out


def test_without_apply_the_command_changes_nothing(serve, tmp_path, capsys):
    """The dry run reads the cluster and plans: no node is patched, no pod evicted."""
    from builders import run_cli

    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"})
    serve(cluster)
    code, out, err = run_cli(["reschedule", "--kubeconfig", kubeconfig(tmp_path, serve.host),
                              "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "cordon first: n3" in out and cluster.log == [] and cluster.unschedulable() == []


def test_a_detour_evicts_the_replacement_of_its_first_leg(plan, serve):
    """A pod moved twice (a detour's two legs) is evicted the second time under its replacement's name."""
    from optisched.reschedule.waves import Move, Wave

    detour = copy.deepcopy(plan)
    first = next(m for w in detour.staging.waves for m in w.moves if m.key == "default/web-31")
    onward = "n2" if first.predicted != "n2" else "n1"
    detour.staging.waves.append(Wave([Move(first.pod, first.key, first.predicted, onward, "detour (2 of 2)",
                                           onward)], {}))
    cluster = FakeCluster({}, landings(plan) | {"web-31-r": onward})
    report = apply_plan(detour, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.stopped is None and report.waves_done == 2
    assert cluster.posts[-1] == "web-31-r" and cluster.pods["default/web-31-r-r"]["spec"]["nodeName"] == onward


@pytest.fixture(scope="module")
def held_plan(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The example with an empty node n4 the consolidation keeps empty: n3 cordoned, n4 held."""
    extra = tmp_path_factory.mktemp("held") / "n4.yaml"
    extra.write_text(yaml.safe_dump(N4))
    plan = optisched.reschedule(optisched.load([str(EXAMPLE), str(extra)]), goal="consolidate", time_limit=5)
    assert plan.staging.cordoned == ["n3"] and plan.staging.held == ["n4"]
    return plan


def _run(plan, cluster, serve, **kw):  # type: ignore[no-untyped-def]
    return apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01, **kw)


def test_the_nodes_a_plan_empties_are_cordoned_before_the_first_eviction(plan, serve):
    cluster = FakeCluster({}, landings(plan))
    report = _run(plan, cluster, serve)
    assert report.stopped is None and not report.failed
    assert cluster.log == [("PATCH", "n3"), ("POST", "web-31"), ("POST", "web-32")]
    assert cluster.patches == [("n3", cordon_body(plan), STRATEGIC)]
    assert cluster.annotations("n3")["optisched.io/cordoned-for"] == "emptied"
    assert cluster.unschedulable() == ["n3"] and report.cordoned == ["n3"] and report.uncordoned == []
    assert "cordoned n3" in report.lines() and "left cordoned: n3 (emptied, for an autoscaler to remove)" \
        in report.lines()


def test_held_nodes_are_uncordoned_after_the_last_wave(held_plan, serve):
    cluster = FakeCluster({}, landings(held_plan), extra=(N4,))
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.waves_done == 1
    assert cluster.log == [("PATCH", "n3"), ("PATCH", "n4"), ("POST", "web-31"), ("POST", "web-32"),
                           ("PATCH", "n4")]
    assert cluster.patches[1] == ("n4", cordon_body(held_plan, "held"), STRATEGIC)
    assert cluster.patches[-1] == ("n4", UNCORDON, STRATEGIC)
    assert cluster.unschedulable() == ["n3"] and report.uncordoned == ["n4"] and report.left_cordoned == ["n3"]
    assert "uncordoned n4" in report.lines()
    assert cluster.annotations("n4") == {} and cluster.annotations("n3")["optisched.io/cordoned-by"] == held_plan.plan_id


@pytest.mark.parametrize("answers, lands, list_answers, why", [
    pytest.param({"web-31": [429] * 100_000}, {}, [], "429", id="a budget that never allows it"),
    pytest.param({}, {"web-31": "n3"}, [], "landed on", id="a replacement landing elsewhere"),
    pytest.param({"web-31": [403]}, {}, [], "eviction answered 403", id="an eviction refused"),
    pytest.param({}, {}, [200, 500], "the API server answered 500", id="the pods list failing"),
])
def test_a_stop_uncordons_the_held_nodes_and_the_emptied_ones_still_holding_pods(held_plan, serve, answers, lands,
                                                                                 list_answers, why):
    cluster = FakeCluster(answers, landings(held_plan) | lands, extra=(N4,), list_answers=list_answers)
    report = _run(held_plan, cluster, serve, retry_for=0.2)
    assert report.stopped is not None and why in report.stopped and report.failed
    assert cluster.log[-2:] == [("PATCH", "n4"), ("PATCH", "n3")]
    assert cluster.patches[-1] == ("n3", UNCORDON, STRATEGIC) and cluster.patches[-2] == ("n4", UNCORDON, STRATEGIC)
    assert cluster.unschedulable() == [] and report.uncordoned == ["n4", "n3"] and report.left_cordoned == []
    assert cluster.annotations("n3") == cluster.annotations("n4") == {}


def test_a_stop_keeps_an_emptied_node_cordoned_once_it_is_empty(held_plan, serve):
    """Both replacements land on n2 (n1 predicted for one): the run stops after the wave, n3 holds only
    its DaemonSet pod, so it stays cordoned and marked, for an autoscaler."""
    lands = landings(held_plan)
    cluster = FakeCluster({}, dict.fromkeys(lands, "n2"), extra=(N4,))
    assert set(lands.values()) == {"n1", "n2"}
    report = _run(held_plan, cluster, serve)
    assert report.stopped is not None and "landed on" in report.stopped
    assert cluster.unschedulable() == ["n3"] and report.uncordoned == ["n4"] and report.left_cordoned == ["n3"]
    assert cluster.annotations("n3")["optisched.io/cordoned-by"] == held_plan.plan_id
    assert "left cordoned: n3 (emptied, for an autoscaler to remove)" in report.lines()


@pytest.mark.parametrize("already, patched", [
    pytest.param(["n4"], [("n3", "emptied")], id="a held node the user cordoned stays cordoned"),
    pytest.param(["n3"], [("n4", "held"), ("n4", None)], id="an emptied node cordoned already is left alone"),
    pytest.param(["n3", "n4"], [], id="nothing is patched when every node is cordoned already"),
])
def test_a_node_unschedulable_already_is_neither_patched_nor_uncordoned(held_plan, serve, already, patched):
    cluster = FakeCluster({}, landings(held_plan), extra=(N4,))
    for name in already:
        cluster.node(name).setdefault("spec", {})["unschedulable"] = True
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.found_cordoned == already
    assert [(n, body) for n, body, _ in cluster.patches] == [
        (n, cordon_body(held_plan, why) if why else UNCORDON) for n, why in patched]
    assert sorted(cluster.unschedulable()) == sorted(set(already) | {"n3"})
    assert all(cluster.annotations(n) == {} for n in already)


@pytest.mark.parametrize("failing, undone", [
    pytest.param("n3", [], id="the first node failing cordons nothing"),
    pytest.param("n4", ["n3"], id="a later node failing uncordons the ones before it"),
])
def test_a_node_that_cannot_be_cordoned_stops_the_run_before_any_eviction(held_plan, serve, failing, undone):
    cluster = FakeCluster({}, landings(held_plan), extra=(N4,), node_answers={failing: [500]})
    report = _run(held_plan, cluster, serve)
    assert report.stopped == f"cannot cordon node {failing}: the patch answered 500 Internal Server Error"
    assert cluster.posts == [] and report.evicted == [] and report.waves_done == 0
    assert report.uncordoned == undone and report.left_cordoned == [] and cluster.unschedulable() == []


def test_a_held_node_that_cannot_be_uncordoned_is_reported(held_plan, serve):
    cluster = FakeCluster({}, landings(held_plan), extra=(N4,), node_answers={"n4": [200, 500]})
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.waves_done == 1 and report.failed
    assert report.uncordon_failed == [("n4", "cannot uncordon node n4: the patch answered 500 Internal Server Error")]
    assert any(line.startswith("cannot uncordon node n4") and
               f"optisched reschedule --undo-cordons --plan {held_plan.plan_id}" in line for line in report.lines())
    assert cluster.unschedulable() == ["n3", "n4"]


def test_a_cordon_the_user_makes_between_the_read_and_the_patch_is_never_marked(plan, serve):
    """The cordon's patch carries the resourceVersion it read, a precondition: the user's cordon landing in
    between makes it fail (409) instead of marking the user's cordon, and the run stops before any eviction."""
    cluster = FakeCluster({}, landings(plan))
    cluster.node("n3")["metadata"]["resourceVersion"] = "7"

    def user_cordons(name: str) -> None:
        node = cluster.node(name)
        if name == "n3" and not node.get("spec", {}).get("unschedulable"):
            node["spec"] = {"unschedulable": True}
            node["metadata"]["resourceVersion"] = "8"

    cluster.on_read = user_cordons
    report = _run(plan, cluster, serve)
    assert report.stopped == "cannot cordon node n3: the patch answered 409 Conflict"
    assert cluster.patches[0][1]["metadata"]["resourceVersion"] == "7" and cluster.posts == []
    assert cluster.unschedulable() == ["n3"] and cluster.annotations("n3") == {} and report.uncordoned == []


def test_the_run_uncordons_only_the_node_as_it_marked_it(held_plan, serve):
    """Each patch names the resourceVersion read just before it: cordoning n4 bumps it, and the uncordon
    after the last wave names the bumped one."""
    cluster = FakeCluster({}, landings(held_plan), extra=(N4,))
    cluster.node("n4")["metadata"]["resourceVersion"] = "3"
    report = _run(held_plan, cluster, serve)
    assert report.uncordoned == ["n4"] and cluster.node("n4")["metadata"]["resourceVersion"] == "5"
    assert [body["metadata"]["resourceVersion"] for name, body, _ in cluster.patches if name == "n4"] == ["3", "4"]
