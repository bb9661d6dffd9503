"""what-if --fail-zone / --fail: nodes failing together, their pods deleted by taint-based eviction,
replacements placed by the kube-scheduler replay, and the spread constraints the failed zone blocks."""
from __future__ import annotations

import pytest
from builders import node, pod, run_cli, state_of
from helpers.descheduler import owned

from optisched.errors import InputError
from optisched.profile import default_config
from optisched.whatif.failure import run_failure, zone_nodes

SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]


def _web(name: str, on: str, spread: bool = True):  # type: ignore[no-untyped-def]
    p = owned(pod(name).req(cpu="500m").label(app="web").on(on))
    return p.set("spec.topologySpreadConstraints", SPREAD) if spread else p


def _cluster(spread: bool = True) -> list:
    nodes = [node(f"n-{z}", cpu="4").zone(z) for z in ("a", "b", "c")]
    webs = [_web(f"web-{z}{i}", f"n-{z}", spread) for z in ("a", "b", "c") for i in (1, 2)]
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"minAvailable": 5, "selector": {"matchLabels": {"app": "web"}}}}
    return [*nodes, *webs, pod("bare").req(cpu="100m").on("n-c"), pdb]


@pytest.fixture(scope="module")
def zone_c():  # type: ignore[no-untyped-def]
    state = state_of(*_cluster())
    return run_failure(state, default_config(), zone_nodes(state, "c"))


def test_the_failed_zone_keeps_its_spread_domain_and_blocks_the_replacements(zone_c) -> None:  # type: ignore[no-untyped-def]
    assert zone_c.failed == ["n-c"]
    assert zone_c.landed == {"default/web-c1": None, "default/web-c2": None}
    assert set(zone_c.blocking_spread) == {"default/web-c1", "default/web-c2"}
    assert zone_c.blocking_spread["default/web-c1"] == ["topology.kubernetes.io/zone maxSkew 1"]


def test_bare_pods_are_lost_and_budgets_broken(zone_c) -> None:  # type: ignore[no-untyped-def]
    assert zone_c.lost == ["default/bare"]
    assert zone_c.broken_budgets == {"default/web": 1}  # one disruption allowed, two pods deleted
    assert zone_c.timeline == {0: ["default/web-c1", "default/web-c2", "default/bare"]}


def test_the_capacity_left_counts_only_the_surviving_nodes(zone_c) -> None:  # type: ignore[no-untyped-def]
    assert zone_c.capacity["cpu"] == {"allocatable": 8000, "requested": 2000, "free": 6000}


def test_without_spread_the_replacements_land_in_the_other_zones() -> None:
    state = state_of(*_cluster(spread=False))
    out = run_failure(state, default_config(), ["n-c"])
    assert set(out.landed.values()) <= {"n-a", "n-b"} and None not in out.landed.values()
    assert out.blocking_spread == {} and out.pending == {}
    assert out.capacity["cpu"]["requested"] == 3000


def test_an_unknown_zone_names_the_zones() -> None:
    with pytest.raises(InputError, match="zones: a, b, c"):
        zone_nodes(state_of(*_cluster()), "d")


def test_the_cli_prints_json(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json



    f = tmp_path / "c.yaml"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": json.loads(json.dumps(_cluster()))}))
    code, stdout, _ = run_cli(["what-if", str(f), "--fail-zone", "c", "--json"], capsys)
    assert code == 0
    doc = json.loads(stdout)
    assert doc["failed"] == ["n-c"] and doc["lost"] == ["default/bare"]
    assert set(doc["blockingSpread"]) == {"default/web-c1", "default/web-c2"}


@pytest.mark.parametrize(("spread", "placed"), [
    pytest.param(True, 0, id="with the zone spread the optimum cannot place the replacements either"),
    pytest.param(False, 2, id="without it the optimum places both"),
])
def test_the_optimal_side_beside_the_replay(spread: bool, placed: int) -> None:
    out = run_failure(state_of(*_cluster(spread)), default_config(), ["n-c"], optimal=True)
    assert set(out.optimal) == {"default/web-c1", "default/web-c2"}
    assert sum(v is not None for v in out.optimal.values()) == placed
    assert all(v in (None, "n-a", "n-b") for v in out.optimal.values())


def test_taint_what_if_has_the_optimal_side_too() -> None:
    from optisched.whatif.taint import parse_taint, run_taint

    out = run_taint(state_of(*_cluster(False)), default_config(), ["n-c"], parse_taint("gone:NoExecute"), optimal=True)
    assert set(out.optimal) == {"default/web-c1", "default/web-c2"} and None not in out.optimal.values()
