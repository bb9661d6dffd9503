"""PodDisruptionBudgets in the batch: moves stay within them, preemption breaks as few as it can."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.datasets.generate import GenerateSpec, generate
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.check import check_budgets
from optisched.optimal.eviction.pdb_model import budget_use
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.profile import default_config

CFG = default_config()


def _owner(name: str) -> list[dict]:
    return [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": name, "controller": True}]


def _pdb(name: str, app: str, max_unavailable: int) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}}}


def _running(name: str, app: str, on: str, cpu: str = "1", prio: int = 1):  # type: ignore[no-untyped-def]
    return pod(name).label(app=app).req(cpu=cpu).priority(prio).set("metadata.ownerReferences", _owner(app)).on(on)


def test_preemption_picks_the_node_whose_victim_breaks_no_budget():
    """Both nodes are full of one low-priority pod; the preemptor fits on either by evicting it. n1's pod is
    covered by a budget with no disruption left, n2's by none: the victim is n2's (kube's first criterion)."""
    objs = [node("n1", cpu="1"), node("n2", cpu="1"),
            _running("guarded", "db", "n1"), _running("free", "web", "n2"),
            _pdb("db", "db", 0), pod("p").req(cpu="1").priority(100)]
    state = state_of(*objs)
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=5))
    placed = r.placements()
    assert placed["default/p"] == "n2" and placed["default/guarded"] == "n1"
    assert budget_use(r.batch, r.node_of) == []
    assert "pdb-violations" in [t.name for t in r.certificate.tiers]


@pytest.mark.parametrize("movable", [False, True], ids=["batch preemption", "with --movable the victim is no move"])
def test_preemption_breaks_a_budget_when_nothing_else_places_the_pod(movable):
    """Only the guarded node exists: the preemptor still goes there (placement first) and the budget
    it breaks is reported as violated by preemption, not as a move — also when running pods may move,
    since kube would evict the pod for the preemptor."""
    objs = [node("n1", cpu="1"), _running("guarded", "db", "n1"), _pdb("db", "db", 0),
            pod("p").req(cpu="1").priority(100)]
    r = solve_optimal(state_of(*objs), CFG, OptimalOptions(time_limit=5, movable=movable))
    assert r.placements()["default/p"] == "n1"
    (use,) = budget_use(r.batch, r.node_of)
    assert (use.name, use.allowed, use.moves, use.victims, use.violated) == ("default/db", 0, 0, 1, 1)
    assert r.violations == []


def test_moves_stay_within_a_budget_even_when_more_would_place_more():
    """Two pending pods need both nodes emptied of the web pods (which fit on n3 only by moving); the budget
    allows one disruption, so one web pod moves and one pending pod stays pending."""
    objs = [node("n1", cpu="1"), node("n2", cpu="1"), node("n3", cpu="2").taint("web"),
            _running("w1", "web", "n1").tolerate("web"), _running("w2", "web", "n2").tolerate("web"),
            _pdb("web", "web", 1)] + [pod(f"p{i}").req(cpu="1").priority(1) for i in range(2)]
    r = solve_optimal(state_of(*objs), CFG, OptimalOptions(time_limit=5, movable=True))
    placed = r.placements()
    assert sum(placed[f"default/p{i}"] is not None for i in range(2)) == 1
    (use,) = budget_use(r.batch, r.node_of)
    assert (use.moves, use.violated) == (1, 0)


def test_the_check_flags_moves_beyond_a_budget():
    """The independent check refuses a placement that moves two pods of a budget allowing one."""
    objs = [node("n1", cpu="1"), node("n2", cpu="1"), node("n3", cpu="2").taint("web"),
            _running("w1", "web", "n1").tolerate("web"), _running("w2", "web", "n2").tolerate("web"),
            _pdb("web", "web", 1)]
    state = state_of(*objs)
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=2, movable=True))
    node_of = r.node_of.copy()
    node_of[[state.pod_index["default/w1"], state.pod_index["default/w2"]]] = state.node_index["n3"]
    (v,) = check_budgets(r.batch, node_of)
    assert v.pod == "default/web" and v.plugin == "PodDisruptionBudget"


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), load=st.sampled_from([0.9, 1.1]))
def test_moves_never_exceed_any_budget(seed, load):
    """Random generated clusters with budgets, every running pod movable: no budget's moves exceed its
    disruptionsAllowed, and the answer passes the re-check."""
    objs = generate(GenerateSpec(nodes=8, pods=70, load=load, seed=seed))
    objs = [o for o in objs if o.get("kind") != "PodDisruptionBudget"]
    apps = sorted({o["metadata"]["labels"]["app"] for o in objs if o.get("kind") == "Pod"})
    objs += [_pdb(f"b-{a}", a, k % 2) | {"metadata": {"name": f"b-{a}", "namespace": ns}}
             for k, a in enumerate(apps)
             for ns in {o["metadata"]["namespace"] for o in objs if o.get("kind") == "Pod"
                        and o["metadata"]["labels"].get("app") == a}]
    state = compile_cluster(cluster_from_objects(objs))
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=3, movable=True))
    assert r.violations == []
    for use in budget_use(r.batch, r.node_of):
        assert use.moves <= use.allowed, use
    assert np.all(r.node_of[state.pod_node >= 0][r.batch.fixed[state.pod_node >= 0]]
                  == state.pod_node[state.pod_node >= 0][r.batch.fixed[state.pod_node >= 0]])


def test_summary_json_report_and_terminal_list_budget_use(tmp_path, capsys):
    """compare --movable on the one-disruption cluster: summary.json, the report's disruption section and
    the terminal name the budget, what it allowed and the move that used it."""
    import json

    import yaml
    from builders import run_cli

    objs = [node("n1", cpu="1"), node("n2", cpu="1"), node("n3", cpu="2").taint("web"),
            _running("w1", "web", "n1").tolerate("web"), _running("w2", "web", "n2").tolerate("web"),
            _pdb("web", "web", 1)] + [pod(f"p{i}").req(cpu="1").priority(1) for i in range(2)]
    src = tmp_path / "c.yaml"
    src.write_text(yaml.safe_dump_all([dict(o) for o in objs]))
    code, out, err = run_cli(["compare", str(src), "--movable", "--time-limit", "3", "--report", str(tmp_path / "r")],
                             capsys)
    assert code == 0, err
    runs = json.loads((tmp_path / "r" / "summary.json").read_text())["runs"]
    assert runs[1]["budgets"] == [{"budget": "default/web", "disruptionsAllowed": 1, "moves": 1, "victims": 0,
                                   "violated": 0}] and runs[1]["moves"] == 1
    page = (tmp_path / "r" / "report.html").read_text()
    assert "<h2>Disruption</h2>" in page and "default/web" in page
    assert (tmp_path / "r" / "budgets.png").stat().st_size > 1000 and "<h2>PodDisruptionBudgets used</h2>" in page
    assert "PodDisruptionBudgets used" in out


def test_an_unknown_evict_kind_is_refused(capsys):
    from builders import run_cli

    code, _, err = run_cli(["compare", "x.yaml", "--evict", "protected,daemonsets"], capsys)
    assert code == 2 and "--evict: 'daemonsets' is not a kind" in err
