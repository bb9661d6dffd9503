"""``reschedule --goal repair`` for the descheduler's other strategies: required anti-affinity, duplicates
(RemoveDuplicates), and with ``--soft`` the preferences; each on a hand-built cluster whose best plan is
known, and each CP-SAT term held to the descheduler's own predicate on the same placement."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from builders import node, pod, run_cli, state_of

from optisched.descheduler.duplicates import over_average
from optisched.descheduler.encoding import encode_anti_affinity, encode_duplicates, encode_preferred_affinity
from optisched.descheduler.violations import anti_affinity_violated, preferred_affinity_violated
from optisched.errors import InputError
from optisched.optimal.classes import build_batch
from optisched.optimal.decode import variable_values
from optisched.optimal.model import BatchModel
from optisched.optimal.tiers import Linear
from optisched.profile import default_config
from optisched.reschedule import plan_reschedule

HOST = "kubernetes.io/hostname"


def owned(name: str, owner: str = "web", image: str = "app:1"):  # type: ignore[no-untyped-def]
    b = pod(name).set("metadata.ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]).label(app=owner)
    b["spec"]["containers"][0]["image"] = image
    return b.req(cpu="100m")


def anti(preferred: bool = False) -> dict:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}
    if preferred:
        return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": term}]}}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def prefers(value: str) -> dict:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": [value]}]}}]}}


def spread_anyway() -> list:
    return [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app": "web"}}}]


def nodes(n: int = 3) -> list:
    return [node(f"n{i}").label(**{HOST: f"n{i}"}).zone("abc"[i - 1]) for i in range(1, n + 1)]


ANTI = nodes() + [owned(f"w{i}", image=f"app:{i}").set("spec.affinity", anti()).on("n1") for i in (1, 2)]
DUPS = nodes() + [owned(f"w{i}").on("n1") for i in (1, 2, 3)]
DUPS_NOWHERE = [node("n1"), node("n2").taint("gpu", effect="NoSchedule")] + [owned(f"w{i}").on("n1") for i in (1, 2)]
PREFERRED = [node("n1").label(disk="hdd"), node("n2").label(disk="ssd"),
             owned("w1").set("spec.affinity", prefers("ssd")).on("n1")]
SOFT_ANTI = nodes() + [owned(f"w{i}", image=f"app:{i}").set("spec.affinity", anti(True)).on("n1") for i in (1, 2)]
SOFT_SPREAD = nodes() + [owned(f"w{i}", image=f"app:{i}").set("spec.topologySpreadConstraints", spread_anyway())
                         .on(f"n{n}") for i, n in enumerate((1, 1, 1, 2), 1)]

CASES = [
    ("two pods whose required anti-affinity matches each other on one node: one moves", ANTI, False,
     "InterPodAntiAffinity", 2, 1),
    ("three replicas on one of three nodes: two move, one to each other node", DUPS, False, "Duplicates", 2, 2),
    ("duplicates with no other node they could use stay", DUPS_NOWHERE, False, "Duplicates", 0, 0),
    ("a preferred node affinity is not repaired without --soft", PREFERRED, False, None, 0, 0),
    ("with --soft a pod moves to the node its preferred node affinity weighs most", PREFERRED, True,
     "PreferredNodeAffinity", 1, 1),
    ("with --soft two pods whose preferred anti-affinity matches each other part", SOFT_ANTI, True,
     "PreferredAntiAffinity", 2, 1),
    ("with --soft a ScheduleAnyway spread at skew 3 comes back within maxSkew 1", SOFT_SPREAD, True,
     "ScheduleAnywaySpread", 3, 1),
]


@pytest.mark.parametrize("objs,soft,kind,before,moves", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_repair_fixes_each_kind_in_the_fewest_moves(objs, soft, kind, before, moves):
    plan = plan_reschedule(state_of(*objs), default_config(), "repair", time_limit=5, soft=soft)
    assert plan.moves == moves and plan.consistent
    if kind is not None:
        assert plan.before.violations[kind] == before and plan.after.violations[kind] == 0
        assert all(m.reason.startswith(f"repair: {kind}") for w in plan.staging.waves for m in w.moves)
    assert set(plan.after.violations.values()) <= {0}
    tiers = [t.name for t in plan.certificate.tiers if t.name.startswith("objective:")]
    assert tiers == ["objective:repair"] + (["objective:repair-soft"] if soft else [])


def test_soft_without_repair_is_refused():
    with pytest.raises(InputError, match="--soft repairs preferences: it needs --goal repair"):
        plan_reschedule(state_of(*PREFERRED), default_config(), "consolidate", time_limit=2, soft=True)


def _term(objs: list, encode) -> tuple:  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    model = BatchModel(build_batch(state, default_config(), movable=True), default_config())
    lin = Linear()
    encode(model, lin)
    return state, lambda node_of: lin.value(variable_values(model, np.asarray(node_of)))


def _moved(state, **where: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    node_of = state.pod_node.copy()
    for name, n in where.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[n]
    return node_of


def _anti_count(state, node_of, preferred=False) -> int:  # type: ignore[no-untyped-def]
    return sum(anti_affinity_violated(state, p, node_of, node_of >= 0, preferred) for p in range(len(state.pods)))


PAIRS = [
    ("required anti-affinity, both pods together", ANTI, encode_anti_affinity, {}, _anti_count),
    ("required anti-affinity, the pods apart", ANTI, encode_anti_affinity, {"w2": "n2"}, _anti_count),
    ("preferred anti-affinity, both pods together", SOFT_ANTI, lambda m, lin: encode_anti_affinity(m, lin, True), {},
     lambda s, n: _anti_count(s, n, True)),
    ("duplicates, three on one node", DUPS, encode_duplicates, {},
     lambda s, n: len(over_average(s, n, np.ones(len(s.pods), bool)))),
    ("duplicates, two on one node", DUPS, encode_duplicates, {"w3": "n2"},
     lambda s, n: len(over_average(s, n, np.ones(len(s.pods), bool)))),
    ("duplicates, spread out", DUPS, encode_duplicates, {"w2": "n2", "w3": "n3"},
     lambda s, n: len(over_average(s, n, np.ones(len(s.pods), bool)))),
    ("preferred node affinity, on the worse node", PREFERRED, encode_preferred_affinity, {},
     lambda s, n: sum(preferred_affinity_violated(s, p, int(n[p])) for p in range(len(s.pods)))),
    ("preferred node affinity, on the best node", PREFERRED, encode_preferred_affinity, {"w1": "n2"},
     lambda s, n: sum(preferred_affinity_violated(s, p, int(n[p])) for p in range(len(s.pods)))),
]


@pytest.mark.parametrize("objs,encode,where,count", [c[1:] for c in PAIRS], ids=[c[0] for c in PAIRS])
def test_each_cp_sat_term_is_the_descheduler_predicate_on_the_same_placement(objs, encode, where, count):
    state, value = _term(objs, encode)
    node_of = _moved(state, **where)
    assert value(node_of) == count(state, node_of)


EXAMPLE = str(Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-repair-descheduler.yaml")


@pytest.mark.parametrize("soft,moves,pods", [
    (False, 3, ["db", "web", "web"]), (True, 4, ["db", "web", "web", "cache"])],
    ids=["the drifted example's repair moves one db and two web pods",
         "with --soft cache-0 moves to the ssd node it prefers too"])
def test_the_descheduler_repair_example(tmp_path, capsys, soft, moves, pods):
    out_path = tmp_path / "plan.json"
    code, out, _ = run_cli(["reschedule", EXAMPLE, "--goal", "repair", "--time-limit", "10", "--output",
                            str(out_path)] + (["--soft"] if soft else []), capsys)
    assert code == 0
    assert "violations[InterPodAntiAffinity]: 2 -> 0" in out and "violations[Duplicates]: 2 -> 0" in out
    assert ("violations[PreferredNodeAffinity]: 1 -> 0" in out) == soft
    plan = json.loads(out_path.read_text())
    evictions = [e for w in plan["waves"] for e in w["evictions"]]
    assert len(evictions) == moves and sorted(e["pod"].split("/")[1].split("-")[0] for e in evictions) == sorted(pods)
    assert plan["cycles"] == [] and all(e["to"] == e["predicted"] for e in evictions)
    if soft:
        assert plan["placements"]["default/cache-0"] == "node-b"
