"""The DynamicResources plugin's own upstream tables, translated: ``TestPlugin``, ``Test_computesScore``,
``TestNormalizeScore`` and ``TestGatherAllocatedState`` of
``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go``.

v1.35.4's test file is not at hand; the rows come from v1.36.2's, and each row's expectation is the one
v1.35.4's ``dynamicresources.go`` gives (where the two releases differ, the row says so). Only rows that run
with 1.35's default feature gates are translated (DRAPrioritizedList and DRAAdminAccess on; extended
resources, device taints, consumable capacity, binding conditions and partitionable devices off). The
allocator's own table is in ``tests/test_dra_allocator.py``.

Each row builds upstream's objects (``workerNode``, ``workerNodeSlice``, ``pendingClaim``, ...) as API
dicts, loads them with ``cluster_from_objects`` and asserts what optisched observably does: the plugin's
PreEnqueue, PreFilter, Filter per node, PostFilter and Score (:func:`points`), and the greedy run's cycle and
the claims after binding (:func:`run`). Upstream's comparison of the claims ignores which device a result
names; here the device is the one optisched's canonical walk picks (docs/dra.md), asserted as well.

| table (v1.36.2) | rows | translated | not translated |
|---|---:|---:|---:|
| ``TestPlugin`` | 86 | 30 | 56 |
| ``Test_computesScore`` | 8 | 8 | 0 |
| ``TestNormalizeScore`` | 7 | 7 | 0 |
| ``TestGatherAllocatedState`` | 8 | 4 | 4 (DRAConsumableCapacity on: shared ids, consumed capacity) |
| ``TestAllocatorSelection`` | 3 | 0 | 3 (which Go implementation a gate set picks; optisched has one) |
| ``TestIsSchedulableAfterClaimChange``, ``TestIsSchedulableAfterPodChange`` | all | 0 | all (queueing
  hints on claim and pod events; a run changes claims only by binding and deletion, docs/dra.md) |

Upstream's ``verify`` compares a failing status by its message alone; the codes asserted here are those
the code returns. Rows hold for v1.35.4 as v1.36.2 states them, except where the row says otherwise:
``empty`` (the PostFilter message the row leaves out), ``wrong-claim`` (1.35 writes "pod"),
``CEL-runtime-error-for-one-of-three-nodes`` (1.35 aborts the cycle),
``claim-with-request-with-unknown-device-class`` (the code) and ``mix-of-allocated-and-unallocated-claims``
(1.35's ``computeScore`` fails); those assert 1.35's outcome.
The in-flight rows take upstream's in-flight claim as one an earlier pod of the run allocated.

``TestPlugin`` rows not translated (56), and why:

- 1.36 features, absent from v1.35.4 (20): PodGroup claims (``podgroup-claim-reference-feature-disabled-
  reserves-for-pod``, ``podgroup-claim-reference``, ``podgroup-claim-template``, ``podgroup-with-resources``,
  ``podgroup-with-resources-feature-disabled-reserves-for-pod``, ``bind-podgroup-failure``,
  ``postfilter-unreserve-podgroup``, ``postfilter-skip-unreserve-podgroup-feature-disabled``,
  ``postfilter-deallocate-podgroup``, ``postfilter-skip-unreserve-podgroup-when-pods-active``,
  ``postfilter-skip-unreserve-podgroup-other-claim-deallocated``, ``reserved-okay-podgroup``), the allocation
  timestamp (``dont-add-allocation-timestamp``, ``add-allocation-timestamp``,
  ``add-allocation-timestamp-failure``), node-allocatable resources (``node-allocatable-resource-multiplier``,
  ``-capacitykey``, ``-capacitykey-and-multiplier``, ``-insufficient-resources-with-multiplier``,
  ``-insufficient-with-capacityKey``).
- A gate other than 1.35's default (29): extended resources on (``empty-with-extended-resources-enabled``
  and the 14 ``extended-resource-*``, ``non-DRA-extended-resource-*`` and ``implicit-extended-resource-*``
  rows), device taints on (``tainted-device-enabled``), binding conditions on
  (``bind-claim-with-binding-conditions``, ``bind-failure-concurrent-deallocation``,
  ``bound-claim-with-succeeded-binding-conditions``, ``bound-claim-with-failed-binding``,
  ``bound-claim-with-timed-out-binding``, ``prebind-fail-with-binding-timeout``,
  ``bound-claim-with-mixed-binding-conditions``, ``bound-claim-without-binding-conditions``,
  ``multi-claims-binding-conditions-all-success``, ``multi-claims-binding-conditions-one-fail``), a default
  gate off (``request-admin-access-without-DRAAdminAccess-featuregate``,
  ``claim-with-prioritized-list-feature-disabled``, ``DRA-disabled``).
- What a run does not model (7): the claim's finalizer and the API server's answers in PreBind
  (``with-resources-has-finalizer``, ``with-resources-finalizer-gets-removed``,
  ``with-resources-finalizer-gets-added``), Unreserve after a failed bind or PreBind (``bind-failure``,
  ``skip-bind``), the Filter's timeout and cancellation (``timeout``, ``canceled``: the allocator always
  finishes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from optisched.framework import Code, CycleState, FilterAborted, default_normalize
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import trace_of
from optisched.model.dra import ResourceClaim
from optisched.model.loader import cluster_from_objects
from optisched.model.snapshot import Snapshot
from optisched.model.state import compile_cluster
from optisched.plugins.dynamicresources.claims import claim_book
from optisched.plugins.dynamicresources.plugin import DynamicResources, _first_available_score
from optisched.profile import default_config

# upstream's names (dynamicresources_test.go)
NODE, NODE2, NODE3 = "worker", "worker-2", "worker-3"
DRIVER = "some-driver"
POD, POD_UID, NS = "my-pod", "1234", "default"
RESOURCE = "my-resource"
CLAIM, CLAIM2 = f"{POD}-{RESOURCE}", f"{POD}-{RESOURCE}-2"
CLASS = "my-resource-class"
ATTR = "healthy"
BROKEN = f'device.attributes["{DRIVER}"].{ATTR}'  # brokenSelector: not set for workerNode
UU = "UnschedulableAndUnresolvable"
OPTIONS = GreedyOptions(tie_break=TieBreak.FIRST, requeue=False)


# ---------------------------------------------------------------------------------------- objects
def node(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def device(name: str, healthy: bool | None = None) -> dict:
    d: dict = {"name": name}
    if healthy is not None:
        d["attributes"] = {ATTR: {"bool": healthy}}
    return d


def resource_slice(node_name: str, *devices: dict, driver: str = DRIVER) -> dict:
    """``st.MakeResourceSlice(nodeName, driver).Device(...)``: a pool of one slice named after the node."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{driver}"},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
                     "devices": list(devices)}}


WORKER_NODE_SLICE = resource_slice(NODE, device("instance-1"))
WORKER_NODE2_SLICE = resource_slice(NODE2, device("instance-1", healthy=True))
WORKER_NODE3_SLICE = resource_slice(NODE3, device("instance-1", healthy=True))


def device_class(selector: str | None = None) -> dict:
    spec = {"selectors": [{"cel": {"expression": selector}}]} if selector else {}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS},
            "spec": spec}


def exact(index: int, cls: str = CLASS, *, selector: str | None = None, admin: bool = False) -> dict:
    """``Request(className)``: ``req-<index>``, ExactCount 1."""
    ex: dict = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}
    if selector:
        ex["selectors"] = [{"cel": {"expression": selector}}]
    if admin:
        ex["adminAccess"] = True
    return {"name": f"req-{index}", "exactly": ex}


def sub(name: str, count: int = 1, cls: str = CLASS, selector: str | None = None) -> dict:
    """``st.SubRequest`` / ``st.SubRequestWithSelector``."""
    s: dict = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selector:
        s["selectors"] = [{"cel": {"expression": selector}}]
    return s


def first_available(index: int, *subs: dict) -> dict:
    return {"name": f"req-{index}", "firstAvailable": list(subs)}


def result(device_name: str = "instance-1", request: str = "req-1", *, admin: bool = False,
           node_name: str = NODE, driver: str = DRIVER) -> dict:
    r: dict = {"request": request, "driver": driver, "pool": node_name, "device": device_name}
    if admin:
        r["adminAccess"] = True
    return r


def on_node(node_name: str = NODE) -> dict:
    """The allocator's node selector: ``metadata.name In [node]`` as a field selector."""
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}


def allocation(*results: dict, selector: dict | None = None) -> dict:
    """``allocationResult`` and kin: devices on ``worker`` and the node selector of ``worker``."""
    return {"devices": {"results": list(results) or [result()]},
            "nodeSelector": selector if selector is not None else on_node()}


def claim(name: str = CLAIM, *requests: dict, owner: str | None = POD_UID, alloc: dict | None = None,
          reserved: bool = False, deleting: bool = False) -> dict:
    """``claim`` (no owner), ``pendingClaim`` (owned by the pod), ``allocatedClaim`` (``alloc``),
    ``inUseClaim`` (``reserved`` for the pod)."""
    meta: dict = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": owner,
                                    "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict = {}
    if alloc is not None:
        status["allocation"] = alloc
    if reserved:
        status["reservedFor"] = [{"resource": "pods", "name": POD, "uid": POD_UID}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": list(requests) or [exact(1)]}}, "status": status}


def pending_claim(*requests: dict, name: str = CLAIM) -> dict:
    return claim(name, *requests)


def allocated_claim(*requests: dict, name: str = CLAIM, alloc: dict | None = None, **kw: Any) -> dict:
    return claim(name, *requests, alloc=alloc if alloc is not None else allocation(), **kw)


OTHER_CLAIM = claim("not-my-claim", owner=None)
OTHER_ALLOCATED_CLAIM = claim("not-my-claim", owner=None, alloc=allocation())


def pod(*entries: dict, statuses: list[dict] | None = None, name: str = POD, uid: str = POD_UID) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "uid": uid},
            "spec": {"containers": [{"name": "c", "image": "i"}], "resourceClaims": list(entries)},
            "status": {"phase": "Pending", "resourceClaimStatuses": statuses or []}}


def by_name(claim_name: str = CLAIM, entry: str = RESOURCE) -> dict:
    return {"name": entry, "resourceClaimName": claim_name}


POD_WITH_CLAIM_NAME = pod(by_name())
POD_WITH_CLAIM_TEMPLATE = pod({"name": RESOURCE, "resourceClaimTemplateName": CLAIM})
POD_WITH_CLAIM_TEMPLATE_IN_STATUS = pod({"name": RESOURCE, "resourceClaimTemplateName": CLAIM},
                                        statuses=[{"name": RESOURCE, "resourceClaimName": CLAIM}])
POD_WITH_TWO_CLAIM_NAMES = pod(by_name(), by_name(CLAIM2, f"{RESOURCE}-2"))


# ---------------------------------------------------------------------------------------- harness
@dataclass
class Points:
    """What the plugin's points answer for ``my-pod``, as upstream's test calls them in order."""

    preenqueue: str | None = None
    prefilter: tuple[str, tuple[str, ...]] | None = None
    filter: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # failing nodes only
    filter_error: str | None = None
    postfilter: tuple[str, list[str]] | None = None
    scores: dict[str, int] = field(default_factory=dict)
    normalized: dict[str, int] = field(default_factory=dict)


def points(objects: list[dict], pod_key: str = f"{NS}/{POD}") -> Points:
    """PreEnqueue; PreFilter; Filter on every node; PostFilter when no node passes, else Score and
    NormalizeScore over the passing nodes (upstream's ``testPlugin``, which scores only when two or more
    pass: the one-node rows' scores here are computeScore's answer, never compared with upstream's)."""
    state = compile_cluster(cluster_from_objects(objects))
    snapshot = Snapshot(state)
    profile = default_config().profiles[0]
    plugin = DynamicResources(snapshot, profile)
    row = next(i for i, p in enumerate(state.pods) if p.key == pod_key)
    out = Points(preenqueue=plugin.pre_enqueue(row))
    if out.preenqueue is not None:
        return out
    cycle = CycleState(row, snapshot, profile)
    status = plugin.pre_filter(cycle)
    out.prefilter = (status.code.label, status.reasons)
    if not status.ok:  # Skip as well: upstream's table calls PostFilter for the pod without claims too
        out.postfilter = plugin.post_filter(cycle)
        return out
    nodes = np.arange(state.num_nodes, dtype=np.int64)
    try:
        res = plugin.filter(cycle, nodes)
    except FilterAborted as e:
        out.filter_error = str(e)
        return out
    for i in np.flatnonzero(res.code).tolist():
        out.filter[state.node_names[i]] = (Code(int(res.code[i])).label, res.reasons_of(i))
    passing = nodes[res.code == 0]
    if len(passing) == 0:
        out.postfilter = plugin.post_filter(cycle)
        return out
    raw = plugin.score(cycle, passing)
    norm = plugin.normalize(cycle, raw)
    out.scores = {state.node_names[int(n)]: int(s) for n, s in zip(passing, raw)}
    out.normalized = {state.node_names[int(n)]: int(s) for n, s in zip(passing, norm)}
    return out


@dataclass
class Run:
    cycle: dict  # the last cycle of my-pod in the trace
    claims: dict[str, dict]  # claim name -> {"allocation": ..., "reservedFor": [...]} from the ClaimBook
    placement: str | None


def run(objects: list[dict], pod_key: str = f"{NS}/{POD}") -> Run:
    """A greedy run (first node on ties, no requeue): my-pod's cycle, and every claim after binding."""
    state = compile_cluster(cluster_from_objects(objects))
    config = default_config()
    res = GreedyScheduler(state, config, OPTIONS).run()
    trace = json.loads(json.dumps(trace_of(res, config, TieBreak.FIRST)))
    cycles = [c for c in trace["cycles"] if c["pod"] == pod_key]
    book = claim_book(res.snapshot)
    claims = {c.obj.metadata.name: {
        "allocation": c.allocation.model_dump(by_alias=True, exclude_none=True) if c.allocation else None,
        "reservedFor": list(c.reserved_for)} for c in book.claims.values()}
    return Run(cycles[-1] if cycles else {}, claims, res.placements()[pod_key])


def dump(alloc: dict) -> dict:
    """An allocation as the model writes it back (defaults filled in), to compare with the ClaimBook."""
    parsed = ResourceClaim.model_validate(claim(alloc=alloc)).status.allocation
    assert parsed is not None
    return parsed.model_dump(by_alias=True, exclude_none=True)


def bound(r: Run, name: str = CLAIM, alloc: dict | None = None) -> None:
    """After PreBind: the claim holds ``alloc`` (``allocationResult`` by default) and is reserved for my-pod
    (``inUseClaim.Status``)."""
    assert r.placement == NODE
    assert r.claims[name] == {"allocation": dump(alloc or allocation()), "reservedFor": [POD_UID]}


# ---------------------------------------------------------------------------------------- TestPlugin
def test_empty():
    """PreFilter Skip; PostFilter ``no new claims to deallocate`` (v1.36.2's row writes no message: its
    ``verify`` compares a failing status by message containment only, so the row accepts any)."""
    objects = [node(NODE), pod()]
    objects[-1]["spec"].pop("resourceClaims")
    got = points(objects)
    assert got.prefilter == ("SKIP", ())
    assert got.postfilter == ("no new claims to deallocate", [])
    assert run(objects).placement == NODE


@pytest.mark.parametrize("name, the_pod", [("claim-reference", POD_WITH_CLAIM_NAME),
                                           ("claim-template", POD_WITH_CLAIM_TEMPLATE_IN_STATUS)],
                         ids=["claim-reference", "claim-template"])
def test_allocated_claim_is_reserved_at_prebind(name, the_pod):
    """An allocated claim (no slice needed) passes the Filter; PreBind reserves it for the pod and leaves
    the other claim alone."""
    objects = [node(NODE), allocated_claim(), OTHER_CLAIM, the_pod]
    got = points(objects)
    assert got.prefilter == ("SUCCESS", ()) and got.filter == {} and got.filter_error is None
    r = run(objects)
    bound(r)
    assert r.claims["not-my-claim"] == {"allocation": None, "reservedFor": []}


@pytest.mark.parametrize("objects, reason", [
    ([node(NODE), allocated_claim(), OTHER_CLAIM, POD_WITH_CLAIM_TEMPLATE],
     'pod "default/my-pod": ResourceClaim not created yet'),
    ([node(NODE), allocated_claim(deleting=True), POD_WITH_CLAIM_TEMPLATE_IN_STATUS],
     'resourceclaim "my-pod-my-resource" is being deleted'),
    # v1.35.4's resourceclaim.IsForPod says "pod"; v1.36.2 writes "Pod"
    ([node(NODE), claim(alloc=allocation(), owner=POD_UID + "123"), POD_WITH_CLAIM_TEMPLATE_IN_STATUS],
     "ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod (pod is not owner)"),
], ids=["missing-claim", "deleted-claim", "wrong-claim"])
def test_preenqueue(objects, reason):
    """PreEnqueue is UnschedulableAndUnresolvable: the pod is never attempted (not handled, with the
    reason)."""
    assert points(objects).preenqueue == reason
    state = compile_cluster(cluster_from_objects(objects))
    res = GreedyScheduler(state, default_config(), OPTIONS).run()
    assert [c.pod for c in res.cycles] == []
    assert list(res.skipped.values()) == [reason]


def test_no_resources():
    """No slice: ``cannot allocate all claims`` on the node; PostFilter ``still not schedulable``."""
    objects = [node(NODE), pending_claim(), device_class(), POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.filter == {NODE: (UU, ["cannot allocate all claims"])}
    assert got.postfilter == ("still not schedulable", [])
    r = run(objects)
    assert r.placement is None
    assert r.cycle["filterFailures"][NODE]["reasons"] == ["cannot allocate all claims"]
    assert r.cycle["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims. "
                                         "still not schedulable")
    assert r.claims[CLAIM] == {"allocation": None, "reservedFor": []}


@pytest.mark.parametrize("row", ["with-resources", "timeout_disabled", "timeout_zero"])
def test_with_resources(row):
    """The pending claim gets ``instance-1`` of the worker's slice, with the node's selector, and is reserved
    for the pod. ``timeout_disabled`` (DRASchedulerFilterTimeout off) and ``timeout_zero`` (``filterTimeout:
    0``, no limit) expect the same: optisched's allocator runs without a time limit in every case."""
    objects = [node(NODE), pending_claim(), device_class(), WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.filter == {} and got.scores == {NODE: 0}
    bound(run(objects))


def test_exhausted_resources_in_informer_cache():
    """The only device is held by another claim: ``cannot allocate all claims``, ``still not schedulable``."""
    objects = [node(NODE), pending_claim(), OTHER_ALLOCATED_CLAIM, device_class(), WORKER_NODE_SLICE,
               POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.filter == {NODE: (UU, ["cannot allocate all claims"])}
    assert got.postfilter == ("still not schedulable", [])
    assert run(objects).placement is None


def other_pod() -> dict:
    """The pod whose cycle put ``not-my-claim`` in flight: in a greedy run its binding completes before the
    next cycle, so upstream's in-flight claim is the claim it allocated (created first, it goes first)."""
    p = pod(by_name("not-my-claim", "other"), name="other", uid="other-uid")
    p["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return p


def test_exhausted_resources_in_flight_claim():
    objects = [node(NODE), pending_claim(), OTHER_CLAIM, device_class(), WORKER_NODE_SLICE, other_pod(),
               {**POD_WITH_CLAIM_NAME, "metadata": {**POD_WITH_CLAIM_NAME["metadata"],
                                                    "creationTimestamp": "2026-01-01T00:00:01Z"}}]
    r = run(objects)
    assert r.claims["not-my-claim"]["allocation"] == dump(allocation())
    assert r.placement is None
    assert r.cycle["filterFailures"][NODE] == {"code": UU, "plugin": "DynamicResources",
                                               "reasons": ["cannot allocate all claims"]}
    assert r.cycle["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims. "
                                         "still not schedulable")


def test_other_resources_in_flight_claim():
    """The claim in flight holds ``instance-1-other``, a device the slice does not list: instance-1 is
    free."""
    other = claim("not-my-claim", owner=None, alloc=allocation(result("instance-1-other")))
    objects = [node(NODE), pending_claim(), other, device_class(), WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME]
    assert points(objects).filter == {}
    bound(run(objects))


def test_tainted_device_disabled():
    """DRADeviceTaints off (1.35's default, and the only value optisched models): the taint is ignored and the
    device allocated."""
    tainted = json.loads(json.dumps(WORKER_NODE_SLICE))
    tainted["spec"]["devices"][0]["taints"] = [{"key": "taint-key", "value": "taint-value",
                                                "effect": "NoSchedule"}]
    objects = [node(NODE), pending_claim(), device_class(), tainted, POD_WITH_CLAIM_NAME]
    assert points(objects).filter == {}
    bound(run(objects))


def test_request_admin_access_with_DRAAdminAccess_featuregate():
    """Admin access ignores that the device is allocated to another claim; the result says adminAccess."""
    objects = [node(NODE), pending_claim(exact(1, admin=True)), OTHER_ALLOCATED_CLAIM, device_class(),
               WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME]
    assert points(objects).filter == {}
    bound(run(objects), alloc=allocation(result(admin=True)))


def test_structured_ignore_allocated_admin_access():
    """A device another claim holds with admin access is free for a normal request."""
    other = claim("not-my-claim", exact(1, admin=True), owner=None, alloc=allocation(result(admin=True)))
    objects = [node(NODE), pending_claim(), other, device_class(), WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME]
    assert points(objects).filter == {}
    bound(run(objects))


CLAIM_CEL_ERROR = f"claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: {ATTR}"
CLASS_CEL_ERROR = f"class my-resource-class: selector #0: CEL runtime error: no such key: {ATTR}"


@pytest.mark.parametrize("objects, error", [
    ([node(NODE), pending_claim(exact(1, selector=BROKEN)), device_class(), WORKER_NODE_SLICE,
      POD_WITH_CLAIM_NAME], CLAIM_CEL_ERROR),
    ([node(NODE), pending_claim(), device_class(BROKEN), WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME],
     CLASS_CEL_ERROR),
    ([node(NODE), node(NODE2), pending_claim(exact(1, selector=BROKEN)), device_class(), WORKER_NODE_SLICE,
      WORKER_NODE2_SLICE, POD_WITH_CLAIM_NAME], CLAIM_CEL_ERROR),
    # v1.36.2 makes this node UnschedulableAndUnresolvable and fails PreScore with "filter node worker: ...";
    # v1.35.4's Filter returns the allocator's error as an Error status, which aborts the cycle
    ([node(NODE), node(NODE2), node(NODE3), pending_claim(exact(1, selector=BROKEN)), device_class(),
      WORKER_NODE_SLICE, WORKER_NODE2_SLICE, WORKER_NODE3_SLICE, POD_WITH_CLAIM_NAME], CLAIM_CEL_ERROR),
], ids=["claim-parameters-CEL-runtime-error", "class-parameters-CEL-runtime-error",
        "CEL-runtime-error-for-one-of-two-nodes", "CEL-runtime-error-for-one-of-three-nodes"])
def test_cel_runtime_error_aborts_the_cycle(objects, error):
    """The worker's device lacks the attribute: the Filter's Error ends the cycle, no PostFilter, no node."""
    assert points(objects).filter_error == error
    r = run(objects)
    assert r.placement is None
    assert r.cycle["message"] == f'running "DynamicResources" filter plugin: {error}'
    assert r.cycle.get("preemption") is None and r.claims[CLAIM]["allocation"] is None


@pytest.mark.parametrize("objects, reason", [
    ([node(NODE), pending_claim(), POD_WITH_CLAIM_NAME],
     f"request req-1: device class {CLASS} does not exist"),
    # v1.36.2's row writes code Unschedulable, but its verify compares a failing status by message only;
    # validateDeviceClass returns statusUnschedulable, UnschedulableAndUnresolvable (as for missing-class)
    ([node(NODE), claim(CLAIM, exact(1, "does-not-exist"), owner=None), POD_WITH_CLAIM_NAME],
     "request req-1: device class does-not-exist does not exist"),
    ([node(NODE), claim(CLAIM, first_available(1, sub("subreq-1", cls="does-not-exist")), owner=None),
      POD_WITH_CLAIM_NAME], "request req-1/subreq-1: device class does-not-exist does not exist"),
], ids=["missing-class", "claim-with-request-with-unknown-device-class",
        "claim-with-prioritized-list-unknown-device-class"])
def test_prefilter_missing_class(objects, reason):
    got = points(objects)
    assert got.prefilter == (UU, (reason,))
    assert got.postfilter == ("no new claims to deallocate", [])
    r = run(objects)
    assert r.placement is None and r.cycle["message"].startswith(f"0/1 nodes are available: {reason}.")


def test_wrong_topology():
    """An allocation for nodes with a label no node has: ``resourceclaim not available on the node``;
    PostFilter deallocates the claim (reserved for nobody)."""
    wrong = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "no-such-label", "operator": "In", "values": ["no-such-value"]}]}]}
    objects = [node(NODE), allocated_claim(alloc={"nodeSelector": wrong}), POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.filter == {NODE: (UU, ["resourceclaim not available on the node"])}
    assert got.postfilter == ("deallocation of ResourceClaim completed", [f"{NS}/{CLAIM}"])
    r = run(objects)
    assert r.placement is None and r.cycle["deallocated"] == [f"{NS}/{CLAIM}"]
    assert r.cycle["message"].startswith("0/1 nodes are available: 1 resourceclaim not available on the "
                                         "node. deallocation of ResourceClaim completed")
    assert r.claims[CLAIM] == {"allocation": None, "reservedFor": []}


def test_good_topology():
    """An allocation for ``kubernetes.io/hostname In [worker]``: the pod binds, the claim is reserved."""
    good = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}]}
    objects = [node(NODE), allocated_claim(alloc={"nodeSelector": good}), POD_WITH_CLAIM_NAME]
    assert points(objects).filter == {}
    bound(run(objects), alloc={"nodeSelector": good})


def test_reserved_okay():
    """A claim allocated and already reserved for the pod: nothing to do, the pod binds, reservedFor once."""
    objects = [node(NODE), allocated_claim(reserved=True), POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.prefilter == ("SUCCESS", ()) and got.filter == {}
    bound(run(objects))


def test_claim_with_prioritized_list():
    objects = [node(NODE), pending_claim(first_available(1, sub("subreq-1"))), device_class(),
               WORKER_NODE_SLICE, POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.filter == {} and got.scores == {NODE: 8} and got.normalized == {NODE: 100}
    bound(run(objects), alloc=allocation(result(request="req-1/subreq-1")))


def test_single_claim_prioritized_list_scoring():
    """subreq-1 needs a healthy device: the worker's is (8), worker-2's is not, so it gets subreq-2 (7)."""
    objects = [node(NODE), node(NODE2),
               pending_claim(first_available(1, sub("subreq-1", selector=BROKEN), sub("subreq-2"))),
               device_class(),
               resource_slice(NODE, device("instance-1", healthy=True)),
               resource_slice(NODE2, device("instance-1", healthy=False)), POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.scores == {NODE: 8, NODE2: 7} and got.normalized == {NODE: 100, NODE2: 87}
    r = run(objects)
    assert r.cycle["scores"][NODE2]["normalized"]["DynamicResources"] == 87
    bound(r, alloc=allocation(result(request="req-1/subreq-1")))


def instances(node_name: str, n: int) -> dict:
    """A slice of ``instance-1`` ... ``instance-n`` on the node."""
    return resource_slice(node_name, *(device(f"instance-{i}") for i in range(1, n + 1)))


def test_multiple_claims_prioritized_list_scoring():
    """claim 2 takes 4, 3, 2 or 1 devices: worker (4 devices) gives subreq-2 with 3 (8 + 7 = 15), worker-2
    (2 devices) subreq-4 with 1 (8 + 5 = 13), worker-3 (1 device) cannot hold both claims."""
    claim2 = pending_claim(first_available(1, sub("subreq-1", 4), sub("subreq-2", 3), sub("subreq-3", 2),
                                           sub("subreq-4", 1)), name=CLAIM2)
    objects = [node(NODE), node(NODE2), node(NODE3), pending_claim(first_available(1, sub("subreq-1"))),
               claim2, device_class(), instances(NODE, 4), instances(NODE2, 2), instances(NODE3, 1),
               POD_WITH_TWO_CLAIM_NAMES]
    got = points(objects)
    assert got.filter == {NODE3: (UU, ["cannot allocate all claims"])}
    assert got.scores == {NODE: 15, NODE2: 13} and got.normalized == {NODE: 100, NODE2: 86}
    r = run(objects)
    bound(r, alloc=allocation(result(request="req-1/subreq-1")))
    bound(r, CLAIM2, allocation(*(result(f"instance-{i}", "req-1/subreq-2") for i in (2, 3, 4))))


def test_multiple_requests_prioritized_list_scoring():
    """Two requests of 2-or-1 devices: 4 devices give 8 + 8, 3 give 8 + 7, 2 give 7 + 7."""
    objects = [node(NODE), node(NODE2), node(NODE3),
               pending_claim(first_available(1, sub("subreq-1", 2), sub("subreq-2", 1)),
                             first_available(2, sub("subreq-1", 2), sub("subreq-2", 1))),
               device_class(), instances(NODE, 4), instances(NODE2, 3), instances(NODE3, 2),
               POD_WITH_CLAIM_NAME]
    got = points(objects)
    assert got.scores == {NODE: 16, NODE2: 15, NODE3: 14}
    assert got.normalized == {NODE: 100, NODE2: 93, NODE3: 87}
    bound(run(objects), alloc=allocation(*(result(f"instance-{i}", r) for r, i in
                                           (("req-1/subreq-1", 1), ("req-1/subreq-1", 2),
                                            ("req-2/subreq-1", 3), ("req-2/subreq-1", 4)))))


# ---------------------------------------------------------------------------------------- Test_computesScore
def ranked(request: str, n: int) -> dict:
    """``NamedRequestWithPrioritizedList(request, subreq-1 ... subreq-n)``."""
    return {"name": request, "firstAvailable": [sub(f"subreq-{i}") for i in range(1, n + 1)]}


def claim_of(*requests: dict, alloc: dict | None = None) -> ResourceClaim:
    return ResourceClaim.model_validate(claim("c", *requests, owner=None, alloc=alloc))


def results_of(*requests: str) -> Any:
    from optisched.model.dra import AllocationResult

    return AllocationResult.model_validate({"devices": {"results": [
        {"request": r, "driver": DRIVER, "pool": NODE, "device": "d"} for r in requests]}})


@pytest.mark.parametrize("claims, allocations, want", [
    ([claim_of(ranked("req-1", 1)), claim_of(ranked("req-2", 1))], [], None),
    # v1.36.2 skips an allocated claim and scores 0; v1.35.4 indexes the allocations by claim and fails
    ([claim_of(exact(1), alloc=allocation()), claim_of(exact(2))], [results_of("req-2")], None),
    ([claim_of(ranked("req-1", 1))], [results_of("req-1/subreq-1")], 8),
    ([claim_of(ranked("req-1", 8))], [results_of("req-1/subreq-8")], 1),
    ([claim_of(ranked("req-1", 4), ranked("req-2", 5))], [results_of("req-1/subreq-4", "req-2/subreq-5")], 9),
    ([claim_of(ranked("req-1", 8), ranked("req-2", 1))], [results_of("req-1/subreq-8", "req-2/subreq-1")], 9),
    ([claim_of(ranked("req-1", 8)), claim_of(ranked("req-2", 8))],
     [results_of("req-1/subreq-8"), results_of("req-2/subreq-8")], 2),
    ([claim_of(ranked("req-1", 1)), claim_of(ranked("req-2", 1))],
     [results_of("req-1/subreq-1"), results_of("req-2/subreq-1")], 16),
], ids=["more-claims-than-allocations", "mix-of-allocated-and-unallocated-claims",
        "single-request-only-subrequest-allocated", "single-request-last-subrequest-allocated",
        "multiple-requests-with-middle-subrequests-allocated",
        "multiple-requests-with-top-subrequests-allocated",
        "multiple-claims-with-last-subrequests-allocated", "multiple-claims-with-top-subrequests-allocated"])
def test_computes_score(claims, allocations, want):
    if want is None:
        with pytest.raises(FilterAborted, match="number of allocations .* is smaller than number of claims"):
            _first_available_score(claims, allocations)
    else:
        assert _first_available_score(claims, allocations) == want


# ------------------------------------------------------------------------------ TestGatherAllocatedState
def shared(share: str) -> dict:
    """``allocationResultWithConsumedCapacity``: ``shared-instance`` with a share id and consumed capacity."""
    r = result("shared-instance")
    r.update({"shareID": share, "consumedCapacity": {"my-cap": "1"}})
    return allocation(r)


@pytest.mark.parametrize("claims, want", [
    ([], set()),
    ([allocated_claim()], {f"{DRIVER}/{NODE}/instance-1"}),
    ([allocated_claim(alloc=shared("share-123"))], {f"{DRIVER}/{NODE}/shared-instance"}),
    # the in-flight claim is one more allocated claim here (binding completes before the next cycle)
    ([allocated_claim(), allocated_claim(name="c2", alloc=shared("share-123")),
      allocated_claim(name="c3", alloc=shared("share-456"))],
     {f"{DRIVER}/{NODE}/instance-1", f"{DRIVER}/{NODE}/shared-instance"}),
], ids=["no-claims", "single-allocated-claim", "disabled-single-allocated-claim-with-capacity",
        "disabled-inflight-allocated-claim-with-capacity"])
def test_gather_allocated_state(claims, want):
    """The devices in use (``AllocatedState.AllocatedDevices``), DRAConsumableCapacity off: a shared
    allocation counts its device once, as any other; no share ids are kept."""
    state = compile_cluster(cluster_from_objects([node(NODE), *claims]))
    assert set(claim_book(Snapshot(state)).allocated_devices) == want


# ---------------------------------------------------------------------------------------- TestNormalizeScore
MAX32 = 2**31 - 1


@pytest.mark.parametrize("scores, want", [
    ([], []),
    ([42], [100]),
    ([8, 8], [100, 100]),
    ([MAX32, MAX32], [100, 100]),
    ([MAX32, 0], [100, 0]),
    ([99, 98, 97], [100, 98, 97]),
    ([MAX32, MAX32 - 1, 1, 0], [100, 99, 0, 0]),
], ids=["empty", "single-score", "all-same", "all-same-very-large", "max-and-min-values", "mid-value",
        "large-spread-lost-precision"])
def test_normalize_score(scores, want):
    plugin = DynamicResources.__new__(DynamicResources)
    got = plugin.normalize(None, np.array(scores, dtype=np.int64))  # type: ignore[arg-type]
    assert got.tolist() == want
    assert default_normalize(np.array(scores, dtype=np.int64), reverse=False).tolist() == want
