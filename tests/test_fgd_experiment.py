"""The FGD protocol, the sweep runner and the reproduction of the published numbers."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import datasets_dir, require
from test_openb import need_openb

from optisched.datasets.openb import load_nodes, load_pods
from optisched.experiments import sweep
from optisched.experiments.fgd import arrival_order, curve, run_fgd
from optisched.experiments.fgd_report import compare_published, load_published
from optisched.experiments.sweep import SweepSpec, load_spec, parse_seeds, run_sweep

PUBLISHED = datasets_dir() / "fgd-atc23-simulator-expected-results" / "summary_by_workload_policy_arrival.csv"


def small_trace(root: Path, pods: int = 60, seed: int = 0) -> Path:
    """A tiny openb-shaped folder: 6 nodes, ``pods`` pods of every kind."""
    rng = np.random.default_rng(seed)
    csv = root / "csv"
    csv.mkdir(parents=True)
    nodes = ["sn,cpu_milli,memory_mib,gpu,model"] + [
        f"n-{i},{c},{m},{g},{mod}" for i, (c, m, g, mod) in enumerate(
            [(32000, 131072, 8, "G2"), (32000, 131072, 8, "G2"), (16000, 65536, 2, "T4"), (16000, 65536, 2, "T4"),
             (8000, 32768, 1, "P100"), (64000, 262144, 4, "V100M16")])]
    (csv / "openb_node_list_gpu_node.csv").write_text("\n".join(nodes) + "\n")
    kinds = [(0, 0, ""), (1, 300, ""), (1, 500, "T4"), (1, 1000, ""), (2, 1000, ""), (4, 1000, "V100M16|G2")]
    rows = [("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
             "scheduled_time")]
    for i in range(pods):
        num, milli, spec = kinds[rng.integers(len(kinds))]
        rows.append(f"p-{i},{rng.integers(1, 8) * 1000},{rng.integers(1, 16) * 1024},{num},{milli},{spec},LS,"
                    "Running,0,1,0")
    (csv / "openb_pod_list_default.csv").write_text("\n".join(rows) + "\n")
    return root


def test_arrival_order_tops_up_to_130_percent_after_a_shuffle(tmp_path):
    pods = load_pods(small_trace(tmp_path) / "csv" / "openb_pod_list_default.csv")
    cap = 200 * 1000  # the list holds less than 130 % of it
    order = arrival_order(pods, cap, seed=42)
    assert sorted(order[: len(pods)].tolist()) == list(range(len(pods)))
    gpu = pods.total_milli[order]
    assert gpu.sum() >= 1.3 * cap and gpu[:-1].sum() < 1.3 * cap
    assert np.array_equal(order, arrival_order(pods, cap, seed=42))
    assert not np.array_equal(order, arrival_order(pods, cap, seed=43))


def test_arrival_order_trims_a_list_over_130_percent(tmp_path):
    pods = load_pods(small_trace(tmp_path, pods=400) / "csv" / "openb_pod_list_default.csv")
    order = arrival_order(pods, 26 * 1000, seed=1)
    assert len(set(order.tolist())) == len(order) < len(pods)
    assert pods.total_milli[order].sum() <= 1.3 * 26 * 1000


@pytest.mark.parametrize("policy", ["FGD", "BestFit", "GpuPacking", "Random"])
def test_a_run_allocates_what_it_places_and_is_seeded(tmp_path, policy):
    d = small_trace(tmp_path) / "csv"
    nodes, pods = load_nodes(d / "openb_node_list_gpu_node.csv"), load_pods(d / "openb_pod_list_default.csv")
    r = run_fgd(nodes, pods, policy, seed=7)
    placed = r.node >= 0
    assert r.allocated[-1] == pods.total_milli[r.order[placed]].sum()
    assert (np.diff(r.allocated) <= np.diff(r.arrived)).all()
    assert all(len(dv) == pods.num_gpu[row] for dv, row, ok in zip(r.devices, r.order, placed) if ok)
    c = curve(r)
    assert c["arrived_pct"].tolist() == list(range(131)) and (c["gpu_alloc_pct"] <= 100).all()
    assert curve(run_fgd(nodes, pods, policy, seed=7)).equals(c)


def test_sweep_resumes_and_local_processes_give_the_same_rows(tmp_path, monkeypatch):
    spec = SweepSpec(str(small_trace(tmp_path / "data")), ("default",), ("FGD", "BestFit"), (1, 2))
    one = run_sweep(spec, tmp_path / "a.parquet", jobs=1)
    two = run_sweep(spec, tmp_path / "b.parquet", jobs=2)
    cols = [c for c in one if c != "seconds"]
    assert one[cols].equals(two[cols]) and len(one) == 4 * 131
    assert set(one["spec_digest"]) == {spec.digest()} and set(one["seed"]) == {1, 2}
    monkeypatch.setattr(sweep, "run_cell", lambda *a: pytest.fail("a finished cell ran again"))
    assert run_sweep(spec, tmp_path / "a.parquet", jobs=1)[cols].equals(one[cols])


def test_the_ray_executor_gives_the_same_rows(tmp_path):
    require(importlib.util.find_spec("ray") is not None, "ray is not installed (pip install -e '.[ray]')")
    spec = SweepSpec(str(small_trace(tmp_path / "data")), ("default",), ("BestFit",), (1, 2))
    local = run_sweep(spec, tmp_path / "a.parquet", jobs=1)
    on_ray = run_sweep(spec, tmp_path / "b.parquet", executor="ray")
    cols = [c for c in local if c != "seconds"]
    assert local[cols].equals(on_ray[cols])


def test_spec_file_and_seed_ranges(tmp_path):
    small_trace(tmp_path / "data")
    f = tmp_path / "s.yaml"
    f.write_text("kind: FGDSweep\ndata: data\nworkloads: [default]\npolicies: [FGD]\nseeds: 42-44,50\n")
    spec = load_spec(f)
    assert spec.seeds == (42, 43, 44, 50) and Path(spec.data) == tmp_path / "data"
    assert parse_seeds([1, 2]) == [1, 2]


def test_the_shipped_grid_spec_is_the_papers_1020_runs(monkeypatch):
    spec_path = Path(__file__).resolve().parents[1] / "datasets" / "experiments" / "fgd-atc23.yaml"
    monkeypatch.setenv("OPENB_DIR", str(need_openb()))
    assert len(load_spec(spec_path).cells()) == 1020


BAD_CLI = [
    ("an unknown policy", ["experiment", "fgd", "--policies", "Nope"], "unknown policy 'Nope'"),
    ("a missing data folder", ["experiment", "fgd", "--data", "/nonexistent"], "not found"),
    ("an output inside the data folder", ["experiment", "fgd", "--policies", "FGD", "-o", "{data}/x.parquet"],
     "must not be an input"),
    ("a spec of another kind", ["experiment", "{spec}"], "kind: FGDSweep"),
    ("an unknown executor", ["experiment", "fgd", "--executor", "slurm"], "--executor must be"),
]


@pytest.mark.parametrize("args, message", [c[1:] for c in BAD_CLI], ids=[c[0] for c in BAD_CLI])
def test_bad_experiment_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, message):
    from optisched import cli

    data = small_trace(tmp_path / "data")
    (tmp_path / "bad.yaml").write_text("kind: Other\n")
    args = [a.format(data=data, spec=tmp_path / "bad.yaml") for a in args]
    if args[1] == "fgd" and "--data" not in args:
        args += ["--data", str(data), "--workloads", "default"]
    monkeypatch.setattr("sys.argv", ["optisched", *args])
    with pytest.raises(SystemExit) as e:
        cli.main()
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and "Traceback" not in err
    assert list(tmp_path.rglob("*.parquet")) == []


@pytest.mark.parametrize("policy", ["FGD", "BestFit"])
def test_reproduces_published_allocation_on_the_default_trace(policy):
    """Two seeds of the default trace: the mean allocation at 100 % arrived within 0.5 points of the
    published ten-seed mean, and every published step (0, 10, …, 130) within 1 point."""
    d = need_openb() / "csv"
    require(PUBLISHED.is_file(), f"published results not found at {PUBLISHED}")
    nodes, pods = load_nodes(d / "openb_node_list_gpu_node.csv"), load_pods(d / "openb_pod_list_default.csv")
    rows = []
    for seed in (42, 43):
        c = curve(run_fgd(nodes, pods, policy, seed))
        rows.append(c.assign(workload="default", policy=policy, seed=seed))
    table = compare_published(pd.concat(rows), load_published(PUBLISHED))
    assert abs(float(table["diff_100"].iloc[0])) <= 0.5
    assert float(table["max_curve_diff"].iloc[0]) <= 1.0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_allocation_bound_is_above_every_policy_and_below_the_demand(tmp_path, seed):
    from optisched.experiments.fgd_bound import allocation_bound

    d = small_trace(tmp_path, pods=80, seed=seed) / "csv"
    nodes, pods = load_nodes(d / "openb_node_list_gpu_node.csv"), load_pods(d / "openb_pod_list_default.csv")
    order = arrival_order(pods, 26 * 1000, seed)
    bound = allocation_bound(nodes, pods, order)
    assert bound <= min(pods.total_milli[order].sum(), 26 * 1000) + 1e-6
    for policy in ("FGD", "BestFit", "Random"):
        assert run_fgd(nodes, pods, policy, seed, order=order).allocated[-1] <= bound + 1e-6
