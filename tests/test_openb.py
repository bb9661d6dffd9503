"""Loaders of the openb trace: the real files read in place, and bad input named by file, row and field."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import datasets_dir, require

from optisched.datasets.openb import load_nodes, load_pods
from optisched.errors import InputError

OPENB = datasets_dir() / "alibaba-gpu-v2023-openb"


def need_openb() -> Path:
    """The openb trace beside the clone; skips (fails under OPTISCHED_REQUIRE_ALL) without it."""
    require(OPENB.is_dir(), f"openb trace not found at {OPENB}; download it as docs/experiments.md says")
    return OPENB


def test_gpu_node_csv_is_the_paper_cluster():
    nodes = load_nodes(need_openb() / "csv" / "openb_node_list_gpu_node.csv")
    assert (len(nodes.names), int(nodes.gpu_count.sum()), int(nodes.cpu_cap.sum()) // 1000) == (1213, 6212, 107018)
    assert int(nodes.mem_cap.sum()) == 503828480


def test_node_yaml_and_csv_describe_the_same_nodes():
    d = need_openb()
    a, b = load_nodes(d / "csv" / "openb_node_list_gpu_node.csv"), load_nodes(d / "node_yaml" / "openb_node_list_gpu_node.yaml")
    assert a.names == b.names and a.models == b.models
    for col in ("cpu_cap", "mem_cap", "gpu_count", "model"):
        assert np.array_equal(getattr(a, col), getattr(b, col))


@pytest.mark.parametrize("name, pods, share_pods, spec_pods, gpus", [
    ("default", 8152, 3078, 0, 6086.8), ("gpuspec33", 8152, 3078, 2388, 6086.8),
    ("multigpu50", 9061, 3078, 0, 11358.8), ("cpu250", 9420, 3078, 0, 6086.8)],
    ids=["the default list", "an 11-column list with gpu_spec", "a 5-column list", "a list with more CPU pods"])
def test_pod_lists_match_the_dataset_readme(name, pods, share_pods, spec_pods, gpus):
    t = load_pods(need_openb() / "csv" / f"openb_pod_list_{name}.csv")
    sharing = (t.num_gpu == 1) & (t.gpu_milli < 1000) & (t.gpu_milli > 0)
    assert (len(t), int(sharing.sum()), sum(bool(s) for s in t.spec)) == (pods, share_pods, spec_pods)
    assert round(t.total_milli.sum() / 1000, 1) == gpus


def test_qos_maps_to_a_priority_only_in_the_11_column_form():
    d = need_openb() / "csv"
    t = load_pods(d / "openb_pod_list_default.csv")
    assert dict(zip(t.qos, t.priority.tolist())) == {"LS": 1000, "BE": 0, "Burstable": 500, "Guaranteed": 500}
    assert set(load_pods(d / "openb_pod_list_multigpu20.csv").qos) == {""}


HEAD = "name,cpu_milli,memory_mib,num_gpu,gpu_milli"
BAD = [
    ("a wrong header", "name,cpu\np,1\n", "header is 'name,cpu'"),
    ("a row with too few fields", f"{HEAD}\np,1,2,0\n", "line 2: 4 fields"),
    ("a CPU request that is not a number", f"{HEAD}\np-1,x,2,0,0\n", "p-1 cpu_milli: 'x' is not an integer"),
    ("a share split over two GPUs", f"{HEAD}\np-2,1,2,2,500\n", "p-2 gpu_milli: num_gpu 2 with gpu_milli 500"),
    ("a negative memory request", f"{HEAD}\np-3,1,-2,0,0\n", "p-3 memory_mib: -2 is negative"),
]


@pytest.mark.parametrize("text, message", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_pod_lists_name_file_row_and_field(tmp_path, text, message):
    f = tmp_path / "pods.csv"
    f.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        load_pods(f)
    assert str(e.value).startswith(str(f)) and f.read_text() == text


def test_bad_node_list_names_the_node(tmp_path):
    f = tmp_path / "nodes.csv"
    f.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-1,64000,1024,16,T4\n")
    with pytest.raises(InputError, match="n-1 gpu: 16 GPUs, at most 8"):
        load_nodes(f)
