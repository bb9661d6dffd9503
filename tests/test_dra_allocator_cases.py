"""The structured allocator on the DRA conformance cases: cycle by cycle, the devices v1.35.4 allocated.

Each case of ``shared/conformance/cases-dra`` is replayed from its trace: the claims of each scheduled pod
that still need an allocation (templates' claims made as the trace names them) are allocated on every node
the trace found feasible (a solution exists), on every node DynamicResources rejected with ``cannot
allocate all claims`` (none exists), and on the chosen node, where the devices must be the trace's. The
devices in use follow the trace: allocations kept while a pod reserves the claim, freed when the trace
deallocates a claim or preemption leaves one without consumers. Claims naming a DeviceClass that does not
exist make the allocator raise (the plugin's PreFilter rejects those pods first).
"""

from __future__ import annotations

import gzip
import json

import pytest
from helpers.dra import FakeCEL
from helpers.replay import CASES_DRA

from optisched.model.dra import ResourceClaim
from optisched.model.loader import load_cluster
from optisched.plugins.dynamicresources.allocator import AllocationError, Allocator

CASES = CASES_DRA  # the repository's copy of the conformance suite's DRA cases
CASE_NAMES = sorted(p.name.removesuffix(".yaml") for p in CASES.glob("*.yaml"))
NO_FIT = ["cannot allocate all claims"]


def _claims_of(
    pod_key: str, pod, trace: dict, claims: dict[str, ResourceClaim], templates: dict
) -> list[tuple[str, str]]:
    """(pod claim name, claim key) for each of the pod's claims, making the templates' claims."""
    ns = pod.metadata.namespace or "default"
    out = []
    for pc in pod.spec.resource_claims:
        if pc.resource_claim_name is not None:
            key = f"{ns}/{pc.resource_claim_name}"
        else:
            name = trace["generatedClaims"][pod_key][pc.name]
            key = f"{ns}/{name}"
            if key not in claims:
                tmpl = templates[(ns, pc.resource_claim_template_name)]
                claims[key] = ResourceClaim.model_validate(
                    {
                        "metadata": {"name": name, "namespace": ns},
                        "spec": tmpl.spec.spec.model_dump(by_alias=True, exclude_none=True),
                    }
                )
        out.append((pc.name, key))
    return out


def _check_cycle(
    allocator: Allocator,
    cycle: dict,
    nodes: dict,
    pending: list[ResourceClaim],
    in_use: frozenset[str],
    classes: set[str],
) -> dict[str, list[tuple[str, str]]] | None:
    names = {r.exactly.device_class_name for c in pending for r in c.spec.devices.requests if r.exactly}
    names |= {
        s.device_class_name for c in pending for r in c.spec.devices.requests for s in r.first_available
    }
    if names - classes:
        with pytest.raises(AllocationError, match="could not retrieve device class"):
            allocator.allocate(next(iter(nodes.values())), pending, in_use)
        return None
    for n in cycle.get("feasible", []):
        assert allocator.allocate(nodes[n], pending, in_use) is not None, (cycle["pod"], n)
    for n, failure in cycle.get("filterFailures", {}).items():
        if failure["plugin"] == "DynamicResources" and failure["reasons"] == NO_FIT:
            assert allocator.allocate(nodes[n], pending, in_use) is None, (cycle["pod"], n)
    chosen = cycle.get("chosen")
    if not chosen:
        return None
    got = allocator.allocate(nodes[chosen], pending, in_use)
    assert got is not None
    return {c.key: [(d.request, d.id) for d in r.devices.results] for c, r in zip(pending, got, strict=True)}


@pytest.mark.parametrize("case", CASE_NAMES)
def test_allocations_match_the_trace(case: str) -> None:
    cluster = load_cluster([str(CASES / f"{case}.yaml")])
    with gzip.open(CASES / f"{case}.trace.json.gz", "rt") as f:
        trace = json.load(f)
    nodes = {n.metadata.name: n for n in cluster.nodes}
    pods = {f"{p.metadata.namespace or 'default'}/{p.metadata.name}": p for p in cluster.pods}
    claims = {c.key: c for c in cluster.resource_claims}
    templates = {
        (t.metadata.namespace or "default", t.metadata.name): t for t in cluster.resource_claim_templates
    }
    classes = {c.metadata.name: c for c in cluster.device_classes}
    allocated = {
        c.key: {d.id for d in c.status.allocation.devices.results}
        for c in cluster.resource_claims
        if c.status.allocation is not None
    }
    reserved = {
        c.key: {f"{c.metadata.namespace or 'default'}/{r.name}" for r in c.status.reserved_for}
        for c in cluster.resource_claims
    }
    allocator = Allocator(classes, cluster.resource_slices, FakeCEL())
    checked = 0
    for cycle in trace["cycles"]:
        pod_key = cycle["pod"]
        entries = _claims_of(pod_key, pods[pod_key], trace, claims, templates)
        pending = [claims[k] for _, k in entries if k not in allocated]
        in_use = frozenset(d for devs in allocated.values() for d in devs)
        if pending:
            got = _check_cycle(allocator, cycle, nodes, pending, in_use, set(classes))
            for key, want in (cycle.get("allocations") or {}).items():
                if want.get("existing"):
                    continue
                assert got is not None and got[key] == list(
                    zip(want["requests"], want["devices"], strict=True)
                ), (pod_key, key)
                allocated[key] = set(want["devices"])
                checked += 1
        if cycle.get("chosen"):
            for _, key in entries:
                reserved.setdefault(key, set()).add(pod_key)
        for victim in (cycle.get("preemption") or {}).get("victims", []):
            for key, consumers in reserved.items():
                if victim in consumers:
                    consumers.discard(victim)
                    if not consumers:
                        allocated.pop(key, None)
        for key in cycle.get("deallocated", []):
            allocated.pop(key, None)
    assert checked > 0
    for key, final in trace["claims"].items():
        assert sorted(allocated.get(key, ())) == sorted(final["devices"]), key
