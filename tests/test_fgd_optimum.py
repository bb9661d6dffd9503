"""The offline optimum of the FGD protocol: proven on small slices, never below FGD, every placement replayed."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import datasets_dir, require
from test_fgd_experiment import small_trace

from optisched.datasets.openb import load_nodes, load_pods
from optisched.experiments.fgd import run_fgd
from optisched.experiments.fgd_lns import search
from optisched.experiments.fgd_optimum import OPTIMUM_COLUMNS, arrived_rows, optimum_point, run_optimum
from optisched.experiments.fgd_optimum_model import verify
from optisched.experiments.fgd_report import plot_results
from optisched.plugins.gpu.share import GpuNodes, GpuPod

OPENB = datasets_dir() / "alibaba-gpu-v2023-openb" / "csv"
CLI = str(Path(sys.executable).with_name("optisched"))


def openb_slice(root: Path, nodes: int = 30, pods: int = 120) -> Path:
    """The first ``nodes`` nodes and ``pods`` pods of the openb default trace, as a data folder."""
    require((OPENB / "openb_pod_list_default.csv").is_file(), f"the openb trace is not in {OPENB}")
    csv = root / "csv"
    csv.mkdir(parents=True)
    for name, keep in (("openb_node_list_gpu_node", nodes), ("openb_pod_list_default", pods)):
        lines = (OPENB / f"{name}.csv").read_text().splitlines()[: keep + 1]
        (csv / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return root


def test_a_small_trace_is_solved_to_optimality_and_never_below_fgd(tmp_path: Path) -> None:
    data = small_trace(tmp_path, pods=40) / "csv"
    nodes, table = load_nodes(data / "openb_node_list_gpu_node.csv"), load_pods(data / "openb_pod_list_default.csv")
    point = optimum_point(nodes, table, seed=42, pct=100, time_limit=30, workers=2)
    rows = arrived_rows(table, int(nodes.gpu_count.sum()) * 1000, 42, 100)
    assert point.method == "cp-sat" and point.status == "OPTIMAL"
    assert point.optimum == point.bound == point.model_bound
    assert point.fgd <= point.greedy_best <= point.optimum <= point.lp_bound + 1e-6
    assert verify(nodes, [table.pod(int(r)) for r in rows], point.placement) == point.optimum


def test_the_optimum_recovers_a_gpu_fgd_leaves_fragmented_on_an_openb_slice(tmp_path: Path) -> None:
    df = run_optimum(openb_slice(tmp_path), ["default"], [42], [100], time_limit=30, workers=2)
    row = df.iloc[0]
    assert list(df.columns) == OPTIMUM_COLUMNS
    assert row.method == "cp-sat" and row.fgd_alloc_pct < row.optimum_alloc_pct <= row.bound_pct <= 100
    assert row.bound_pct <= min(row.model_bound_pct, row.lp_bound_pct) + 1e-9


def test_the_part_by_part_search_never_loses_ground_and_its_placement_replays(tmp_path: Path) -> None:
    data = openb_slice(tmp_path) / "csv"
    nodes, table = load_nodes(data / "openb_node_list_gpu_node.csv"), load_pods(data / "openb_pod_list_default.csv")
    rows = arrived_rows(table, int(nodes.gpu_count.sum()) * 1000, 42, 100)
    pods = [table.pod(int(r)) for r in rows]
    run = run_fgd(nodes, table, "FGD", 42, order=rows)
    start = [(int(n), d) for n, d in zip(run.node, run.devices)]
    found, better = search(nodes, pods, start, seconds=8, workers=1, seed=0)
    assert verify(nodes, pods, found) >= verify(nodes, pods, start)
    assert better > 0 or verify(nodes, pods, found) == verify(nodes, pods, start)


@pytest.mark.parametrize("devices, fits", [((0,), True), ((1,), False)],
                         ids=["a share on a device with room passes", "a share on a full device is refused"])
def test_verify_replays_each_pod_on_its_devices(devices: tuple[int, ...], fits: bool) -> None:
    nodes = GpuNodes.build(["n-0"], [8000], [1000], [2], ["T4"])
    pods = [GpuPod(100, 1, 1, 1000), GpuPod(100, 1, 1, 600)]
    placement = [(0, (1,)), (0, devices)]
    if fits:
        assert verify(nodes, pods, placement) == 1600
    else:
        with pytest.raises(ValueError, match="pod 1"):
            verify(nodes, pods, placement)


def test_the_command_writes_one_row_per_point(tmp_path: Path) -> None:
    data = small_trace(tmp_path / "data", pods=30)
    out = tmp_path / "optimum.parquet"
    run = subprocess.run([CLI, "experiment", "optimum", "--data", str(data), "--workloads", "default", "--seeds", "42",
                          "--points", "50,100", "--time-limit", "10", "--jobs", "1", "-o", str(out)],
                         check=False, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    df = pd.read_parquet(out)
    assert df["arrived_pct"].tolist() == [50.0, 100.0]
    assert (df["optimum_alloc_pct"] >= df["fgd_alloc_pct"]).all() and (df["bound_pct"] >= df["optimum_alloc_pct"]).all()
    drawn = plot_results(out, tmp_path / "figures")
    assert sorted(p.name for p in drawn) == ["optimum_at_100.png", "optimum_at_50.png", "report.html"]
    assert "best placement found" in (tmp_path / "figures" / "report.html").read_text()


@pytest.mark.parametrize("args, named", [(["--points", "half,100"], "--points"), (["--points", "0"], "--points"),
                                         (["--time-limit", "-1"], "--time-limit")],
                         ids=["a point that is not a number", "a point of zero", "a negative time limit"])
def test_bad_optimum_options_are_a_usage_error_naming_the_option(tmp_path: Path, args: list[str], named: str) -> None:
    data = small_trace(tmp_path / "data", pods=10)
    run = subprocess.run([CLI, "experiment", "optimum", "--data", str(data), "--workloads", "default", *args,
                          "-o", str(tmp_path / "o.parquet")], check=False, capture_output=True, text=True)
    assert run.returncode == 2 and named in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "o.parquet").exists()
