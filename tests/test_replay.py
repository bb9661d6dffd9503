"""Whole-cluster replay: the running pods placed again beside the input's placement ("current").

The cluster, worked out by hand: four 4-cpu nodes; n1 and n2 cost 1.0 an hour, n3 and n4 2.0. A
DaemonSet pod (500m) holds n1, a mirror pod (500m) n2. Four `web` replicas (1 cpu, priority 0) run one
per node, which leaves no node 4 cpu free: the pending `big` pod (4 cpu, priority 0, created last)
stays pending. Greedy mode, replaying in queue order, spreads the web pods again (LeastAllocated) and
strands `big` the same way; optimal mode with ``pack`` puts the web pods beside the DaemonSet and mirror
pods on n1 and n2 and `big` on n3 or n4: 3 nodes, 4.0 an hour, instead of 4 nodes, 6.0 an hour.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from builders import node, pod, run_cli

import optisched
from optisched.comparison import run_greedy
from optisched.comparison.replay import prepare_replay, stays_reason
from optisched.errors import InputError
from optisched.metrics import COST_KEY
from optisched.model.loader import cluster_from_objects
from optisched.profile import default_config

COSTS = {"n1": "1.0", "n2": "1.0", "n3": "2.0", "n4": "2.0"}
SPREAD = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def web(i: int, on: str) -> dict:
    return (pod(f"web-{i}").req(cpu="1", memory="1Gi").label(app="web").on(on)
            .set("metadata.creationTimestamp", f"2026-01-01T00:00:0{i}Z")
            .set("spec.topologySpreadConstraints", SPREAD).build())


def cluster_objects(big_priority: int = 0, big_created: str = "2026-01-01T00:01:00Z") -> list[dict]:
    nodes = [{**node(n, cpu="4", memory="16Gi").build()} for n in COSTS]
    for n in nodes:
        n["metadata"]["annotations"] = {COST_KEY: COSTS[n["metadata"]["name"]]}
    ds = (pod("agent-n1", "kube-system").req(cpu="500m").on("n1")
          .set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                            "controller": True}]).build())
    mirror = (pod("etcd-n2", "kube-system").req(cpu="500m").on("n2")
              .set("metadata.annotations", {"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "file"})
              .build())
    big = (pod("big").req(cpu="4", memory="2Gi").priority(big_priority)
           .set("metadata.creationTimestamp", big_created).build())
    return [*nodes, ds, mirror, *(web(i, f"n{i + 1}") for i in range(4)), big]


def cluster(big_priority: int = 0, big_created: str = "2026-01-01T00:01:00Z"):  # type: ignore[no-untyped-def]
    return cluster_from_objects(cluster_objects(big_priority, big_created))


@pytest.fixture(scope="module")
def comparison():
    return optisched.compare(cluster(), replay=True, objective="pack", time_limit=20, seed=0)


def row(c, metric: str) -> dict:  # type: ignore[no-untyped-def]
    return c.summary.loc[metric].to_dict()


def test_the_current_placement_is_the_third_column_with_the_same_metrics(comparison):
    assert [r.name for r in comparison.runs] == ["greedy", "optimal", "current"]
    assert row(comparison, "placed (of 5 pending)") == {"greedy": 4, "optimal": 5, "current": 4}
    assert row(comparison, "unschedulable") == {"greedy": 1, "optimal": 0, "current": 1}
    assert row(comparison, "nodes used") == {"greedy": 4, "optimal": 3, "current": 4}
    assert row(comparison, "cost per hour of the nodes used") == {"greedy": 6.0, "optimal": 4.0, "current": 6.0}
    # 0.5 + 0.5 + 4 web cpus of 16, and 4 more for big in the optimal placement
    assert row(comparison, "allocated cpu") == {"greedy": 5 / 16, "optimal": 9 / 16, "current": 5 / 16}
    skew = row(comparison, "spread skew: default/app=web hostname maxSkew=1 ScheduleAnyway")
    assert skew["greedy"] == skew["current"] == 0 and skew["optimal"] >= 2  # packing costs spread
    frag = row(comparison, "expected fragmented free cpu (FGD)")
    assert frag["greedy"] == frag["current"] > frag["optimal"]


def test_greedy_replay_strands_the_big_pod_as_the_cluster_did(comparison):
    state = comparison.state
    greedy, optimal, current = comparison.runs
    big = state.pod_index["default/big"]
    assert greedy.node_of[big] == current.node_of[big] == -1 and optimal.node_of[big] >= 0
    webs = [state.pod_index[f"default/web-{i}"] for i in range(4)]
    assert sorted(greedy.node_of[webs].tolist()) == [0, 1, 2, 3]  # one per node again
    assert current.unschedulable == {big: "pending in the input"}


@pytest.mark.parametrize("key", ["kube-system/agent-n1", "kube-system/etcd-n2"],
                         ids=["a DaemonSet pod keeps its node", "a mirror pod keeps its node"])
def test_daemonset_and_mirror_pods_stay_where_they_are(comparison, key):
    state = comparison.state
    p = state.pod_index[key]
    assert state.pod_node[p] >= 0  # bound in the replayed batch, so no mode moves it
    assert {int(r.node_of[p]) for r in comparison.runs} == {int(state.pod_node[p])}


def reject(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def test_the_report_and_summary_json_carry_the_current_column(comparison, tmp_path):
    from optisched.report import write_report

    write_report(comparison, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text(), parse_constant=reject)  # strict JSON
    assert summary["runs"][2]["seconds"] is None
    assert summary["summary"]["nodes used"] == {"greedy": 4, "optimal": 3, "current": 4}
    assert [r["name"] for r in summary["runs"]] == ["greedy", "optimal", "current"]
    assert summary["summary"]["run time"]["current"] is None
    assert ">current<" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize(("priority", "created", "big_placed"), [
    (0, "2026-01-01T00:01:00Z", False),
    (1000, "2026-01-01T00:01:00Z", True),
    (0, "2025-12-31T00:00:00Z", True),
], ids=["the big pod created last waits behind the web pods and is stranded",
        "a higher-priority big pod goes first and takes an empty node",
        "a big pod created before the web pods goes first at equal priority"])
def test_greedy_replays_in_the_queue_order_priority_then_creation_time(priority, created, big_placed):
    replay = prepare_replay(cluster(priority, created), ["default-scheduler"])
    run = run_greedy(replay.state, default_config())
    assert bool(run.node_of[replay.state.pod_index["default/big"]] >= 0) == big_placed
    assert np.all(np.delete(run.node_of, replay.state.pod_index["default/big"]) >= 0)


# --------------------------------------------------------------------------- which pods are replayed
def keys(state, rows) -> set[str]:  # type: ignore[no-untyped-def]
    return {state.pods[p].key for p in rows}


WEBS = {f"default/web-{i}" for i in range(4)}


@pytest.mark.parametrize(("selector", "namespaces", "replayed"), [
    ("", (), WEBS),
    ("app=web", (), WEBS),
    ("app!=web", (), set()),
    ("app in (web, db)", ("default",), WEBS),
    ("", ("kube-system",), set()),
    ("!app", (), set()),
    ("", ("other",), set()),
], ids=["everything by default", "a selector picks the web pods", "a != selector leaves them",
        "a set selector and a namespace", "kube-system holds only pods that stay", "!key excludes labelled pods",
        "a namespace with no pods picks none"])
def test_selector_and_namespaces_narrow_the_replayed_pods(selector, namespaces, replayed):
    replay = prepare_replay(cluster(), ["default-scheduler"], selector, namespaces)
    assert keys(replay.state, replay.replayed) == replayed
    assert keys(replay.state, np.flatnonzero(replay.state.pod_node < 0)) == replayed | {"default/big"}


def test_the_current_run_is_the_input_placement_whatever_is_replayed():
    replay = prepare_replay(cluster(), ["default-scheduler"])
    from optisched.model.state import compile_cluster

    assert replay.current.node_of.tolist() == compile_cluster(cluster()).pod_node.tolist()
    assert set(replay.kept.values()) == {"DaemonSet pod", "mirror or static pod"}


def _p(**meta):  # type: ignore[no-untyped-def]
    b = pod("x").on("n1")
    for path, value in meta.items():
        b.set(path.replace("__", "."), value)
    return cluster_from_objects([node("n1").build(), b.build()]).pods[0]


@pytest.mark.parametrize(("built", "why"), [
    (lambda: _p(), None),
    (lambda: _p(metadata__ownerReferences=[{"kind": "DaemonSet", "name": "d"}]), "DaemonSet pod"),
    (lambda: _p(metadata__ownerReferences=[{"kind": "ReplicaSet", "name": "r"}]), None),
    (lambda: _p(metadata__annotations={"kubernetes.io/config.mirror": "h"}), "mirror or static pod"),
    (lambda: _p(metadata__annotations={"kubernetes.io/config.source": "file"}), "mirror or static pod"),
    (lambda: _p(metadata__annotations={"kubernetes.io/config.source": "api"}), None),
    (lambda: _p(metadata__deletionTimestamp="2026-01-01T00:00:00Z"), "terminating"),
    (lambda: _p(spec__schedulerName="volcano"), "schedulerName 'volcano' matches no profile"),
], ids=["a ReplicaSet-less running pod is replayed", "a DaemonSet pod stays", "a ReplicaSet pod is replayed",
        "a mirror pod stays", "a static pod stays", "a pod from the API server is replayed",
        "a terminating pod stays", "a pod of another scheduler stays"])
def test_which_bound_pods_stay(built, why):
    assert stays_reason(built(), {"default-scheduler"}) == why


def test_finished_pods_stay_as_they_are():
    done = pod("done").on("n1").set("status.phase", "Succeeded").build()
    c = cluster_from_objects([node("n1").build(), done, pod("run").on("n1").build()])
    replay = prepare_replay(c, ["default-scheduler"])
    assert keys(replay.state, replay.replayed) == {"default/run"}
    assert replay.state.cluster.pods[0].spec.node_name == "n1"


def test_a_bad_selector_is_refused_naming_the_option():
    with pytest.raises(InputError, match="--selector: cannot parse 'app in web'"):
        prepare_replay(cluster(), ["default-scheduler"], "app in web")


# --------------------------------------------------------------------------- command line
def write_cluster(tmp_path, objects: list[dict]):  # type: ignore[no-untyped-def]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_compare_replay_on_the_command_line(tmp_path, capsys):
    path = write_cluster(tmp_path, cluster_objects())
    code, out, err = run_cli(["compare", str(path), "--replay", "--selector", "app=web", "--objective", "pack",
                              "--time-limit", "20", "--report", str(tmp_path / "r")], capsys)
    assert code == 0, err
    assert "current" in out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["summary"]["cost per hour of the nodes used"] == {"greedy": 6.0, "optimal": 4.0, "current": 6.0}


@pytest.mark.parametrize("args", [["--selector", "app=web"], ["--namespaces", "default"], ["--replay", "--movable"]],
                         ids=["a selector without --replay is refused", "namespaces without --replay are refused",
                              "--movable with --replay is refused"])
def test_replay_options_that_do_not_go_together(tmp_path, capsys, args):
    path = write_cluster(tmp_path, cluster_objects())
    code, _, err = run_cli(["compare", str(path), *args], capsys)
    assert code == 2 and "--replay" in err


# --------------------------------------------------------------------------- kubectl's -l syntax
@pytest.mark.parametrize(("text", "labels", "matches"), [
    ("", {}, True),
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("tier in (a, b),app", {"tier": "b", "app": "x"}, True),
    ("tier notin (a,b)", {"tier": "a"}, False),
    ("tier notin (a,b)", {}, True),
    ("example.com/team", {"example.com/team": ""}, True),
    ("!canary", {"canary": "yes"}, False),
    ("app=web, !canary", {"app": "web"}, True),
], ids=["an empty selector matches everything", "k=v matches that value", "k==v does not match another value",
        "k!=v matches when k is absent", "k!=v does not match v", "in and exists joined by a comma",
        "notin rejects a listed value", "notin matches when k is absent", "a prefixed key exists",
        "!k rejects a pod with k", "spaces after commas are allowed"])
def test_label_selectors_read_as_kubectl_reads_them(text, labels, matches):
    from optisched.model.selectors import parse_label_selector

    assert parse_label_selector(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["app in web", "app=(x)", "=web", "app=web,,", "a b"],
                         ids=["in without parentheses", "a value with parentheses", "no key", "an empty term",
                              "two words"])
def test_a_selector_kubectl_would_refuse_is_refused(text):
    from optisched.model.selectors import parse_label_selector

    with pytest.raises(InputError, match="--selector: cannot parse"):
        parse_label_selector(text)
