"""Which ResourceClaim each pod entry names, the claims a dump taken before the resourceclaim controller ran
gets, and what binding and deletion do to them (optisched.plugins.dynamicresources.claims)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.model.dra import POD_CLAIM_NAME_ANNOTATION, AllocationResult
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.plugins.dynamicresources.claims import ClaimBook, ClaimNotReady, generated_name
from optisched.profile import default_config

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}
TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"metadata": {"labels": {"claim-template": "one-gpu"}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}


def pod(name: str, claims: list[dict], *, node: str | None = None, statuses: list[dict] | None = None,
        uid: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "i"}], "resourceClaims": claims}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": uid or f"uid-{name}"},
            "spec": spec, "status": {"phase": "Running" if node else "Pending",
                                     "resourceClaimStatuses": statuses or []}}


def claim(name: str, *, owner: str | None = None, allocated: list[str] | None = None,
          reserved: list[str] | None = None, deleting: bool = False) -> dict:
    meta: dict = {"name": name, "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": f"uid-{owner}",
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict = {}
    if allocated is not None:
        status["allocation"] = {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": d}
                                    for d in allocated]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": r, "uid": f"uid-{r}"} for r in reserved]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": status}


def book(*objects: dict) -> tuple[ClaimBook, list[str]]:
    state = compile_cluster(cluster_from_objects([NODE, *objects]))
    return ClaimBook(Snapshot(state)), [p.key for p in state.pods]


def test_a_template_without_a_claim_gets_the_one_the_controller_would_make():
    b, _ = book(TEMPLATE, pod("train", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]))
    [(entry, c)] = b.claims_of(0)
    assert entry == "gpu" and c is not None and c.generated
    assert c.obj.metadata.name.startswith("train-gpu-") and len(c.obj.metadata.name) == len("train-gpu-") + 5
    assert c.obj.metadata.labels == {"claim-template": "one-gpu"}
    assert c.obj.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
    assert c.owner_uid == "uid-train"
    assert [r.name for r in c.obj.spec.devices.requests] == ["gpu"]
    again, _ = book(TEMPLATE, pod("train", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]))
    assert again.claims_of(0)[0][1].key == c.key  # the same name on every run


def test_generated_names_differ_per_pod_and_entry_and_stay_within_the_name_limit():
    b, _ = book(TEMPLATE, pod("a", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                                    {"name": "gpu2", "resourceClaimTemplateName": "one-gpu"}]),
                pod("b", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]))
    names = {c.obj.metadata.name for p in (0, 1) for _, c in b.claims_of(p)}
    assert len(names) == 3
    long = pod("x" * 63, [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    b2, _ = book(TEMPLATE, long)
    assert len(b2.claims_of(0)[0][1].obj.metadata.name) == 63


def test_a_status_entry_names_the_claim_the_controller_made():
    b, _ = book(TEMPLATE, claim("train-gpu-abcde", owner="train"),
                pod("train", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                    statuses=[{"name": "gpu", "resourceClaimName": "train-gpu-abcde"}]))
    [(_, c)] = b.claims_of(0)
    assert c.key == "ml/train-gpu-abcde" and not c.generated


def test_a_status_entry_without_a_name_means_no_claim_is_needed():
    b, _ = book(TEMPLATE, pod("train", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
                              statuses=[{"name": "gpu"}]))
    assert b.claims_of(0) == [("gpu", None)]


@pytest.mark.parametrize("objects,reason", [
    ([pod("p", [{"name": "gpu", "resourceClaimName": "missing"}])],
     'resourceclaim.resource.k8s.io "missing" not found'),
    ([pod("p", [{"name": "gpu", "resourceClaimTemplateName": "no-such-template"}])],
     'pod "ml/p": ResourceClaim not created yet'),
    ([claim("gone", deleting=True), pod("p", [{"name": "gpu", "resourceClaimName": "gone"}])],
     'resourceclaim "gone" is being deleted'),
    ([TEMPLATE, claim("theirs", owner="other"),
      pod("p", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
          statuses=[{"name": "gpu", "resourceClaimName": "theirs"}])],
     "ResourceClaim ml/theirs was not created for pod ml/p (pod is not owner)"),
])
def test_claims_that_are_not_ready_keep_the_pod_out_of_the_queue(objects, reason):
    """``foreachPodResourceClaim``'s errors: PreEnqueue holds the pod back; it is never attempted."""
    b, _ = book(*objects)
    assert b.not_ready(0) == reason
    with pytest.raises(ClaimNotReady, match="."):
        b.claims_of(0)
    state = compile_cluster(cluster_from_objects([NODE, *objects]))
    res = GreedyScheduler(state, default_config(), GreedyOptions(requeue=False)).run()
    pod_row = next(i for i, p in enumerate(state.pods) if p.metadata.name == "p")
    assert res.skipped[pod_row] == reason and not res.cycles


def test_deleting_a_pod_frees_the_claims_reserved_for_nobody_else():
    b, _ = book(claim("solo", allocated=["gpu-0"], reserved=["a"]),
                claim("shared", allocated=["gpu-1"], reserved=["a", "b"]),
                pod("a", [{"name": "x", "resourceClaimName": "solo"}, {"name": "y", "resourceClaimName": "shared"}],
                    node="n1"),
                pod("b", [{"name": "y", "resourceClaimName": "shared"}], node="n1"))
    assert b.allocated_devices == {"gpu.example.com/n1/gpu-0", "gpu.example.com/n1/gpu-1"}
    assert b.delete(0) == ["ml/solo"]
    assert b.allocated_devices == {"gpu.example.com/n1/gpu-1"}
    assert b.claims["ml/shared"].reserved_for == ["uid-b"]
    assert b.delete(1) == ["ml/shared"] and not b.allocated_devices


def test_binding_allocates_the_new_claims_and_reserves_every_claim_for_the_pod():
    b, _ = book(claim("shared", allocated=["gpu-1"], reserved=["a"]), TEMPLATE,
                pod("p", [{"name": "x", "resourceClaimName": "shared"},
                          {"name": "y", "resourceClaimTemplateName": "one-gpu"}]))
    fresh = b.claims_of(0)[1][1]
    result = AllocationResult.model_validate({"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-2"}]}})
    b.bind(0, {fresh.key: result})
    assert fresh.devices == ("gpu.example.com/n1/gpu-2",) and fresh.reserved_for == ["uid-p"]
    assert b.claims["ml/shared"].reserved_for == ["uid-a", "uid-p"]
    assert b.allocated_devices == {"gpu.example.com/n1/gpu-1", "gpu.example.com/n1/gpu-2"}


def test_generated_name_is_the_pod_entry_and_five_characters():
    from optisched.model.objects import Pod

    p = Pod.model_validate(pod("web", []))
    name = generated_name(p, "gpu")
    assert name.startswith("web-gpu-") and len(name) == 13
    assert set(name[-5:]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_a_device_allocated_with_admin_access_is_not_in_use():
    """``foreachAllocatedDevice`` (allocateddevices.go of v1.35.4) skips admin-access results: another claim
    may get the device; freeing the admin claim frees nothing the others hold."""
    admin = claim("admin", allocated=["gpu-0", "gpu-1"], reserved=["a"])
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    b, _ = book(admin, pod("a", [{"name": "x", "resourceClaimName": "admin"}], node="n1"))
    assert b.claims["ml/admin"].devices == ("gpu.example.com/n1/gpu-0", "gpu.example.com/n1/gpu-1")
    assert b.allocated_devices == {"gpu.example.com/n1/gpu-1"}
    assert b.delete(0) == ["ml/admin"] and not b.allocated_devices


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=3),
                min_size=1, max_size=4), st.lists(st.integers(0, 3), max_size=4))
def test_devices_in_use_are_the_non_admin_results_of_the_allocated_claims(claims, deletions):
    """Whatever claims hold, with or without admin access, and whichever pods are deleted, the devices in use
    are those some allocated claim holds without admin access."""
    objects: list[dict] = []
    for i, results in enumerate(claims):
        c = claim(f"c{i}", allocated=[f"gpu-{d}" for d, _ in results], reserved=[f"p{i}"])
        for r, (_, admin) in zip(c["status"]["allocation"]["devices"]["results"], results):
            r["adminAccess"] = admin
        objects += [c, pod(f"p{i}", [{"name": "x", "resourceClaimName": f"c{i}"}], node="n1")]
    b, keys = book(*objects)
    deleted = {i for i in deletions if i < len(claims)}
    for i in sorted(deleted):
        b.delete(keys.index(f"ml/p{i}"))
    want = {f"gpu.example.com/n1/gpu-{d}" for i, results in enumerate(claims) if i not in deleted
            for d, admin in results if not admin}
    assert set(b.allocated_devices) == want
