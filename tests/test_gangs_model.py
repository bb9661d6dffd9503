"""Pod groups read from what clusters carry: the Workload API of 1.35, the PodGroups of 1.36, the
coscheduling plugin's PodGroup and Kueue's pod-group labels (optisched.model.gangs), and ``inspect``."""
from __future__ import annotations

import json

import pytest
from builders import node, pod

from optisched.errors import InputError
from optisched.model.gangs import groups
from optisched.model.loader import cluster_from_objects
from optisched.model.state import compile_cluster


def state(*objects):  # type: ignore[no-untyped-def]
    return compile_cluster(cluster_from_objects([node("n1").build(), *[dict(o) for o in objects]]))


def member(name: str, **spec) -> dict:  # type: ignore[no-untyped-def]
    p = pod(name, "ml").build()
    p["spec"].update(spec)
    return p


WORKLOAD = {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}},
                                   {"name": "driver", "policy": {"basic": {}}}]}}


def test_the_workload_api_of_1_35_groups_by_workload_pod_group_and_replica_key():
    s = state(WORKLOAD,
              *[member(f"w{i}", workloadRef={"name": "train", "podGroup": "workers", "podGroupReplicaKey": str(i % 2)})
                for i in range(4)],
              member("d", workloadRef={"name": "train", "podGroup": "driver"}))
    got = {g.key: (len(g.members), g.minimum, g.missing) for g in groups(s)}
    assert got == {"workload:ml/train/workers/0": (2, 3, None), "workload:ml/train/workers/1": (2, 3, None),
                   "workload:ml/train/driver": (1, 1, None)}


def test_a_missing_workload_or_pod_group_is_named():
    s = state(WORKLOAD, member("a", workloadRef={"name": "nope", "podGroup": "workers"}),
              member("b", workloadRef={"name": "train", "podGroup": "ps"}))
    assert [g.missing for g in groups(s)] == ["Workload ml/nope does not exist",
                                              "Workload ml/train has no pod group 'ps'"]


def test_a_1_36_pod_group_carries_its_policy_and_topology():
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                   "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]}}}
    s = state(pg, member("a", schedulingGroup={"podGroupName": "g"}), member("b", schedulingGroup={"podGroupName": "g"}))
    [g] = groups(s)
    assert (g.key, len(g.members), g.minimum, g.required_topology) == ("podgroup:ml/g", 2, 2,
                                                                       "topology.kubernetes.io/rack")


def test_coscheduling_and_kueue_groups_come_from_labels():
    cos = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
           "metadata": {"name": "nginx", "namespace": "ml"}, "spec": {"minMember": 3}}
    a = pod("c1", "ml").label(**{"scheduling.x-k8s.io/pod-group": "nginx"}).build()
    k = [pod(f"k{i}", "ml").label(**{"kueue.x-k8s.io/pod-group-name": "job"}).build() for i in range(2)]
    for p in k:
        p["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "4",
                                        "kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/rack"}
    s = state(cos, a, *k)
    got = {g.key: (len(g.members), g.minimum, g.declared_size, g.required_topology) for g in groups(s)}
    assert got == {"coscheduling:ml/nginx": (1, 3, None, None), "kueue:ml/job": (2, 4, 4, "cloud.provider.com/rack")}


def test_a_gang_with_a_zero_minimum_is_refused_at_load():
    bad = {**WORKLOAD, "spec": {"podGroups": [{"name": "w", "policy": {"gang": {"minCount": 0}}}]}}
    with pytest.raises(InputError, match=r"minCount"):
        state(bad)


def test_inspect_lists_the_groups(tmp_path, capsys):
    import yaml
    from test_cli import run

    path = tmp_path / "c.yaml"
    objs = [node("n1").build(), WORKLOAD,
            *[member(f"w{i}", workloadRef={"name": "train", "podGroup": "workers"}) for i in range(2)]]
    path.write_text(yaml.safe_dump_all(objs))
    code, out, err = run(["inspect", str(path), "--json"], capsys)
    assert code == 0, err
    out = json.loads(out)
    assert out["groups"] == [{"group": "workload:ml/train/workers", "source": "workload", "members": 2,
                              "bound": 0, "minimum": 3}]


def test_inspect_shows_a_table_of_groups(tmp_path, capsys):
    import yaml
    from test_cli import run

    path = tmp_path / "c.yaml"
    objs = [node("n1").build(), WORKLOAD, member("w0", workloadRef={"name": "train", "podGroup": "workers"})]
    path.write_text(yaml.safe_dump_all(objs))
    code, out, _ = run(["inspect", str(path)], capsys)
    assert code == 0 and "Pod groups" in out and "workload:ml/train/workers" in out
