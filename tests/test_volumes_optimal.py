"""Optimal mode under the volume rules: every answer passes the greedy volume filters, and a pod whose
claim is bound to a zonal PV never leaves the PV's zone (generated clusters with StatefulSet volumes)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from test_optimal_exact import greedy_allowed, model_allowed, only

from optisched.datasets.generate import GenerateSpec, generate
from optisched.datasets.storage import VolumeSpec, add_volumes
from optisched.model.loader import cluster_from_objects
from optisched.model.state import ZONE_LABEL, compile_cluster
from optisched.model.storage import catalog, pod_claims
from optisched.optimal.check import check_answer
from optisched.optimal.classes import build_batch
from optisched.optimal.model import BatchModel
from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.profile import default_config


def solve_checked(state, config, **options):  # type: ignore[no-untyped-def]
    """``solve_optimal``, failing when the solver's own answer (before any fallback to greedy) breaks a
    greedy filter."""
    from unittest import mock

    import optisched.optimal.certify as certify_module

    seen: list = []

    def spy(*args, **kw):  # type: ignore[no-untyped-def]
        out = check_answer(*args, **kw)
        seen.append(out)
        return out

    with mock.patch.object(certify_module, "check_answer", spy):
        result = solve_optimal(state, config, OptimalOptions(time_limit=10, workers=1, **options))
    assert all(v == [] for v in seen), seen
    return result


def _pv_zone(state, pod) -> str | None:  # type: ignore[no-untyped-def]
    cat = catalog(state.cluster)
    for c in pod_claims(pod):
        pvc = cat.claim(pod.metadata.namespace, c.name)
        pv = cat.volumes.get(pvc.spec.volume_name) if pvc and pvc.spec.volume_name else None
        if pv is not None and ZONE_LABEL in pv.metadata.labels:
            return pv.metadata.labels[ZONE_LABEL]
    return None


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), limit=st.sampled_from([1, 2, 25]))
def test_optimal_answers_pass_the_volume_filters_and_keep_zonal_pods_in_their_zone(seed: int, limit: int) -> None:
    objs = add_volumes(generate(GenerateSpec(nodes=6, pods=30, seed=seed)), VolumeSpec(csi_limit=limit), seed)
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    result = solve_checked(state, config)
    zones = state.label(ZONE_LABEL)
    for p in np.flatnonzero(result.node_of >= 0).tolist():
        want = _pv_zone(state, state.pods[p])
        if want is not None:
            assert zones.values[zones.codes[result.node_of[p]]] == want, state.pods[p].key


@st.composite
def zonal_clusters(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    """Nodes in two or three zones; pods (some running) whose claims are bound to PVs of one zone, some on
    a CSI driver with a small attach limit; the zones' capacities differ, so the volume zone matters."""
    from builders import node, pod
    from storage_builders import ZONE, claims, csi_node, pv, pvc

    zones = ["a", "b", "c"][: draw(st.integers(2, 3))]
    limit = draw(st.integers(1, 3))
    objs: list = []
    names = []
    for z in zones:
        for j in range(draw(st.integers(1, 2))):
            n = f"n{z}{j}"
            names.append(n)
            objs += [node(n, cpu=str(draw(st.integers(1, 4)))).zone(z), csi_node(n, ebs_csi_aws_com=limit)]
    for i in range(draw(st.integers(1, 7))):
        z = draw(st.sampled_from(zones))
        vol = pv(f"pv{i}").label(ZONE, z).affinity(ZONE, z).claimed(f"c{i}")
        if draw(st.booleans()):
            vol = vol.csi("ebs.csi.aws.com", f"h{i}")
            if draw(st.booleans()):  # attached (or still detaching) somewhere, maybe where no pod uses it
                objs.append({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": f"va{i}"},
                             "spec": {"attacher": "ebs.csi.aws.com", "nodeName": draw(st.sampled_from(names)),
                                      "source": {"persistentVolumeName": f"pv{i}"}}})
        p = claims(pod(f"p{i}").req(cpu=draw(st.sampled_from(["500m", "1", "2"]))), f"c{i}")
        if draw(st.integers(0, 3)) == 0:  # an inline EBS volume, counted as migrated to ebs.csi.aws.com
            # h0 / h1: the same handle as the CSI PVs pv0 / pv1, so one volume may come from both sources
            p["spec"]["volumes"].append({"name": "inline", "awsElasticBlockStore": {"volumeID": f"h{i % 2}"}})
        running = [n for n in names if n.startswith(f"n{z}")]
        if draw(st.booleans()):
            p = p.on(draw(st.sampled_from(running)))
        objs += [vol, pvc(f"c{i}").bound(f"pv{i}"), p]
    return objs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=zonal_clusters(), movable=st.booleans())
def test_no_plan_takes_a_pod_out_of_its_volume_zone(objs: list[dict], movable: bool) -> None:
    state = compile_cluster(cluster_from_objects(objs))
    config = default_config()
    result = solve_checked(state, config, movable=movable)
    zones = state.label(ZONE_LABEL)
    for p in np.flatnonzero(result.node_of >= 0).tolist():
        assert zones.values[zones.codes[result.node_of[p]]] == _pv_zone(state, state.pods[p]), state.pods[p].key


def test_generated_volumes_are_off_by_default() -> None:
    objs = generate(GenerateSpec(nodes=6, pods=30, seed=1))
    assert not any(o["kind"] in ("PersistentVolumeClaim", "StorageClass") for o in objs)
    with_volumes = add_volumes(generate(GenerateSpec(nodes=6, pods=30, seed=1)), VolumeSpec(), 1)
    assert any(o["kind"] == "PersistentVolumeClaim" for o in with_volumes)


@pytest.mark.parametrize("seed", [0, 7])
def test_a_moved_zonal_pod_stays_in_its_zone_when_running_pods_may_move(seed: int) -> None:
    objs = add_volumes(generate(GenerateSpec(nodes=6, pods=30, seed=seed)), VolumeSpec(), seed)
    state = compile_cluster(cluster_from_objects(objs))
    result = solve_checked(state, default_config(), movable=True)
    zones = state.label(ZONE_LABEL)
    for p in np.flatnonzero(result.node_of >= 0).tolist():
        want = _pv_zone(state, state.pods[p])
        if want is not None:
            assert zones.values[zones.codes[result.node_of[p]]] == want, state.pods[p].key


def test_statefulset_example_keeps_each_broker_in_its_volume_zone() -> None:
    from pathlib import Path

    import optisched

    path = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "statefulset-volumes.yaml"
    placed = optisched.schedule(optisched.load([str(path)])).placements()
    assert placed["data/kafka-0"].startswith("node-a") and placed["data/kafka-1"].startswith("node-b")
    assert placed["data/kafka-2"][5] in "ab"  # provisioning is allowed in eu-west-1a and eu-west-1b only


@pytest.mark.parametrize("plugin", ["VolumeZone", "NodeVolumeLimits", "VolumeRestrictions"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=zonal_clusters())
def test_exact_volume_encodings_allow_what_the_greedy_filter_allows(plugin: str, objs: list[dict]) -> None:
    state = compile_cluster(cluster_from_objects(objs))
    assume(len(state.pending) == 1)
    config = only(plugin)
    assert model_allowed(state, config, state.pending[0]) == greedy_allowed(state, config, state.pending[0])


def test_two_pending_pods_do_not_count_on_one_free_local_pv() -> None:
    """Each node has one free local PV; three pods with WaitForFirstConsumer claims fit CPU-wise on one node,
    yet the optimal plan must spread them, one per PV (kube assumes the first pod's PV)."""
    from builders import node, pod
    from storage_builders import claims, pv, pvc, storage_class

    objs = [storage_class("local", provisioner="kubernetes.io/no-provisioner")]
    for n in ("n0", "n1", "n2"):
        objs += [node(n, cpu="8" if n == "n0" else "1"), pv(f"pv-{n}").cls("local").affinity("kubernetes.io/hostname", n)]
    for i in range(3):
        objs += [pvc(f"c{i}").cls("local"), claims(pod(f"p{i}").req(cpu="900m"), f"c{i}")]
    state = compile_cluster(cluster_from_objects(objs))
    result = solve_checked(state, default_config())
    assert sorted(result.node_of[state.pending].tolist()) == [0, 1, 2]
    model = BatchModel(build_batch(state, default_config()), default_config())
    on_n0 = [v for cv in model.vars for n, v in zip(cv.arr_nodes.tolist(), cv.arr_vars) if n == 0]
    model.cp.add(cp_model.LinearExpr.sum(on_n0) >= 2)
    assert cp_model.CpSolver().solve(model.cp) == cp_model.INFEASIBLE


@st.composite
def disk_clusters(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    """Pods mounting a few shared in-tree disks (read-only or not) and ReadWriteOncePod claims."""
    from builders import node, pod
    from storage_builders import claims, disk, pvc

    names = [f"n{i}" for i in range(draw(st.integers(1, 3)))]
    objs: list = [node(n) for n in names] + [pvc(f"rwop{i}", modes=("ReadWriteOncePod",)) for i in range(2)]
    for i in range(draw(st.integers(1, 5))):
        p = pod(f"p{i}")
        source = draw(st.sampled_from(["gcePersistentDisk", "awsElasticBlockStore", "claim"]))
        if source == "claim":
            p = claims(p, f"rwop{draw(st.integers(0, 1))}")
        else:
            field = "pdName" if source == "gcePersistentDisk" else "volumeID"
            p = disk(p, source, draw(st.booleans()), **{field: f"d{draw(st.integers(0, 1))}"})
        if draw(st.booleans()):
            p = p.on(draw(st.sampled_from(names)))
        objs.append(p)
    return objs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=disk_clusters())
def test_optimal_answers_respect_disk_conflicts_and_read_write_once_pod_claims(objs: list[dict]) -> None:
    state = compile_cluster(cluster_from_objects(objs))
    config = only("VolumeRestrictions")
    solve_checked(state, config)
    assume(len(state.pending) == 1)
    assert model_allowed(state, config, state.pending[0]) == greedy_allowed(state, config, state.pending[0])


@pytest.mark.parametrize("plugin", ["VolumeZone", "NodeVolumeLimits", "VolumeRestrictions", "VolumeBinding"])
def test_a_pod_whose_claim_is_missing_gets_no_node_in_the_batch_model(plugin: str) -> None:
    from builders import node, pod
    from storage_builders import claims, pvc

    state = compile_cluster(cluster_from_objects([node("n0"), pvc("other"), claims(pod("p"), "gone")]))
    config = only(plugin)
    assert greedy_allowed(state, config, state.pending[0]) == set()
    assert model_allowed(state, config, state.pending[0]) == set()


@pytest.mark.parametrize("seed,limit", [(11, 2), (12, 25)])
def test_vectorized_preemption_decides_as_the_reference_path_with_volumes(seed: int, limit: int) -> None:
    """Pods with claims now take the vectorized dry runs (VolumeZone and VolumeBinding as fixed verdicts,
    NodeVolumeLimits as a world): the same trace, messages and victims as the reference code."""
    import json

    from test_greedy_equivalence import _first_difference

    from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
    from optisched.greedy.trace import trace_of

    objs = add_volumes(generate(GenerateSpec(nodes=40, pods=300, seed=seed, load=1.2)),
                       VolumeSpec(csi_limit=limit, claim_fraction=0.5), seed)
    nodes = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    attached = [o for o in objs if o["kind"] == "PersistentVolume" and "csi" in o["spec"]][::3]
    objs += [{"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": f"va-{i}"},
              "spec": {"attacher": o["spec"]["csi"]["driver"], "nodeName": nodes[(i * 7) % len(nodes)],
                       "source": {"persistentVolumeName": o["metadata"]["name"]}}} for i, o in enumerate(attached)]
    docs = []
    for reference in (True, False):
        state = compile_cluster(cluster_from_objects(objs))
        options = GreedyOptions(reference=reference)
        res = GreedyScheduler(state, default_config(), options).run()
        doc = trace_of(res, default_config(), options.tie_break)
        doc["messages"] = {state.pods[p].key: m for p, m in res.unschedulable.items()}
        docs.append(json.loads(json.dumps(doc)))
    ref, got = docs
    assert _first_difference(ref["cycles"], got["cycles"]) is None
    assert ref == got


def test_pods_with_ephemeral_volumes_are_classes_of_their_own() -> None:
    """Only web-1's generated claim exists: the batch model may place web-1 and not web-0."""
    from builders import node, pod
    from storage_builders import pvc, storage_class

    eph = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]
    state = compile_cluster(cluster_from_objects([
        node("n0"), storage_class("standard", provisioner="ebs.csi.aws.com"), pvc("web-1-scratch").cls("standard"),
        pod("web-0").set("spec.volumes", eph), pod("web-1").set("spec.volumes", eph)]))
    config = only("VolumeBinding")
    assert model_allowed(state, config, state.pod_index["default/web-1"]) == {0}
    assert model_allowed(state, config, state.pod_index["default/web-0"]) == set()
    assert solve_checked(state, default_config()).placements() == {"default/web-0": None, "default/web-1": "n0"}
