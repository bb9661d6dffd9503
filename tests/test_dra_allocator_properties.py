"""Invariants of the structured allocator on small random instances, checked against a brute-force search.

An allocation returned uses a device at most once within a claim, shares one across claims only with a
later claim's adminAccess request, never takes an ``allocated`` device without adminAccess, gives each
request its count (``All``: exactly the node's devices its class and selectors match), and keeps every
``matchAttribute`` constraint. When the allocator finds nothing, enumerating every choice of subrequests
and devices finds nothing either. ``All`` stays out of second subrequests, where v1.35.4's allocator loses
the subrequest index (see the upstream table), and out of claims with constraints, where a constraint that
breaks an ``All`` request is an error upstream, not a failed search.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from helpers.dra import FakeCEL, all_req, claim, device_class, first, match, node, req, rslice, sub
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.model.dra import Device, ResourceClaim, ResourceSlice
from optisched.plugins.dynamicresources.allocator import Allocator

DOMAIN = "example.com"
KIND_X = f'device.attributes["{DOMAIN}"].kind == "x"'
CLASSES = {
    "class-a": device_class("class-a", "driver-a"),
    "class-b": device_class("class-b", "driver-b"),
    "any": device_class("any"),
}


@st.composite
def instances(draw: st.DrawFn) -> dict:
    slices: list[ResourceSlice] = []
    for driver in draw(st.sampled_from([["driver-a"], ["driver-a", "driver-b"]])):
        for pool in range(draw(st.integers(1, 2))):
            devs = [
                {
                    "name": f"dev-{i}",
                    "attributes": {
                        f"{DOMAIN}/numa": {"int": draw(st.integers(0, 1))},
                        f"{DOMAIN}/kind": {"string": draw(st.sampled_from("xy"))},
                    },
                }
                for i in range(draw(st.integers(0, 3)))
            ]
            slices.append(rslice(f"{driver}-{pool}", "node-1", f"p{pool}", driver, *devs))
    slices.append(rslice("elsewhere", "node-2", "p9", "driver-a", {"name": "dev-0"}))
    ids = [f"{s.spec.driver}/{s.spec.pool.name}/{d.name}" for s in slices[:-1] for d in s.spec.devices]
    allocated = frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))) if ids else frozenset()
    claims = []
    for c in range(draw(st.integers(1, 2))):
        constrained = draw(st.booleans())
        requests: list[dict] = []
        for r in range(draw(st.integers(1, 2))):
            cls = draw(st.sampled_from(sorted(CLASSES)))
            sels = [KIND_X] if draw(st.booleans()) else []
            admin = draw(st.sampled_from([None, None, True]))
            shape = draw(st.sampled_from(["count", "count", "all", "first"]))
            if shape == "all" and not constrained:
                requests.append(all_req(f"r{r}", cls, *sels, admin=admin))
            elif shape == "first":
                subs = [
                    sub(
                        "s0",
                        cls,
                        draw(st.integers(1, 3)),
                        *sels,
                        all_mode=not constrained and draw(st.booleans()),
                    ),
                    sub("s1", draw(st.sampled_from(sorted(CLASSES))), draw(st.integers(1, 2))),
                ]
                requests.append(first(f"r{r}", *subs))
            else:
                requests.append(req(f"r{r}", cls, draw(st.integers(1, 3)), *sels, admin=admin))
        constraints = []
        if constrained:
            named = draw(st.sampled_from([[], ["r0"], ["r0", "r1"]]))
            constraints.append(
                match(f"{DOMAIN}/numa", *[n for n in named if n in {q["name"] for q in requests}])
            )
        claims.append(claim(f"c{c}", *requests, constraints=constraints))
    return {"slices": slices, "claims": claims, "allocated": allocated}


def _variants(r: Any) -> list[tuple[str, Any, bool]]:
    """(result name, request spec, adminAccess) for each way of satisfying a request."""
    if r.exactly is not None:
        return [(r.name, r.exactly, bool(r.exactly.admin_access))]
    return [(f"{r.name}/{s.name}", s, False) for s in r.first_available]


def _selectable(spec: Any, driver: str, d: Device, cel: FakeCEL) -> bool:
    exprs = [s.cel.expression for s in CLASSES[spec.device_class_name].spec.selectors]
    exprs += [s.cel.expression for s in spec.selectors]
    return all(cel.matches(e, driver, d) for e in exprs)


def _node_devices(slices: list[ResourceSlice]) -> list[tuple[str, str, Device]]:
    return [
        (f"{s.spec.driver}/{s.spec.pool.name}/{d.name}", s.spec.driver, d)
        for s in slices
        if s.spec.node_name == "node-1"
        for d in s.spec.devices
    ]


def _constraint_ok(c: Any, picks: list[tuple[str, str, Device]]) -> bool:
    named = set(c.requests)
    values = set()
    for result_name, _, d in picks:
        base = result_name.split("/")[0]
        if named and base not in named and result_name not in named:
            continue
        attr = d.attributes.get(c.match_attribute)
        if attr is None:
            return False
        values.add((attr.type, attr.value))
    return len(values) <= 1


def brute_force(inst: dict) -> bool:
    """Whether any choice of subrequests and devices satisfies every claim."""
    cel, devs = FakeCEL(), _node_devices(inst["slices"])
    claims: list[ResourceClaim] = inst["claims"]
    taken: list[tuple[int, str, bool]] = []  # (claim index, device id, adminAccess) so far

    def free(ci: int, did: str, admin: bool) -> bool:
        if admin:
            return all(c != ci or d != did for c, d, _ in taken)
        return did not in inst["allocated"] and all(d != did for _, d, _ in taken)

    def claim_step(ci: int) -> bool:
        if ci == len(claims):
            return True
        return request_step(ci, 0, [])

    def request_step(ci: int, ri: int, picks: list[tuple[str, str, Device]]) -> bool:
        cl = claims[ci]
        if ri == len(cl.spec.devices.requests):
            if not all(_constraint_ok(c, picks) for c in cl.spec.devices.constraints):
                return False
            return claim_step(ci + 1)
        for name, spec, admin in _variants(cl.spec.devices.requests[ri]):
            matching = [(did, d) for did, drv, d in devs if _selectable(spec, drv, d, cel)]
            if spec.allocation_mode == "All":
                options = [tuple(matching)] if matching else []
            else:
                options = list(combinations(matching, spec.count))
            for option in options:
                if not all(free(ci, did, admin) for did, _ in option):
                    continue
                for did, _ in option:
                    taken.append((ci, did, admin))
                ok = request_step(ci, ri + 1, picks + [(name, did, d) for did, d in option])
                del taken[len(taken) - len(option) :]
                if ok:
                    return True
        return False

    return claim_step(0)


def _check_allocation(inst: dict, results: list) -> None:
    cel, devs = FakeCEL(), {did: (drv, d) for did, drv, d in _node_devices(inst["slices"])}
    seen: list[tuple[int, str, bool]] = []
    for ci, (cl, res) in enumerate(zip(inst["claims"], results, strict=True)):
        ids = [d.id for d in res.devices.results]
        assert len(ids) == len(set(ids)), "a device twice in one claim"
        for d in res.devices.results:
            assert d.id in devs, "a device from another node"
            if not d.admin_access:
                assert d.id not in inst["allocated"], "an allocated device without adminAccess"
                assert all(did != d.id for _, did, _ in seen), "a device shared with an earlier claim"
            seen.append((ci, d.id, bool(d.admin_access)))
        picks = []
        for r in cl.spec.devices.requests:
            got = [d for d in res.devices.results if d.request.split("/")[0] == r.name]
            names = {d.request for d in got}
            assert len(names) == 1, f"request {r.name} got {names}"
            (name,) = names
            spec = next(s for n, s, _ in _variants(r) if n == name)
            for d in got:
                assert _selectable(spec, *devs[d.id], cel)
            if spec.allocation_mode == "All":
                want = {did for did, (drv, dev) in devs.items() if _selectable(spec, drv, dev, cel)}
                assert {d.id for d in got} == want
            else:
                assert len(got) == spec.count
            picks += [(d.request, d.id, devs[d.id][1]) for d in got]
        for c in cl.spec.devices.constraints:
            assert _constraint_ok(c, picks)
        assert res.node_selector is not None and res.node_selector.node_selector_terms[0].match_fields[
            0
        ].values == ["node-1"]


@settings(max_examples=300, deadline=None)
@given(instances())
def test_allocations_keep_the_rules_and_none_means_no_solution(inst: dict) -> None:
    allocator = Allocator(CLASSES, inst["slices"], FakeCEL())
    results = allocator.allocate(node("node-1"), inst["claims"], inst["allocated"])
    if results is None:
        assert not brute_force(inst)
    else:
        _check_allocation(inst, results)
        assert brute_force(inst)


def test_brute_force_finds_what_the_allocator_misses_only_where_it_should() -> None:
    """The oracle itself: a solvable instance is solvable, an impossible one is not."""
    slices = [rslice("s", "node-1", "p0", "driver-a", {"name": "dev-0"}, {"name": "dev-1"})]
    two: dict[str, Any] = {
        "slices": slices,
        "claims": [claim("c", req("r0", "class-a", 2))],
        "allocated": frozenset(),
    }
    three = {**two, "claims": [claim("c", req("r0", "class-a", 3))]}
    taken = {**two, "allocated": frozenset({"driver-a/p0/dev-0"})}
    assert brute_force(two) and not brute_force(three) and not brute_force(taken)
    assert brute_force({**taken, "claims": [claim("c", req("r0", "class-a", 2, admin=True))]})
    assert not brute_force(
        {
            **two,
            "claims": [claim("c", req("r0", "class-a", 2, admin=True), req("r1", "class-a", 1, admin=True))],
        }
    )
