"""User objectives (``--objective pack|spread|balance``): a tier between disruption and the score, from
the Python API and the command line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import node, pod, run_cli, state_of

import optisched
from optisched.errors import InputError
from optisched.model.loader import cluster_from_objects
from optisched.optimal.solve import OptimalOptions, parse_weights, solve_optimal
from optisched.optimal.user_objectives import COST_KEY, node_costs
from optisched.profile import default_config

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"


def solve(objs: list, objective: str | None):  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    result = solve_optimal(state, default_config(), OptimalOptions(time_limit=10, workers=1, objective=objective))
    assert result.violations == []
    return state, result


def used_nodes(state, result) -> set[int]:  # type: ignore[no-untyped-def]
    return {int(n) for n in result.node_of[state.pending] if n >= 0}


def util(state, result, node_name: str, col: int) -> float:  # type: ignore[no-untyped-def]
    n = state.node_index[node_name]
    on = result.node_of == n
    return float(state.pod_requests[on, col].sum() / state.allocatable[n, col])


THREE = [node("n1"), node("n2"), node("n3"), *[pod(f"p{i}").req(cpu="500m", memory="512Mi") for i in range(3)]]


def test_pack_uses_fewer_nodes_than_the_default_profile() -> None:
    state, default = solve(THREE, None)
    _, packed = solve(THREE, "pack")
    assert len(used_nodes(state, default)) == 3  # LeastAllocated and the spread defaults spread them
    assert len(used_nodes(state, packed)) == 1
    tiers = [(t.name, t.fidelity) for t in packed.certificate.tiers]
    assert tiers == [("placed[priority=0]", "EXACT"), ("objective:pack", "EXACT"), ("score", "SURROGATE")]
    pack = packed.certificate.tiers[1]
    assert (pack.objective, pack.bound, pack.greedy, pack.sense) == (1, 1, 3, "min")


@pytest.mark.parametrize(("where", "cheap"), [("labels", "n2"), ("annotations", "n1")],
                         ids=["a cost label picks the cheaper node", "a cost annotation picks the cheaper node"])
def test_pack_with_costs_picks_the_cheapest_node(where: str, cheap: str) -> None:
    nodes = [node("n1", cpu="8"), node("n2", cpu="8"), node("n3", cpu="8")]
    costs = {"n1": "0.40", "n2": "0.25"} if cheap == "n2" else {"n1": "0.10", "n2": "0.25"}
    for n in nodes:
        if n["metadata"]["name"] in costs:
            n["metadata"].setdefault(where, {})[COST_KEY] = costs[n["metadata"]["name"]]
    state, result = solve([*nodes, pod("a").req(cpu="1"), pod("b").req(cpu="1")], "pack")
    assert used_nodes(state, result) == {state.node_index[cheap]}  # n3 has no cost: the highest one found


def test_node_costs_in_thousandths_and_a_bad_cost_is_refused() -> None:
    state = state_of(node("n1").label(**{COST_KEY: "1.5"}), node("n2"))
    assert node_costs(state).tolist() == [1500, 1500]
    assert node_costs(state_of(node("n1"))) is None
    for bad in ("cheap", "-1", "1e30", "NaN", "Infinity"):
        with pytest.raises(InputError, match=r"Node/n1 \.metadata\.labels\[optisched.io/hourly-cost\]: "
                                             rf"'{bad}' is not a number from 0 to 1000000"):
            node_costs(state_of(node("n1").label(**{COST_KEY: bad})))


def prefer(name: str) -> dict:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}}]}}


def test_spread_lowers_the_highest_utilization() -> None:
    objs = [node("n1"), node("n2"), pod("old").req(cpu="2").on("n1"),
            *[pod(f"p{i}").req(cpu="1").set("spec.affinity", prefer("n1")) for i in range(2)]]
    state, default = solve(objs, None)
    _, spread = solve(objs, "spread")
    cpu = state.resource_col("cpu")
    assert util(state, default, "n1", cpu) == 1.0  # the preferred node takes both
    assert max(util(state, spread, n, cpu) for n in ("n1", "n2")) == 0.5  # both on n2


def test_balance_pairs_cpu_heavy_and_memory_heavy_pods() -> None:
    objs = [node("n1", cpu="4", memory="4Gi"), node("n2", cpu="4", memory="4Gi"),
            *[pod(f"c{i}").req(cpu="2", memory="256Mi").set("spec.affinity", prefer("n1")) for i in (1, 2)],
            *[pod(f"m{i}").req(cpu="250m", memory="2Gi").set("spec.affinity", prefer("n2")) for i in (1, 2)]]
    state, default = solve(objs, None)
    _, result = solve(objs, "balance")
    names = [sorted(state.pods[p].metadata.name[0] for p in np.flatnonzero(r.node_of == n))
             for r in (default, result) for n in (0, 1)]
    assert names == [["c", "c"], ["m", "m"], ["c", "m"], ["c", "m"]]
    balance = result.certificate.tiers[1]
    # greedy: n1 cpu 1000‰, memory 2 × 63‰ (256Mi/4Gi = 62.5‰ per pod, rounded); n2 the mirror image
    assert balance.name == "objective:balance" and balance.objective == 0 and balance.greedy == 874 + 874


def test_an_unknown_objective_is_refused() -> None:
    with pytest.raises(InputError, match="--objective: 'cheapest' is not one of pack, spread, balance"):
        solve_optimal(state_of(node("n1")), default_config(), OptimalOptions(objective="cheapest"))
    cluster = cluster_from_objects([node("n1").build()])
    with pytest.raises(InputError, match="not one of pack, spread, balance"):
        optisched.solve(cluster, objective="fewest")


def test_schedule_optimal_with_an_objective(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "c.json"
    src.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [o.build() for o in THREE]}))
    out = tmp_path / "o.json"
    code, stdout, _ = run_cli(["schedule", str(src), "--mode", "optimal", "--objective", "pack", "--time-limit", "10",
                               "--output", str(out)], capsys)
    assert code == 0
    doc = json.loads(out.read_text())
    assert len(set(doc["placements"].values())) == 1
    assert [t["name"] for t in doc["certificate"]["tiers"]] == ["placed[priority=0]", "objective:pack", "score"]
    assert "pack objective" in stdout
    code, stdout, _ = run_cli(["compare", str(src), "--objective", "pack", "--time-limit", "10"], capsys)
    assert code == 0 and "pack objective" in stdout


@pytest.mark.parametrize(("args", "message"), [
    (["schedule", "--mode", "optimal", "--objective", "cheap"], "--objective: 'cheap' is not one of pack, spread"),
    (["schedule", "--objective", "pack"], "--objective applies to optimal mode"),
    (["compare", "--objective", "tidy"], "--objective: 'tidy' is not one of pack, spread, balance"),
], ids=["an unknown objective is refused", "an objective needs optimal mode", "compare refuses an unknown objective"])
def test_cli_refuses_bad_objectives(args: list[str], message: str, capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, stderr = run_cli([args[0], "datasets/examples/quickstart.yaml", *args[1:]], capsys)
    assert code == 2 and message in stderr and "Traceback" not in stderr


# ------------------------------------------------------------------ one weighted objective
def _weighted_cluster():  # type: ignore[no-untyped-def]
    return state_of(node("n1", cpu="2"), pod("low").req(cpu="2").priority(1).on("n1"),
                    pod("p").req(cpu="2").priority(10))


def test_weights_trade_placement_against_disruption():
    """Lexicographic tiers evict the low-priority pod for the preemptor (priority first). With placed=1,
    disruption=1 one more pod placed at a higher level no longer pays for the eviction (the evicted pod
    counts as placed too): the answer keeps the running pod, and the certificate has one weighted tier
    with each weighted tier's value beside it."""
    state = _weighted_cluster()
    p, low = state.pod_index["default/p"], state.pod_index["default/low"]
    lex = solve_optimal(state, default_config(), OptimalOptions(time_limit=5))
    assert lex.node_of[p] == 0 and lex.node_of[low] < 0
    w = solve_optimal(state, default_config(), OptimalOptions(time_limit=5, weights=parse_weights("placed=1,disruption=1")))
    assert w.node_of[p] < 0 and w.node_of[low] == 0
    names = [t.name for t in w.certificate.tiers]
    assert names[0] == "weighted" and "weighted:disruption" in names and "weighted:placed[priority=10]" in names
    top = w.certificate.tiers[0]
    assert top.status == "OPTIMAL" and top.objective == top.bound == 1
    assert {t.status for t in w.certificate.tiers[1:]} == {"VALUE"}
    assert w.explanations and w.explanations[0].kind == "weighted"
    # a level weight overrides "placed": priority 10 worth 5 pays for the eviction again
    heavy = solve_optimal(state, default_config(), OptimalOptions(
        time_limit=5, weights=parse_weights({"placed": 1, "placed[priority=10]": 5, "disruption": 1})))
    assert heavy.node_of[p] == 0 and heavy.node_of[low] < 0 and heavy.violations == []


@pytest.mark.parametrize("text, message", [("placed", "is not NAME=INTEGER"), ("speed=3", "is not a tier"),
                                           ("placed=x", "is not an integer")])
def test_bad_weights_are_input_errors(text, message):
    with pytest.raises(InputError, match=message):
        parse_weights(text)


def test_weights_on_the_command_line(capsys):
    ex = str(EXAMPLES / "preemption.yaml")
    code, out, err = run_cli(["schedule", ex, "--mode", "optimal", "--weights", "placed=1,disruption=1",
                              "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "weighted" in out and "VALUE" in out
    code, _, err = run_cli(["schedule", ex, "--weights", "placed=1"], capsys)
    assert code == 2 and "--weights applies to optimal mode" in err


def test_compare_with_weights(tmp_path, capsys):
    """compare runs optimal mode with the weights: its column shows the weighted tier and each weighted
    tier's value, and the JSON certificate carries them; bad weights are refused before any run."""
    ex = str(EXAMPLES / "preemption.yaml")
    code, out, err = run_cli(["compare", ex, "--weights", "placed=1,disruption=1,score=1", "--time-limit", "5",
                              "--report", str(tmp_path)], capsys)
    assert code == 0, err
    assert "weighted" in out
    doc = json.loads((tmp_path / "summary.json").read_text())
    optimal = next(r for r in doc["runs"] if r["name"] == "optimal")
    names = [t["name"] for t in optimal["certificate"]["tiers"]]
    assert names[0] == "weighted" and "weighted:score" in names
    assert optimal["scoreObjective"] is not None
    code, _, err = run_cli(["compare", ex, "--weights", "speed=3"], capsys)
    assert code == 2 and "'speed' is not a tier" in err and "Traceback" not in err


def test_weights_through_the_python_api():
    objs = [node("n1", cpu="2").build(), pod("low").req(cpu="2").priority(1).on("n1").build(),
            pod("p").req(cpu="2").priority(10).build()]
    r = optisched.solve(cluster_from_objects(objs), time_limit=5, weights={"placed": 1, "disruption": 1})
    assert r.placements() == {"default/low": "n1", "default/p": None}
    assert r.certificate.to_dict()["tiers"][0]["name"] == "weighted"
