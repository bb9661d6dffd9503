"""Node-pressure eviction: the kubelet's ranking and stopping point, worked out by hand, the replay, and bad
input. n1 has 4096Mi of memory; its pods use 1536 + 1536 + 200 + 512 = 3784Mi, leaving 312Mi."""
from __future__ import annotations

import pytest
from builders import node, run_cli, state_of
from helpers.descheduler import CFG, owned, tpod

from optisched.whatif import load_usage, parse_thresholds, run_pressure, usage_from_annotations
from optisched.whatif.pressure import rank_pods

MI = 2**20


def _pod(name: str, req_mi: int, use_mi: int, prio: int = 0):  # type: ignore[no-untyped-def]
    p = owned(tpod(name, 100, "n1", None).priority(prio))
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": f"{req_mi}Mi"}} if req_mi else {}
    p["metadata"]["annotations"] = {"optisched.io/usage-memory": f"{use_mi}Mi"}
    return p


def _cluster(*extra: dict) -> list:
    return [node("n1", cpu="4", memory="4Gi"), node("n2", cpu="4", memory="8Gi"),
            _pod("a", 1024, 1536), _pod("b", 512, 1536), _pod("c", 0, 200, prio=100), _pod("d", 1024, 512, prio=-5),
            *extra]


def _run(objs: list, cfg: dict):  # type: ignore[no-untyped-def]
    state = state_of(*objs)
    return run_pressure(state, CFG, usage_from_annotations(state), parse_thresholds(cfg, "kubelet.yaml"))


def test_the_kubelet_ranks_exceeders_by_priority_then_by_excess_and_the_rest_last() -> None:
    state = state_of(*_cluster())
    rows = [state.pod_index[f"default/{n}"] for n in "abcd"]
    order = rank_pods(state, usage_from_annotations(state), rows, "memory")
    assert [state.pods[p].metadata.name for p in order] == ["b", "a", "c", "d"]


KUBELET = {"kind": "KubeletConfiguration"}
ROWS = [
    pytest.param({**KUBELET, "evictionHard": {"memory.available": "500Mi"}}, ["default/b"], 312, 1848,
                 id="500Mi threshold: b (furthest above its request) is enough"),
    pytest.param({**KUBELET, "evictionHard": {"memory.available": "500Mi"},
                  "evictionMinimumReclaim": {"memory.available": "1536Mi"}}, ["default/b", "default/a"], 312, 3384,
                 id="a minimum reclaim of 1536Mi takes a as well"),
    pytest.param({**KUBELET, "evictionHard": {"memory.available": "10%"}}, ["default/b"], 312, 1848,
                 id="a 10 percent threshold is 409Mi, b is enough"),
    pytest.param({**KUBELET, "evictionHard": {"memory.available": "300Mi"}}, None, None, None,
                 id="300Mi threshold: 312Mi available is no pressure"),
    pytest.param({**KUBELET, "evictionSoft": {"memory.available": "3500Mi"}, "evictionHard": {"nodefs.available": "1Gi"}},
                 ["default/b", "default/a", "default/c"], 312, 3584,
                 id="a 3500Mi soft threshold takes b, a and c, and nodes without disk capacity are not checked"),
    pytest.param(KUBELET, None, None, None, id="the default 100Mi threshold is not met"),
]


@pytest.mark.parametrize(("cfg", "evicted", "before_mi", "after_mi"), ROWS)
def test_pressure_rows(cfg: dict, evicted: list[str] | None, before_mi: int | None, after_mi: int | None) -> None:
    out = _run(_cluster(), cfg)
    if evicted is None:
        assert out.nodes == () and out.landed == {}
        return
    (n1,) = out.nodes
    assert (n1.node, n1.signal, list(n1.evicted)) == ("n1", "memory.available", evicted)
    assert (n1.available, n1.available_after) == (before_mi * MI, after_mi * MI)


def test_replacements_avoid_the_pressured_node() -> None:
    """n2 is fuller by requests (6.5 of 8Gi with b against 2.5 of 4Gi on n1), so LeastAllocated alone would
    put b back on n1; the memory-pressure taint sends it to n2."""
    big = owned(tpod("big", 100, "n2", None))
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "6Gi"}}
    out = _run(_cluster(big), {**KUBELET, "evictionHard": {"memory.available": "500Mi"}})
    assert out.landed == {"default/b": "n2"}


def test_critical_pods_are_never_evicted() -> None:
    crit = _pod("sys", 0, 3000, prio=2_000_000_000)
    out = _run([node("n1", cpu="4", memory="4Gi"), crit], {**KUBELET, "evictionHard": {"memory.available": "2Gi"}})
    assert out.nodes[0].evicted == () and out.nodes[0].available == 1096 * MI


def test_kubectl_top_and_csv_usage(tmp_path) -> None:  # type: ignore[no-untyped-def]
    state = state_of(*_cluster())
    top = tmp_path / "top.txt"
    top.write_text("NAMESPACE   NAME   CPU(cores)   MEMORY(bytes)\ndefault     a      250m         1536Mi\n")
    assert load_usage(top, state).by_pod == {"default/a": {"cpu": 250, "memory": 1536 * MI}}
    csv = tmp_path / "usage.csv"
    csv.write_text("namespace,name,cpu,memory,ephemeral-storage\ndefault,b,1,2Gi,1Gi\n")
    assert load_usage(csv, state).by_pod == {"default/b": {"cpu": 1000, "memory": 2 << 30,
                                                           "ephemeral-storage": 1 << 30}}


BAD = [
    pytest.param("usage.csv", "namespace,name,memory\ndefault,ghost,1Gi\n", None,
                 "usage.csv: line 2: pod 'default/ghost' is not in the cluster", id="usage for a pod that does not exist"),
    pytest.param("usage.csv", "namespace,name,memory\ndefault,a,lots\n", None, "'lots' is not a quantity",
                 id="a usage that is not a quantity"),
    pytest.param("top.txt", "NAME CPU\n", None, "expected `kubectl top pods -A` output", id="a dump without the header"),
    pytest.param("kubelet.yaml", None, "kind: KubeletConfiguration\nevictionHard:\n  memory.free: 1Gi\n",
                 "KubeletConfiguration .evictionHard.memory.free: unknown eviction signal", id="an unknown signal"),
    pytest.param("kubelet.yaml", None, "kind: KubeletConfiguration\nevictionHard:\n  memory.available: 120%\n",
                 "'120%' is not a quantity or a percentage", id="a percentage above 100"),
    pytest.param("kubelet.yaml", None, "kind: Something\n", ".kind: expected kind: KubeletConfiguration",
                 id="a file of another kind"),
]


@pytest.mark.parametrize(("name", "usage_text", "kubelet_text", "message"), BAD)
def test_bad_input_is_one_line(tmp_path, capsys, name: str, usage_text: str | None, kubelet_text: str | None,  # type: ignore[no-untyped-def]
                               message: str) -> None:
    import yaml
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([o.build() for o in _cluster()]))
    f = tmp_path / name
    f.write_text(usage_text or kubelet_text or "")
    args = ["pressure", str(cluster), "--usage" if usage_text is not None else "--kubelet-config", str(f)]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == "" and message in " ".join(err.split()) and "Traceback" not in err


def test_cli_json_and_table(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    import yaml
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([o.build() for o in _cluster()]))
    cfg = tmp_path / "flags.txt"
    cfg.write_text("--eviction-hard=memory.available<500Mi\n--eviction-minimum-reclaim=memory.available=1536Mi\n")
    code, out, _ = run_cli(["pressure", str(cluster), "--kubelet-config", str(cfg), "--node", "n1", "--json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["nodes"][0]["evicted"] == ["default/b", "default/a"]
    assert doc["landing"] == {"default/a": "n2", "default/b": "n2"}
    code, out, _ = run_cli(["pressure", str(cluster), "--kubelet-config", str(cfg)], capsys)
    assert code == 0 and "default/b: replacement lands on n2" in out
