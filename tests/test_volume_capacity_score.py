"""VolumeBinding's score under StorageCapacityScoring (``volumebinding/scorer.go`` and ``Score`` of
``volume_binding.go``, v1.35.4 = v1.36.2): the score rows of ``TestVolumeBinding`` (v1.36.2's
``volume_binding_test.go``; 1.35.4's code is the same), translated row by row, the gate's defaults and
validation per release, and the score against first principles."""
from __future__ import annotations

import pytest
from builders import node, pod
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_builders import claims, pv, pvc, storage_class
from test_rules import run_score
from test_volume_binding_upstream import capacity, driver

from optisched.errors import InputError
from optisched.profile import parse_config

HOST = "kubernetes.io/hostname"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
NODE_KEY = "nodekey"
WAIT = storage_class("wait-sc", provisioner="kubernetes.io/no-provisioner")
WAIT_HDD = storage_class("wait-hdd-sc", provisioner="kubernetes.io/no-provisioner")
WITH_CAP = storage_class("wait-sc-with-storage-capacity", provisioner="driver-with-storage-capacity")
DRIVER = driver(True, "driver-with-storage-capacity")
TEST_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]  # the test's defaultShapePoint
MAX_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


def profile(shape: list | None = None, version: str = "1.35", gates: dict | None = None):
    gates = {"StorageCapacityScoring": True} if gates is None else gates
    args: dict = {"bindTimeoutSeconds": 300}
    if shape is not None:
        args["shape"] = shape
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]}
    return parse_config(doc, kubernetes_version=version, feature_gates=gates).profiles[0]


def _scores(objs: list, prof) -> list[int]:
    got = run_score("VolumeBinding", objs, profile=prof)
    assert got != "skip"
    return [raw for raw, _ in got.values()]


def _local(sizes: dict[str, tuple[str, ...]], cls: str = "wait-sc", first: int = 0) -> list:
    return [pv(f"pv-{n}-{i}", size).cls(cls).affinity(HOST, f"node-{n}") for n, sz in sizes.items()
            for i, size in enumerate(sz, first)]


def _zonal(shape: list) -> tuple[list, list]:
    nodes = [node(f"zone-{z}-node-{n}").labels({REGION: f"region-{z}", ZONE: f"zone-{z}"}) for z in "abc" for n in "ab"]
    pvs = [pv(f"pv-{z}-{i}", size).cls("wait-sc").affinity(ZONE, f"zone-{z}")
           for z, size in (("a", "200Gi"), ("b", "100Gi")) for i in range(2)]
    return [*nodes, WAIT, *pvs, pvc("pvc-a", "50Gi").cls("wait-sc"), claims(pod("p"), "pvc-a")], shape


def _capacity_nodes(*sizes: str) -> list:
    out: list = []
    for n, size in zip("abc", sizes):
        out += [node(f"node-{n}").label(**{NODE_KEY: f"node-{n}"}),
                capacity(f"node-{n}", "wait-sc-with-storage-capacity", f"node-{n}", size)]
    return out


UPSTREAM = [  # (row of TestVolumeBinding, objects, shape, wantScores)
    ("local volumes with close capacity are preferred",
     [node("node-a"), node("node-b"), node("node-c"), WAIT, *_local({"a": ("200Gi",) * 2, "b": ("100Gi",) * 2}),
      pvc("pvc-a", "50Gi").cls("wait-sc"), claims(pod("p"), "pvc-a")], TEST_SHAPE, [25, 50, 0]),
    ("local volumes with close capacity are preferred (multiple pvcs)",
     [node("node-a"), node("node-b"), node("node-c"), WAIT, WAIT_HDD,
      *_local({"a": ("200Gi",) * 2, "b": ("100Gi",) * 2}), *_local({"a": ("200Gi",) * 2, "b": ("100Gi",) * 2},
                                                                    "wait-hdd-sc", 2),
      pvc("pvc-0", "50Gi").cls("wait-sc"), pvc("pvc-1", "100Gi").cls("wait-hdd-sc"),
      claims(pod("p"), "pvc-0", "pvc-1")], TEST_SHAPE, [38, 75, 0]),
    ("zonal volumes with close capacity are preferred", *_zonal(TEST_SHAPE), [25, 25, 50, 50, 0, 0]),
    ("zonal volumes with close capacity are preferred (custom shape)",
     *_zonal([{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}]),
     [15, 15, 30, 30, 0, 0]),
    ("storage capacity score",
     [*_capacity_nodes("100Gi", "50Gi", "10Gi"), WITH_CAP, DRIVER,
      pvc("pvc-dynamic", "10Gi").cls("wait-sc-with-storage-capacity"), claims(pod("p"), "pvc-dynamic")],
     TEST_SHAPE, [10, 20, 100]),
    ("storage capacity score with static binds",
     [*_capacity_nodes("100Gi", "50Gi", "10Gi"), WITH_CAP, DRIVER, WAIT,
      *[pv(f"pv-static-{n}", "100Gi").cls("wait-sc").affinity(HOST, f"node-{n}") for n in "abc"],
      pvc("pvc-dynamic", "10Gi").cls("wait-sc-with-storage-capacity"), pvc("pvc-static", "50Gi").cls("wait-sc"),
      claims(pod("p"), "pvc-dynamic", "pvc-static")], TEST_SHAPE, [50, 50, 50]),
    ("dynamic provisioning with multiple PVCs of the same StorageClass",
     [*_capacity_nodes("100Gi"), WITH_CAP, DRIVER,
      pvc("pvc-dynamic-0", "50Gi").cls("wait-sc-with-storage-capacity"),
      pvc("pvc-dynamic-1", "50Gi").cls("wait-sc-with-storage-capacity"),
      claims(pod("p"), "pvc-dynamic-0", "pvc-dynamic-1")], TEST_SHAPE, [100]),
    ("prefer node with least allocatable",
     [*_capacity_nodes("100Gi", "20Gi", "10Gi"), WITH_CAP, DRIVER,
      pvc("pvc-dynamic", "10Gi").cls("wait-sc-with-storage-capacity"), claims(pod("p"), "pvc-dynamic")],
     TEST_SHAPE, [10, 50, 100]),
    ("prefer node with maximum allocatable",
     [*_capacity_nodes("100Gi", "20Gi", "10Gi"), WITH_CAP, DRIVER,
      pvc("pvc-dynamic", "10Gi").cls("wait-sc-with-storage-capacity"), claims(pod("p"), "pvc-dynamic")],
     MAX_SHAPE, [90, 50, 0]),
]


@pytest.mark.parametrize("version", ["1.35", "1.36"])
@pytest.mark.parametrize("objs,shape,want", [c[1:] for c in UPSTREAM], ids=[c[0] for c in UPSTREAM])
def test_upstream_score_rows(objs: list, shape: list, want: list[int], version: str) -> None:
    assert _scores(objs, profile(shape, version)) == want


def test_the_gate_off_skips_the_score_and_refuses_a_shape() -> None:
    row = UPSTREAM[0][1]
    assert run_score("VolumeBinding", row, profile=profile(gates={})) == "skip"
    with pytest.raises(InputError, match="unexpected field `shape`, remove it or turn on the feature gate"):
        profile(TEST_SHAPE, gates={})


def test_1_37_scores_by_default_with_the_default_shape() -> None:
    """StorageCapacityScoring is on in 1.37: SetDefaults_VolumeBindingArgs' shape (0 → 10, 100 → 0)."""
    prof = profile(version="1.37", gates={})
    assert [(p.utilization, p.score) for p in prof.volume_binding.shape] == [(0, 10), (100, 0)]
    objs = UPSTREAM[-1][1]
    assert _scores(objs, prof) == [90, 50, 0]
    assert _scores(objs, parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1",
                                       "kind": "KubeSchedulerConfiguration"},
                                      kubernetes_version="1.37").profiles[0]) == [90, 50, 0]


def test_an_empty_shape_takes_the_default_and_a_bad_one_is_refused() -> None:
    assert [(p.utilization, p.score) for p in profile([]).volume_binding.shape] == [(0, 10), (100, 0)]
    with pytest.raises(InputError, match="values must be sorted in increasing order"):
        profile([{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}])
    with pytest.raises(InputError, match="score"):
        profile([{"utilization": 0, "score": 11}])


def test_a_pod_without_claims_scores_zero_everywhere() -> None:
    assert _scores([node("a"), node("b"), pod("p")], profile(TEST_SHAPE)) == [0, 0]


@settings(max_examples=60, deadline=None)
@given(request=st.integers(1, 400), caps=st.lists(st.integers(0, 400), min_size=1, max_size=4),
       decreasing=st.booleans())
def test_dynamic_score_is_the_shape_of_the_claims_share_of_the_capacity(request: int, caps: list[int],
                                                                         decreasing: bool) -> None:
    """One claim provisioned on each node: ``10·shape(request·100 // capacity)`` (100 when it does not fit
    the capacity: such a node fails the filter unless maximumVolumeSize lets it through)."""
    objs: list = [WITH_CAP, DRIVER, pvc("c", f"{request}Gi").cls("wait-sc-with-storage-capacity"),
                  claims(pod("p"), "c")]
    for i, c in enumerate(caps):
        objs += [node(f"n{i}").label(**{NODE_KEY: f"n{i}"}),
                 capacity(f"n{i}", "wait-sc-with-storage-capacity", f"n{i}", f"{c}Gi", max_size="1000Gi")]
    shape = MAX_SHAPE if decreasing else TEST_SHAPE
    got = _scores(objs, profile(shape))
    for c, s in zip(caps, got):
        util = 100 if c == 0 or request > c else request * 100 // c
        assert s == (100 - util if decreasing else util)
