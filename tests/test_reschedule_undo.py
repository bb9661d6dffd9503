"""``--apply`` can always be undone: the marks it leaves on the nodes it cordons, an earlier run's marks
reported by the next, the pods read again before each wave, Ctrl-C, and ``--undo-cordons`` after a run
killed at its worst moments, all against the local fake API server (:mod:`helpers.fake_api`)."""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from builders import run_cli
from conftest import require
from helpers.fake_api import EXAMPLE, FakeCluster, Servers, kubeconfig, landings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import optisched
from optisched import interrupt

BY, AT, FOR = "optisched.io/cordoned-by", "optisched.io/cordoned-at", "optisched.io/cordoned-for"
ROOT = Path(__file__).resolve().parents[1]
N4 = {"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "n4", "labels": {"kubernetes.io/hostname": "n4", "optisched.io/hourly-cost": "0.4"}},
      "spec": {"unschedulable": True}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
PDBS = "/apis/policy/v1/poddisruptionbudgets"


@pytest.fixture(autouse=True)
def _kubernetes_client() -> None:
    """The real client talks to the fake server: skips without the kube extra (fails under OPTISCHED_REQUIRE_ALL)."""
    require(importlib.util.find_spec("kubernetes") is not None,
            "the kube extra (pip install -e '.[kube]') talks to live clusters")


@pytest.fixture
def servers():  # type: ignore[no-untyped-def]
    s = Servers()
    yield s
    s.close()


@pytest.fixture(scope="module")
def plan():  # type: ignore[no-untyped-def]
    return optisched.reschedule(optisched.load([str(EXAMPLE)]), goal="consolidate", time_limit=5)


def _mark(cluster: FakeCluster, name: str, plan_id: str, why: str = "emptied", cordoned: bool = True) -> None:
    node = cluster.node(name)
    node["metadata"]["annotations"] = {BY: plan_id, AT: "2026-01-01T00:00:00Z", FOR: why}
    if cordoned:
        node.setdefault("spec", {})["unschedulable"] = True


def _apply(plan, cluster: FakeCluster, servers: Servers, **kw):  # type: ignore[no-untyped-def]
    from optisched.reschedule.apply import apply_plan

    return apply_plan(plan, servers.start(cluster), **({"sleep": lambda s: None, "poll": 0.01} | kw))


def _stranger(node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stranger", "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x:1"}]}, "status": {"phase": "Running"}}


# --- an earlier run's marks ---------------------------------------------------------------------------

def test_an_earlier_runs_mark_on_a_node_of_the_plan_refuses_it_before_any_change(plan, servers):
    cluster = FakeCluster({}, landings(plan))
    _mark(cluster, "n3", "0123456789ab")
    report = _apply(plan, cluster, servers)
    assert report.failed and report.refused == ["n3"] and cluster.log == []
    assert report.lines() == [("nodes cordoned by an earlier optisched run (plan 0123456789ab at 2026-01-01T00:00:00Z): "
                               "n3 - run optisched reschedule --undo-cordons to restore them (nodes of this plan "
                               "among them: n3; nothing was changed)")]


def test_an_earlier_runs_marks_elsewhere_are_reported_and_the_run_goes_on(plan, servers):
    n5 = copy.deepcopy(N4) | {"metadata": {"name": "n5", "labels": {"kubernetes.io/hostname": "n5"}}}
    cluster = FakeCluster({}, landings(plan), extra=(n5,))
    _mark(cluster, "n5", "0123456789ab", "held")
    report = _apply(plan, cluster, servers)
    assert not report.failed and report.waves_done == 1 and report.refused == []
    assert report.lines()[0].startswith("nodes cordoned by an earlier optisched run (plan 0123456789ab at ")
    assert "n5" not in {name for name, _ in cluster.log} and cluster.annotations("n5")[BY] == "0123456789ab"


@pytest.mark.parametrize("why, refused", [
    pytest.param("held", ["n4"], id="a held node, which --undo-cordons uncordons, refuses the plan"),
    pytest.param("emptied", [], id="an empty emptied node, which --undo-cordons keeps cordoned, does not"),
])
def test_an_earlier_runs_mark_refuses_the_plan_only_where_undo_would_restore_the_node(tmp_path, servers, why,
                                                                                      refused):
    """A plan made with n4 empty and cordoned holds it cordoned: n4 is among its nodes. After
    --undo-cordons kept an emptied n4 cordoned, the next run must not stop on it again."""
    extra = tmp_path / "n4.yaml"
    extra.write_text(yaml.safe_dump(N4))
    plan = optisched.reschedule(optisched.load([str(EXAMPLE), str(extra)]), goal="consolidate", time_limit=5)
    assert "n4" in plan.staging.held
    cluster = FakeCluster({}, landings(plan), extra=(N4,))
    _mark(cluster, "n4", "0123456789ab", why)
    report = _apply(plan, cluster, servers)
    assert report.refused == refused and report.earlier is not None and "n4" in report.earlier
    assert "n4" not in {name for name, _, _ in cluster.patches} and cluster.annotations("n4")[BY] == "0123456789ab"
    assert (cluster.log == []) == bool(refused) and (report.waves_done == 1) == (not refused)


# --- the pods read again before each wave ------------------------------------------------------------

def _bound(cluster: FakeCluster) -> dict[str, str]:
    return {k: p["spec"]["nodeName"] for k, p in cluster.pods.items()}


@pytest.mark.parametrize("change, why", [
    pytest.param(lambda c: c.pods.update({"default/stranger": _stranger("n1")}),
                 "a pod the plan does not expect appeared on n1: default/stranger", id="a pod bound since onto a target"),
    pytest.param(lambda c: c.pods.pop("default/web-11"), "default/web-11, expected on n1, is gone",
                 id="a pod of a target gone"),
    pytest.param(lambda c: c.pods["default/web-31"]["spec"].update(nodeName="n2"),
                 "default/web-31, to be evicted from n3, is on n2 now", id="a pod to evict moved"),
])
def test_a_cluster_that_changed_since_the_plan_stops_the_run_before_the_first_eviction(plan, servers, change, why):
    cluster = FakeCluster({}, landings(plan))
    expected = _bound(cluster)  # the cluster the plan was made from
    assert {"n1", "n2", "n3"} == {m.predicted for w in plan.staging.waves for m in w.moves} | {"n3"}
    change(cluster)
    report = _apply(plan, cluster, servers, expected=expected)
    assert report.stopped == f"before wave 1: {why}" and cluster.posts == []
    assert report.cordoned == ["n3"] and report.uncordoned == ["n3"] and cluster.unschedulable() == []
    assert cluster.annotations("n3") == {}


def _taint(cluster: FakeCluster, node: str) -> None:
    cluster.node(node).setdefault("spec", {})["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]


def _resize(cluster: FakeCluster, pod: str) -> None:
    cluster.pods[pod]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"


N5 = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n5", "labels": {"kubernetes.io/hostname": "n5"}},
      "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


@pytest.mark.parametrize("change, why", [
    pytest.param(lambda c: _resize(c, "default/web-11"), "default/web-11 on n1 requests cpu=2000, memory=1073741824 "
                 "now, not cpu=1000, memory=1073741824", id="a pod of a target resized in place"),
    pytest.param(lambda c: _taint(c, "n1"), "node n1 changed its taints since the plan", id="a target tainted"),
    pytest.param(lambda c: c.node("n2")["spec"].update(unschedulable=True) if "spec" in c.node("n2") else
                 c.node("n2").update(spec={"unschedulable": True}),
                 "node n2 changed its unschedulable since the plan", id="a target cordoned by its user"),
    pytest.param(lambda c: c.node("n2")["metadata"]["labels"].update(zone="b"), "node n2 changed its labels since the plan",
                 id="a node relabelled"),
    pytest.param(lambda c: c.nodes.append(copy.deepcopy(N5)), "node n5 appeared", id="a node added"),
])
def test_a_node_or_a_resize_the_replays_did_not_see_stops_the_run_before_the_first_eviction(plan, servers, change, why):
    """The first wave is checked against the cluster the plan was made from, its requests and nodes
    included (:func:`optisched.reschedule.recheck.placement`); the node the run cordons is no change."""
    from optisched.model.state import compile_cluster
    from optisched.reschedule.recheck import placement

    cluster = FakeCluster({}, landings(plan))
    expected = placement(compile_cluster(optisched.load([str(EXAMPLE)])))
    assert _apply(plan, FakeCluster({}, landings(plan)), servers, expected=expected).waves_done == 1  # unchanged: runs
    change(cluster)
    report = _apply(plan, cluster, servers, expected=expected)
    assert report.stopped == f"before wave 1: {why}" and cluster.posts == []
    assert report.uncordoned == ["n3"] and cluster.unschedulable() == (["n2"] if "unschedulable" in why else [])


def test_a_node_tainted_while_a_wave_runs_stops_the_next(plan, servers):
    from optisched.reschedule.waves import Move, Wave

    detour = copy.deepcopy(plan)
    first = next(m for w in detour.staging.waves for m in w.moves if m.key == "default/web-31")
    onward = "n2" if first.predicted != "n2" else "n1"
    detour.staging.waves.append(Wave([Move(first.pod, first.key, first.predicted, onward, "detour (2 of 2)",
                                           onward)], {}))
    cluster = FakeCluster({}, landings(plan) | {"web-31-r": onward})
    # pod lists: 0 before wave 1, 1 its replacements (the taint comes while they are awaited), 2 before wave 2
    cluster.on_list = lambda i: _taint(cluster, onward) if i == 1 else None
    report = _apply(detour, cluster, servers, expected=_bound(cluster))
    assert report.stopped == f"before wave 2: node {onward} changed its taints since the plan"
    assert report.waves_done == 1 and cluster.posts == ["web-31", "web-32"]


def test_the_pods_are_read_again_before_every_wave(plan, servers):
    """A two-wave plan (a detour's second leg); a pod lands on the second leg's node after the first wave
    was checked: the second wave is not started, and n3, emptied by the first, stays cordoned."""
    from optisched.reschedule.waves import Move, Wave

    detour = copy.deepcopy(plan)
    first = next(m for w in detour.staging.waves for m in w.moves if m.key == "default/web-31")
    onward = "n2" if first.predicted != "n2" else "n1"
    detour.staging.waves.append(Wave([Move(first.pod, first.key, first.predicted, onward, "detour (2 of 2)",
                                           onward)], {}))
    cluster = FakeCluster({}, landings(plan) | {"web-31-r": onward})
    expected = _bound(cluster)
    # pod lists: 0 before wave 1, 1 its replacements, 2 before wave 2
    cluster.on_list = lambda i: cluster.pods.update({"default/stranger": _stranger(onward)}) if i == 2 else None
    report = _apply(detour, cluster, servers, expected=expected)
    assert report.stopped == f"before wave 2: a pod the plan does not expect appeared on {onward}: default/stranger"
    assert report.waves_done == 1 and cluster.posts == ["web-31", "web-32"]
    assert cluster.unschedulable() == ["n3"] and report.left_cordoned == ["n3"]


def test_the_command_compares_the_first_wave_with_the_cluster_it_read(servers, tmp_path, capsys):
    """A pod bound to a predicted landing while the command plans (after its live read, pod list 0, and
    before the first wave's re-read, pod list 1) stops the run before any eviction, exit status 1."""
    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"})
    cluster.on_list = lambda i: cluster.pods.update({"default/stranger": _stranger("n1")}) if i == 1 else None
    servers.start(cluster)
    code, out, _ = run_cli(["reschedule", "--kubeconfig", kubeconfig(tmp_path, servers.host), "--apply",
                            "--time-limit", "5"], capsys)
    assert code == 1 and "stopped: before wave 1: a pod the plan does not expect appeared on n1: default/stranger" in out
    assert cluster.posts == [] and cluster.unschedulable() == [] and cluster.annotations("n3") == {}


def test_an_interrupt_stops_the_evictions_and_uncordons_the_nodes_still_holding_pods(plan, servers):
    """Ctrl-C while a budget holds the first eviction back: no eviction at all, n3 uncordoned."""
    def press(seconds: float) -> None:
        interrupt._requested.set()

    cluster = FakeCluster({"web-31": [429]}, landings(plan))
    try:
        report = _apply(plan, cluster, servers, sleep=press)
    finally:
        interrupt.reset()
    assert report.stopped is not None and report.stopped.endswith("interrupted (Ctrl-C or SIGTERM)")
    assert cluster.posts == ["web-31"] and report.evicted == [] and cluster.unschedulable() == []


# --- --undo-cordons ----------------------------------------------------------------------------------

def _undo_cluster() -> FakeCluster:
    """n1 cordoned by plan a (holds pods), n2 cordoned by the user, n3 emptied by plan a (empty now), n4
    held by plan b (empty), n5 uncordoned by hand after plan a marked it."""
    n5 = copy.deepcopy(N4) | {"metadata": {"name": "n5", "labels": {}}, "spec": {}}
    cluster = FakeCluster({}, {}, extra=(copy.deepcopy(N4) | {"spec": {}}, n5))
    for key in ("default/web-31", "default/web-32"):
        del cluster.pods[key]
    _mark(cluster, "n1", "aaaaaaaaaaaa")
    cluster.node("n2")["spec"] = {"unschedulable": True}
    _mark(cluster, "n3", "aaaaaaaaaaaa")
    _mark(cluster, "n4", "bbbbbbbbbbbb", "held")
    _mark(cluster, "n5", "aaaaaaaaaaaa", cordoned=False)
    return cluster


@pytest.mark.parametrize("flags, uncordoned, unmarked, kept", [
    pytest.param([], ["n1", "n4"], ["n5"], ["n3"], id="the marked nodes holding pods and the held ones"),
    pytest.param(["--plan", "aaaaaaaaaaaa"], ["n1"], ["n5"], ["n3"], id="one plan's only"),
    pytest.param(["--all"], ["n1", "n3", "n4"], ["n5"], [], id="with --all the empty ones too"),
    pytest.param(["--plan", "cccccccccccc"], [], [], [], id="a plan that marked nothing"),
])
def test_undo_restores_the_marked_nodes_and_touches_no_other(servers, tmp_path, capsys, flags, uncordoned,
                                                             unmarked, kept):
    cluster = _undo_cluster()
    servers.start(cluster)
    before = copy.deepcopy(cluster.nodes)
    code, out, err = run_cli(["reschedule", "--undo-cordons", "--kubeconfig", kubeconfig(tmp_path, servers.host),
                              *flags], capsys)
    assert code == 0, err
    patched = sorted({name for name, _, _ in cluster.patches})
    assert patched == sorted(uncordoned + unmarked) and "n2" not in patched
    assert sorted(cluster.unschedulable()) == sorted({"n1", "n2", "n3", "n4"} - set(uncordoned))
    for name in uncordoned + unmarked:
        assert cluster.annotations(name) == {}
    untouched = {n["metadata"]["name"]: n for n in before if n["metadata"]["name"] not in patched}
    assert all(cluster.node(name) == node for name, node in untouched.items())
    lines = out.splitlines()
    assert sorted(line.split()[1] for line in lines if line.startswith("uncordoned ")) == uncordoned
    assert sorted(line.split()[2].rstrip(":") for line in lines if line.startswith("kept cordoned ")) == kept
    assert [line for line in lines if line.startswith("removed the mark")] == [
        f"removed the mark from {n}, schedulable already (cordoned by plan aaaaaaaaaaaa at 2026-01-01T00:00:00Z, "
        "to empty it)" for n in unmarked]
    if not (uncordoned or kept or unmarked):
        assert lines == ["no node carries an optisched mark of plan cccccccccccc"]


def test_undo_names_a_node_it_could_not_restore_and_exits_1(servers, tmp_path, capsys):
    cluster = _undo_cluster()
    cluster.node_answers = {"n1": [500]}
    servers.start(cluster)
    code, out, _ = run_cli(["reschedule", "--undo-cordons", "--kubeconfig", kubeconfig(tmp_path, servers.host)], capsys)
    assert code == 1 and "cannot uncordon node n1: the patch answered 500 Internal Server Error" in out
    assert "uncordoned n4 (cordoned by plan bbbbbbbbbbbb at 2026-01-01T00:00:00Z, for the plan's duration)" in out


@pytest.mark.parametrize("args, message", [
    pytest.param(["--undo-cordons", "--apply", "--kubeconfig", "kc"], "--undo-cordons is its own action", id="with --apply"),
    pytest.param(["--undo-cordons", str(EXAMPLE)], "--undo-cordons is its own action", id="with files"),
    pytest.param(["--undo-cordons"], "--undo-cordons needs --kubeconfig or --context", id="without a cluster"),
    pytest.param([str(EXAMPLE), "--plan", "abc"], "--plan and --all go with --undo-cordons", id="--plan alone"),
    pytest.param(["--undo-cordons", "--plan", "plan.json", "--kubeconfig", "kc"], "--plan: 'plan.json' is not a plan id",
                 id="a plan id that is not one"),
    pytest.param(["--undo-cordons", "--kubeconfig", "/nonexistent/kc"], "cannot load the kubeconfig",
                 id="a kubeconfig that is not there"),
])
def test_undo_usage_errors_are_one_line_and_exit_2(capsys, args, message):
    code, _, err = run_cli(["reschedule", *args], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


NODE_STATES = st.tuples(st.sampled_from([None, "aaaaaaaaaaaa", "bbbbbbbbbbbb"]), st.sampled_from(["emptied", "held"]),
                        st.booleans(), st.sampled_from(["none", "daemonset", "mirror", "finished", "terminating", "web"]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(states=st.lists(NODE_STATES, min_size=1, max_size=5), plan_id=st.sampled_from([None, "aaaaaaaaaaaa"]),
       everything=st.booleans())
def test_undo_never_touches_an_unmarked_node_and_frees_every_marked_node_holding_pods(servers, states, plan_id,
                                                                                     everything):
    """On random nodes (marked by one of two plans or not, cordoned or not, holding nothing, a DaemonSet
    pod, a mirror pod, a finished or terminating pod, or a workload's pod): an unmarked node is never patched; a marked node of the
    plan asked for that holds a workload's pod ends schedulable and unmarked; a node of that plan stays
    cordoned and marked exactly when it was cordoned, emptied, is empty and --all was not given, and
    ends schedulable and unmarked otherwise."""
    from optisched.reschedule.undo import undo_cordons

    cluster = FakeCluster({}, {})
    cluster.nodes, cluster.pods = [], {}
    for i, (mark, why, cordoned, pod) in enumerate(states):
        name = f"m{i}"
        cluster.nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": {
            BY: mark, AT: "2026-01-01T00:00:00Z", FOR: why} if mark else {}}, "spec": {"unschedulable": cordoned}})
        owner = {"daemonset": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds", "controller": True}],
                 "web": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "web", "controller": True}]}
        meta = {"name": f"p{i}", "namespace": "default", "ownerReferences": owner.get(pod, owner["web"]),
                "annotations": {"kubernetes.io/config.mirror": "x"} if pod == "mirror" else {}}
        if pod == "terminating":
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        if pod != "none":
            cluster.pods[f"default/p{i}"] = {"metadata": meta,
                                             "spec": {"nodeName": name, "containers": [{"name": "c", "image": "x"}]},
                                             "status": {"phase": "Succeeded" if pod == "finished" else "Running"}}
    before = copy.deepcopy(cluster.nodes)
    report = undo_cordons(servers.start(cluster), plan_id, everything)
    assert not report.failed
    for (mark, why, was_cordoned, pod), old, node in zip(states, before, cluster.nodes, strict=True):
        mine = mark is not None and plan_id in (None, mark)
        if not mine:
            assert node == old and node["metadata"]["name"] not in {n for n, _, _ in cluster.patches}
            continue
        ours = (node["metadata"].get("annotations") or {}).get(BY) is not None
        cordoned = bool(node["spec"].get("unschedulable"))
        if pod == "web":
            assert not cordoned and not ours
        kept = was_cordoned and why == "emptied" and pod != "web" and not everything
        assert (cordoned and ours) == kept and (cordoned or not ours)


# --- the command run, killed, interrupted ------------------------------------------------------------

def _script() -> list[str]:
    return [sys.executable, "-m", "optisched"]


class Run:
    """``optisched reschedule --apply`` in a subprocess against ``cluster``; its output read as it comes."""

    def __init__(self, cluster: FakeCluster, servers: Servers, tmp_path: Path) -> None:
        servers.start(cluster)
        self.kc = kubeconfig(tmp_path, servers.host)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
        self.proc = subprocess.Popen([*_script(), "reschedule", "--kubeconfig", self.kc, "--apply", "--time-limit", "5"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        self.out: dict[str, str] = {}
        self.readers = [threading.Thread(target=lambda k=k, s=s: self.out.update({k: s.read()}), daemon=True)
                        for k, s in (("out", self.proc.stdout), ("err", self.proc.stderr))]
        for r in self.readers:
            r.start()

    def wait(self) -> tuple[int, str, str]:
        """The exit status, stdout and stderr."""
        code = self.proc.wait(timeout=300)
        for r in self.readers:
            r.join(60)
        return code, self.out.get("out", ""), self.out.get("err", "")


def _reach(cluster: FakeCluster, run: Run) -> None:
    if not cluster.reached.wait(300):
        run.proc.kill()
        pytest.fail(f"the held request never came: {run.wait()[2][-2000:]}")


def _user_cordoned(cluster: FakeCluster) -> None:
    """n4, empty, cordoned by its user before the run: stays cordoned and unmarked, never patched."""
    assert cluster.unschedulable() == ["n4"] and cluster.annotations("n4") == {}
    assert "n4" not in {name for name, _, _ in cluster.patches}


@pytest.mark.parametrize("held, evicted", [
    pytest.param(0, [], id="killed after the cordons, before the first eviction"),
    pytest.param(1, ["web-31"], id="killed after the first wave"),
])
def test_a_killed_run_is_undone_by_undo_cordons(servers, tmp_path, capsys, held, evicted):
    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"}, extra=(N4,), lists={PDBS: [PDB]})
    cluster.hold("POST", held)  # one eviction per wave (the budget allows one disruption)
    run = Run(cluster, servers, tmp_path)
    _reach(cluster, run)
    plan_id = cluster.annotations("n3").get(BY)
    assert cluster.unschedulable() == ["n3", "n4"] and plan_id and cluster.annotations("n3")[FOR] == "emptied"
    run.proc.send_signal(signal.SIGKILL)
    assert run.wait()[0] == -signal.SIGKILL
    cluster.release(False)  # the held eviction is never carried out
    assert cluster.posts == evicted and cluster.unschedulable() == ["n3", "n4"]
    at = cluster.annotations("n3")[AT]
    code, out, err = run_cli(["reschedule", "--undo-cordons", "--kubeconfig", run.kc], capsys)
    assert code == 0, err
    assert out.splitlines() == [f"uncordoned n3 (cordoned by plan {plan_id} at {at}, to empty it)"]
    assert cluster.annotations("n3") == {} and "n3" not in cluster.unschedulable()
    _user_cordoned(cluster)


def test_the_next_apply_reports_a_killed_runs_marks_and_refuses_a_plan_on_them(servers, tmp_path):
    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"}, extra=(N4,))
    cluster.hold("POST", 0)
    run = Run(cluster, servers, tmp_path)
    _reach(cluster, run)
    plan_id = cluster.annotations("n3")[BY]
    run.proc.send_signal(signal.SIGKILL)
    run.wait()
    cluster.release(False)
    patches = len(cluster.patches)
    again = Run(cluster, servers, tmp_path)
    code, out, _ = again.wait()
    assert code == 1 and f"nodes cordoned by an earlier optisched run (plan {plan_id} at " in out
    assert "(nodes of this plan among them: n3; nothing was changed)" in out
    assert len(cluster.patches) == patches and cluster.posts == []


def test_sigint_stops_apply_between_evictions_prints_its_report_and_exits_130(servers, tmp_path):
    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"}, extra=(N4,))
    cluster.hold("POST", 0)
    run = Run(cluster, servers, tmp_path)
    _reach(cluster, run)
    run.proc.send_signal(signal.SIGINT)
    threading.Event().wait(2.0)  # the interrupt is seen before the held eviction answers
    cluster.release(True)  # that eviction is carried out: web-31 leaves n3, web-32 stays
    code, out, err = run.wait()
    assert code == 130, err
    assert "stopped: interrupted (Ctrl-C or SIGTERM)" in out and "applied 0 wave(s), 1 eviction(s)" in out
    assert "cordoned n3" in out.splitlines() and out.splitlines()[-1] == "uncordoned n3"
    assert err.strip().splitlines()[-1] == "interrupted"
    assert cluster.posts == ["web-31"] and "default/web-32" in cluster.pods
    assert cluster.annotations("n3") == {} and cluster.unschedulable() == ["n4"]
    _user_cordoned(cluster)


def test_the_plan_id_is_in_the_summary_plan_yaml_every_eviction_and_the_report(tmp_path, capsys):
    out_path, report = tmp_path / "plan.yaml", tmp_path / "report"
    code, out, _ = run_cli(["reschedule", str(EXAMPLE), "--time-limit", "5", "--output", str(out_path),
                            "--report", str(report)], capsys)
    docs = list(yaml.safe_load_all(out_path.read_text()))
    plan_id = docs[0]["planId"]
    assert code == 0 and out.splitlines()[0] == f"plan: {plan_id}" and len(plan_id) == 12
    assert all(d["metadata"]["annotations"]["optisched.io/plan-id"] == plan_id for d in docs[1:])
    assert f"plan {plan_id}: " in (report / "report.html").read_text()
    assert json.loads((report / "reschedule.json").read_text())["planId"] == plan_id


def test_two_plans_of_one_cluster_get_two_ids(plan):
    again = optisched.reschedule(optisched.load([str(EXAMPLE)]), goal="consolidate", time_limit=5)
    assert again.plan_id != plan.plan_id and again.to_dict()["planId"] == again.plan_id


def _pod_level(cpu_actual: str | None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"nodeName": "n1", "resources": {"requests": {"cpu": "1"}},
                    "containers": [{"name": "c", "image": "pause"}]}, "status": {"phase": "Running"}}
    if cpu_actual is not None:
        pod["status"]["resources"] = {"requests": {"cpu": cpu_actual}}
    return pod


@pytest.mark.parametrize("version,stops", [("1.35", False), ("1.36", True)])
def test_the_recheck_counts_requests_as_the_plans_release(version: str, stops: bool) -> None:
    """A pod-level resize in progress (``status.resources`` above the spec) changes what the pod requests
    in 1.36 (InPlacePodLevelResourcesVerticalScaling, beta and on), not in 1.35: the re-check before a
    wave compares the requests the plan's replays counted."""
    from optisched.model.loader import cluster_from_objects
    from optisched.model.state import compile_cluster
    from optisched.reschedule.recheck import mismatch, placement, reference
    from optisched.reschedule.waves import Move

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
    small = copy.deepcopy(_pod_level(None))
    small["metadata"]["name"] = "small"
    state = compile_cluster(cluster_from_objects([node, _pod_level(None), small]), version)
    ref = placement(state)
    now = reference({"default/big": _pod_level("2"), "default/small": small}, requests=state.release)
    why = mismatch([Move(2, "default/small", "n1", None, "moves")], {}, ref, now, set())
    assert (why is not None and "default/big on n1 requests cpu=2000" in why) is stops
