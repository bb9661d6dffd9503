"""DynamicResources in greedy mode and the optimal re-check, on hand-built clusters: what a run does with
devices beyond what the recorded traces exercise (errors, preemption victims' claims, not-modelled
selectors, an answer that gives one device twice)."""
from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import trace_of
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster
from optisched.optimal.check import check_placement
from optisched.profile import default_config

DRIVER = "gpu.example.com"


def node(name: str, cpu: str = "8") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def gpus(node_name: str, count: int, model: str = "a100", pool: str | None = None) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": pool or node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": model}},
                                  "capacity": {"memory": {"value": "40Gi"}}} for i in range(count)]}}


def device_class(name: str = "gpu", expression: str = f'device.driver == "{DRIVER}"') -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def template(name: str = "one-gpu", cls: str = "gpu", count: int = 1) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": cls, "count": count}}]}}}}


def pod(name: str, *, cpu: str = "1", claim_template: str | None = "one-gpu", node_name: str | None = None,
        priority: int = 0, created: int = 0) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
                  "priority": priority}
    if claim_template:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim_template}]
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}",
                         "creationTimestamp": f"2026-01-01T00:00:{created:02d}Z"},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def run(objects: list[dict]):
    state = compile_cluster(cluster_from_objects(objects))
    config = default_config()
    res = GreedyScheduler(state, config, GreedyOptions(tie_break=TieBreak.FIRST, requeue=False)).run()
    return state, res, json.loads(json.dumps(trace_of(res, config, TieBreak.FIRST)))


def test_each_pod_gets_its_own_gpu_and_the_third_finds_none():
    _, _, trace = run([node("n1"), gpus("n1", 2), device_class(), template(),
                         pod("a", created=1), pod("b", created=2), pod("c", created=3)])
    got = [tuple(d for a in c.get("allocations", {}).values() for d in a["devices"]) for c in trace["cycles"]]
    assert got[:2] == [(f"{DRIVER}/n1/gpu-0",), (f"{DRIVER}/n1/gpu-1",)]  # the allocator's first solution
    last = trace["cycles"][2]
    assert last["chosen"] is None
    assert last["filterFailures"]["n1"] == {"code": "UnschedulableAndUnresolvable", "plugin": "DynamicResources",
                                             "reasons": ["cannot allocate all claims"]}
    assert last["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims. still not schedulable")
    held = {tuple(v["devices"]): v.get("reservedFor") for v in trace["claims"].values() if v["devices"]}
    assert held == {(f"{DRIVER}/n1/gpu-0",): ["ml/a"], (f"{DRIVER}/n1/gpu-1",): ["ml/b"]}


def bound_with_gpu(name: str, node_name: str, device: str, *, cpu: str = "1") -> list[dict]:
    """A running pod whose claim (made from the template) holds ``device``."""
    p = pod(name, cpu=cpu, node_name=node_name)
    p["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu-abcde"}]
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": f"{name}-gpu-abcde", "namespace": "ml",
                      "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": f"uid-{name}",
                                           "controller": True}]},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
         "status": {"allocation": {"devices": {"results": [
             {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": device}]}},
             "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{name}"}]}}
    return [p, c]


def test_a_preemption_victim_frees_its_gpu_for_the_next_pod():
    """The victim leaves its claim's reservedFor; reserved for nobody, the claim is deallocated (the
    resourceclaim controller's part), so a later pod gets the device."""
    objects = [node("n1", cpu="2"), gpus("n1", 1), device_class(), template(),
               *bound_with_gpu("low", "n1", "gpu-0", cpu="2"),
               pod("high", cpu="1", claim_template=None, priority=100, created=1),
               pod("later", cpu="1", created=2)]
    state, res, trace = run(objects)
    names = {p.key: i for i, p in enumerate(state.pods)}
    assert names["ml/low"] in res.preempted
    assert res.placements()["ml/high"] == "n1" and res.placements()["ml/later"] == "n1"
    later = next(c for c in trace["cycles"] if c["pod"] == "ml/later" and c["chosen"])
    assert [a["devices"] for a in later["allocations"].values()] == [[f"{DRIVER}/n1/gpu-0"]]
    assert trace["claims"]["ml/low-gpu-abcde"] == {"devices": [], "requests": []}


def test_a_gpu_held_by_a_lower_priority_pod_is_never_preempted_for():
    """Every DynamicResources rejection is UnschedulableAndUnresolvable: preemption never tries the node."""
    _, res, trace = run([node("n1"), gpus("n1", 1), device_class(), template(),
                         *bound_with_gpu("low", "n1", "gpu-0"), pod("high", priority=100)])
    [cyc] = trace["cycles"]
    assert cyc["chosen"] is None and cyc["preemption"] is None and not res.preempted
    assert cyc["message"] == ("0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
                              "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_a_cel_runtime_error_aborts_the_cycle_with_upstreams_words():
    cls = device_class(expression='device.attributes["gpu.example.com"].nosuch == "x"')
    _, _, trace = run([node("n1"), gpus("n1", 1), cls, template(), pod("a")])
    [cyc] = trace["cycles"]
    assert cyc["chosen"] is None and cyc["preemption"] is None
    assert cyc["message"].startswith('running "DynamicResources" filter plugin: class gpu: selector #0: '
                                     "CEL runtime error: no such key: nosuch")


def test_a_selector_outside_what_is_implemented_makes_the_pod_not_handled():
    cls = device_class(expression='ip("10.0.0.1").family() == 4')
    state, res, trace = run([node("n1"), gpus("n1", 1), cls, template(), pod("a")])
    assert not trace["cycles"] and res.placements()["ml/a"] is None
    [(row, why)] = res.skipped.items()
    assert state.pods[row].key == "ml/a" and why.startswith("not modelled: CEL selector")


def test_a_missing_device_class_is_prefilter_with_its_name():
    _, _, trace = run([node("n1"), gpus("n1", 1), template(cls="nope"), pod("a")])
    [cyc] = trace["cycles"]
    assert cyc["filterFailures"]["n1"]["reasons"] == ["request gpu: device class nope does not exist"]
    assert "no new claims to deallocate" in cyc["message"]


def test_the_recheck_refuses_an_answer_that_gives_one_gpu_to_two_pods():
    state = compile_cluster(cluster_from_objects([node("n1"), node("n2"), gpus("n1", 1), gpus("n2", 1),
                                                  device_class(), template(), pod("a"), pod("b")]))
    rows = [i for i, p in enumerate(state.pods)]
    both_on_one = np.full(len(state.pods), -1, dtype=np.int64)
    both_on_one[rows] = 0
    violations = check_placement(state, default_config(), both_on_one)
    assert [(v.pod, v.node, v.plugin, v.reasons) for v in violations] == [
        ("ml/b", "n1", "DynamicResources", ("cannot allocate all claims",))]
    one_each = both_on_one.copy()
    one_each[rows[1]] = 1
    assert check_placement(state, default_config(), one_each) == []


def solve(objects: list[dict], seconds: float = 10.0):
    from optisched.optimal.solve import OptimalOptions, solve_optimal

    state = compile_cluster(cluster_from_objects(objects))
    res = solve_optimal(state, default_config(), OptimalOptions(time_limit=seconds, seed=1))
    return state, res


def test_optimal_mode_counts_the_gpus_the_batch_takes_from_each_other():
    """Two GPUs, three pods asking one each: the answer places two and passes the re-check, the devices
    counted in the model rather than refused afterwards."""
    state, res = solve([node("n1"), gpus("n1", 2), device_class(), template(),
                        pod("a", created=1), pod("b", created=2), pod("c", created=3)])
    assert res.violations == [] and res.certificate.source == "solver"  # not greedy's placement kept
    assert int((res.node_of[state.pending] >= 0).sum()) == 2


def first_available(name: str = "prefer-a100") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "firstAvailable": [
                {"name": "a100", "deviceClassName": "gpu-a100"}, {"name": "any", "deviceClassName": "gpu"}]}]}}}}


A100_ONLY = device_class("gpu-a100", f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "a100"')


def test_optimal_mode_counts_the_gpus_of_firstavailable_requests():
    """One a100 and one l4, three pods asking an a100 else any GPU: the solver's own answer places two, one on
    each device's subrequest."""
    state, res = solve([node("n1"), gpus("n1", 1, model="a100", pool="a"),
                        {**gpus("n1", 1, model="l4", pool="b"), "metadata": {"name": "n1-l4"}},
                        device_class(), A100_ONLY, first_available(),
                        *[pod(f"p{i}", claim_template="prefer-a100", created=i) for i in range(3)]])
    assert res.violations == [] and res.certificate.source == "solver"
    assert int((res.node_of[state.pending] >= 0).sum()) == 2


def test_optimal_mode_counts_matched_pairs_by_the_value_they_share():
    """Four GPUs, two of one model and one each of two others; pods asking two GPUs of one model: only one
    pair exists, though four GPUs would count two. The solver's own answer places one pod."""
    models = ["a100", "a100", "l4", "h100"]
    slice_ = gpus("n1", 4)
    for d, m in zip(slice_["spec"]["devices"], models):
        d["attributes"]["model"] = {"string": m}
    pair = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "pair", "namespace": "ml"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": 2}}],
                "constraints": [{"matchAttribute": f"{DRIVER}/model"}]}}}}
    state, res = solve([node("n1"), slice_, device_class(), pair,
                        *[pod(f"p{i}", claim_template="pair", created=i) for i in range(2)]])
    assert res.violations == [] and res.certificate.source == "solver"
    assert int((res.node_of[state.pending] >= 0).sum()) == 1


def test_optimal_mode_puts_the_picky_pod_where_only_it_fits():
    """An a100 on one node, an l4 on the other, a pod taking any GPU and one only an a100: the solver's
    answer (not greedy's, kept as a fallback) gives each pod a device it may use."""
    a100_only = device_class("gpu-a100", f'device.driver == "{DRIVER}" && '
                                         f'device.attributes["{DRIVER}"].model == "a100"')
    objects = [node("n1"), node("n2"), gpus("n1", 1, model="a100"), gpus("n2", 1, model="l4"),
               device_class(), a100_only, template(), template("a100", cls="gpu-a100"),
               pod("any", created=1), pod("picky", claim_template="a100", created=2)]
    _, greedy, _ = run(objects)
    state, res = solve(objects)
    assert res.violations == [] and res.certificate.source == "solver"
    assert int((res.node_of[state.pending] >= 0).sum()) == 2
    assert int((res.node_of[state.pending] >= 0).sum()) >= sum(
        1 for p in greedy.state.pending if greedy.snapshot.node_of[p] >= 0)


@st.composite
def dra_clusters(draw):
    n_nodes = draw(st.integers(1, 3))
    objects = [device_class(), device_class("gpu-a100", f'device.driver == "{DRIVER}" && '
                                                        f'device.attributes["{DRIVER}"].model == "a100"'),
               template(), template("a100", cls="gpu-a100"), template("two", count=2), first_available()]
    for i in range(n_nodes):
        objects.append(node(f"n{i}", cpu=str(draw(st.integers(1, 4)))))
        count = draw(st.integers(0, 3))
        if count:
            objects.append(gpus(f"n{i}", count, model=draw(st.sampled_from(["a100", "l4"]))))
    for j in range(draw(st.integers(1, 5))):
        objects.append(pod(f"p{j}", claim_template=draw(st.sampled_from(["one-gpu", "a100", "two", "prefer-a100",
                                                                          None])),
                           priority=draw(st.sampled_from([0, 100])), created=j))
    return objects


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dra_clusters())
def test_optimal_answers_with_devices_pass_the_recheck_and_place_at_least_greedys_count(objects):
    """On generated DRA clusters: every answer passes the re-check (its devices allocated pod by pod), and
    places at least greedy mode's count at every priority level."""
    _, greedy, _ = run(objects)
    state, res = solve(objects, seconds=5)
    assert res.violations == []
    for level in (0, 100):
        rows = [p for p in state.pending if state.pod_priority[p] == level]
        assert sum(res.node_of[p] >= 0 for p in rows) >= sum(greedy.snapshot.node_of[p] >= 0 for p in rows)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dra_clusters())
def test_a_single_pod_fits_in_optimal_mode_exactly_where_greedy_mode_places_it(objects):
    """One pending pod at a time: optimal mode places it iff kube-scheduler does (the same nodes allowed)."""
    pending = [o for o in objects if o["kind"] == "Pod"]
    others = [o for o in objects if o["kind"] != "Pod"]
    for p in pending:
        _, greedy, _ = run([*others, p])
        state, res = solve([*others, p], seconds=5)
        assert (res.node_of[state.pending] >= 0).tolist() == (greedy.snapshot.node_of[state.pending] >= 0).tolist()


def test_an_evicted_pods_replacement_gets_a_new_claim_and_its_old_gpu_is_free():
    """A replay of evictions (reschedule, drain): the ReplicaSet's new pod does not inherit the claim the
    garbage collector deleted with the old one; it is allocated anew, and the old device is free."""
    from optisched.plans.landing import predict_landing

    web, its_claim = bound_with_gpu("web", "n1", "gpu-0")
    web["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                                           "uid": "uid-rs", "controller": True}]
    objects = [node("n1"), node("n2"), gpus("n1", 1), gpus("n2", 1), device_class(), template(), web, its_claim,
               pod("next", created=9)]
    state = compile_cluster(cluster_from_objects(objects))
    target = state.pod_node.copy()
    row = state.pod_index["ml/web"]
    target[row] = state.node_index["n2"]
    landing = predict_landing(state, default_config(), target)
    assert landing.landed["ml/web"] is not None
    placed = landing.replay.placements()
    assert placed["ml/next"] is not None and placed["ml/next"] != placed["ml/web"]  # both GPUs are usable
    from optisched.plugins.dynamicresources.claims import claim_book

    book = claim_book(landing.replay.snapshot)
    assert "ml/web-gpu-abcde" not in book.claims  # deleted with the evicted pod
    assert len(book.allocated_devices) == 2
