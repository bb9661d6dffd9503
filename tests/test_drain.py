"""``kubectl drain`` semantics on hand-built clusters: refusals, skips, PDB waves and landings."""
from __future__ import annotations

import json

import pytest
import yaml
from builders import run_cli, state_of
from helpers.descheduler import CFG, tnode, tpod

from optisched.whatif.drain import NO_ROOM, DrainFlags, run_drain


def _pdb(name: str, app: str, max_unavailable: int) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}}}


def _web(i: int, on: str = "n1") -> dict:
    return tpod(f"web-{i}", 500, on).label(app="web")


NODES = [tnode("n1", 4000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110), tnode("n3", 4000, 8 << 30, 110)]


def test_a_budget_of_one_drains_in_one_wave_per_pod() -> None:
    out = run_drain(state_of(*NODES, _web(1), _web(2), _web(3, "n2"), _pdb("web", "web", 1)), CFG, ["n1"])
    assert [[e["pod"] for e in w] for w in out.waves] == [["default/web-1"], ["default/web-2"]]
    assert all(e["predicted"] in ("n2", "n3") for w in out.waves for e in w)
    assert out.drained == {"n1": True} and out.blocked == []


def test_without_a_budget_everything_leaves_in_one_wave() -> None:
    out = run_drain(state_of(*NODES, _web(1), _web(2)), CFG, ["n1"])
    assert [len(w) for w in out.waves] == [2]


def test_the_second_wave_waits_for_the_first_replacement_and_may_leave_a_pod_pending() -> None:
    """n2, the only other node, holds one 3-cpu pod: big-0 lands there and gives the budget back, so big-1
    leaves in a second wave and its replacement stays pending: kubectl finishes, but the node does not
    drain without losing big-1 (no room anywhere)."""
    big = [tpod(f"big-{i}", 3000, "n1").label(app="big") for i in range(2)]
    nodes = [tnode("n1", 8000, 8 << 30, 110), tnode("n2", 4000, 8 << 30, 110)]
    out = run_drain(state_of(*nodes, *big, _pdb("big", "big", 1)), CFG, ["n1"])
    assert [[e["pod"] for e in w] for w in out.waves] == [["default/big-0"], ["default/big-1"]]
    assert out.waves[1][0]["predicted"] is None
    assert out.drained == {"n1": False}
    assert out.blocked == [{"pod": "default/big-1", "node": "n1", "reason": NO_ROOM}]
    assert out.per_node() == {"n1": {"drains": False, "waves": 2, "blockers": [
        {"pod": "default/big-1", "reason": NO_ROOM}]}}


REFUSALS = [
    pytest.param(tpod("ds", 100, "n1", "DaemonSet"), DrainFlags(), "DaemonSet-managed pod", id="a DaemonSet pod refuses"),
    pytest.param(tpod("bare", 100, "n1", None), DrainFlags(), "declares no controller", id="a bare pod refuses"),
    pytest.param(tpod("tmp", 100, "n1").set("spec.volumes", [{"name": "t", "emptyDir": {}}]), DrainFlags(),
                 "local storage", id="an emptyDir pod refuses"),
]


@pytest.mark.parametrize(("pod", "flags", "reason"), REFUSALS)
def test_refused_pods_keep_the_node_from_draining(pod: dict, flags: DrainFlags, reason: str) -> None:
    out = run_drain(state_of(*NODES, _web(1), pod), CFG, ["n1"], flags)
    assert out.drained == {"n1": False} and out.waves == [] and reason in out.blocked[0]["reason"]


ALLOWED = [
    pytest.param(tpod("ds", 100, "n1", "DaemonSet"), DrainFlags(ignore_daemonsets=True), 1,
                 id="with --ignore-daemonsets the DaemonSet pod is skipped"),
    pytest.param(tpod("bare", 100, "n1", None), DrainFlags(force=True), 2, id="with --force the bare pod is evicted"),
    pytest.param(tpod("tmp", 100, "n1").set("spec.volumes", [{"name": "t", "emptyDir": {}}]),
                 DrainFlags(delete_emptydir_data=True), 2, id="with --delete-emptydir-data the pod is evicted"),
]


@pytest.mark.parametrize(("pod", "flags", "evicted"), ALLOWED)
def test_flags_lift_the_refusals(pod: dict, flags: DrainFlags, evicted: int) -> None:
    out = run_drain(state_of(*NODES, _web(1), pod), CFG, ["n1"], flags)
    assert out.drained == {"n1": True} and sum(len(w) for w in out.waves) == evicted


def test_cli_drain_json_and_unknown_node(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump_all([o.build() if hasattr(o, "build") else o
                                     for o in [*NODES, _web(1), _web(2), _pdb("web", "web", 1)]]))
    code, out, _ = run_cli(["drain", str(f), "--node", "n1", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["nodes"] == {"n1": True} and len(doc["waves"]) == 2
    code, out, err = run_cli(["drain", str(f), "--node", "n9"], capsys)
    assert code == 2 and "Node/n9 --node: no node 'n9' in the cluster" in err
