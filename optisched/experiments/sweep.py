"""Seeded sweeps of the FGD protocol: a grid of cells (workload × policy × seed), run by local processes
or on Ray, resumable, written to Parquet with the spec, the seed and the package version in every row.

Each finished cell is written as its own part file next to the output (``OUTPUT.parts/``), so an
interrupted sweep resumes where it stopped; when all cells are done the parts are merged into OUTPUT.
The same spec gives the same rows (the ``seconds`` column, wall time of the cell, aside).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..errors import InputError
from ..plugins.gpu.policies import available_policies
from .fgd import COLUMNS, curve, run_fgd

__all__ = ["FGD_POLICIES", "FGD_WORKLOADS", "Cell", "SweepSpec", "load_spec", "parse_seeds", "run_sweep"]

FGD_WORKLOADS = ("default", "cpu050", "cpu100", "cpu200", "cpu250", "gpushare40", "gpushare60", "gpushare80",
                 "gpushare100", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33", "multigpu20", "multigpu30",
                 "multigpu40", "multigpu50")
FGD_POLICIES = ("Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD")
TIES = ("order", "random", "first", "simulator")


def parse_seeds(text: str | list[int], source: str = "--seeds") -> list[int]:
    """``42-51``, ``42,45`` or a list of ints."""
    if isinstance(text, list):
        return [int(s) for s in text]
    seeds: list[int] = []
    try:
        for part in str(text).split(","):
            lo, _, hi = part.strip().partition("-")
            seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise InputError(f"{text!r} is not a seed list like 42-51 or 42,45", source=source) from None
    return seeds


@dataclass(frozen=True)
class SweepSpec:
    """What to run: the openb data folder, the node list, workloads, policies, seeds, tie-breaking."""

    data: str
    workloads: tuple[str, ...] = FGD_WORKLOADS
    policies: tuple[str, ...] = FGD_POLICIES
    seeds: tuple[int, ...] = tuple(range(42, 52))
    cluster: str = "openb_node_list_gpu_node"
    ties: str = "order"
    name: str = "fgd"
    extra: dict[str, Any] = field(default_factory=dict)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]

    def csv(self, name: str) -> Path:
        return Path(self.data) / "csv" / f"{name}.csv"

    def check(self, source: str) -> None:
        unknown = [p for p in self.policies if p not in available_policies()]
        if unknown:
            raise InputError(f"unknown policy {unknown[0]!r}; known: {', '.join(available_policies())}",
                             source=source, path="policies")
        if self.ties not in TIES:
            raise InputError(f"ties must be one of {', '.join(TIES)}", source=source, path="ties")
        for name in (self.cluster, *(f"openb_pod_list_{w}" for w in self.workloads)):
            if not self.csv(name).is_file():
                raise InputError(f"{self.csv(name)} not found (see docs/experiments.md to download the trace)",
                                 source=source, path="data")

    def cells(self) -> list[Cell]:
        """Seed-major, so an interrupted sweep already has every workload and policy for its first seeds."""
        return [Cell(w, p, s) for s in self.seeds for w in self.workloads for p in self.policies]


@dataclass(frozen=True)
class Cell:
    workload: str
    policy: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.workload}__{self.policy}__{self.seed}"


_FIELDS = {"name", "data", "workloads", "policies", "seeds", "cluster", "ties"}


def load_spec(path: str | Path) -> SweepSpec:
    """A sweep spec YAML (``kind: FGDSweep``); relative ``data`` is taken from the spec's folder."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"cannot read spec: {e}", source=str(path)) from None
    if not isinstance(doc, dict) or doc.get("kind") != "FGDSweep":
        raise InputError("expected a mapping with kind: FGDSweep", source=str(path), path="kind")
    extra = sorted(set(doc) - _FIELDS - {"kind"})
    if extra:
        raise InputError(f"unknown field (known: {', '.join(sorted(_FIELDS))})", source=str(path), path=extra[0])
    raw = os.path.expandvars(str(doc.get("data", "")))
    if "$" in raw:
        raise InputError(f"{raw!r}: set the environment variable it names (the openb folder)", source=str(path),
                         path="data")
    data = Path(raw) if Path(raw).is_absolute() else path.parent / raw
    spec = SweepSpec(str(data), tuple(doc.get("workloads", FGD_WORKLOADS)), tuple(doc.get("policies", FGD_POLICIES)),
                     tuple(parse_seeds(doc.get("seeds", "42-51"), f"{path}: seeds")),
                     str(doc.get("cluster", "openb_node_list_gpu_node")), str(doc.get("ties", "order")),
                     str(doc.get("name", path.stem)))
    spec.check(str(path))
    return spec


def package_version() -> str:
    try:
        return version("optisched")
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=4)
def _inputs(nodes_csv: str, pods_csv: str) -> tuple[Any, Any]:
    from ..datasets.openb import load_nodes, load_pods

    return load_nodes(nodes_csv), load_pods(pods_csv)


def run_cell(spec: SweepSpec, cell: Cell) -> pd.DataFrame:
    """One cell's rows: the curve 0-130 % plus the spec, its digest, the version and the wall time."""
    start = time.perf_counter()
    nodes, pods = _inputs(str(spec.csv(spec.cluster)), str(spec.csv(f"openb_pod_list_{cell.workload}")))
    df = curve(run_fgd(nodes, pods, cell.policy, cell.seed, ties=spec.ties))
    df.insert(0, "seed", cell.seed)
    df.insert(0, "policy", cell.policy)
    df.insert(0, "workload", cell.workload)
    df = df[COLUMNS].copy()
    df["spec"], df["spec_digest"], df["ties"] = spec.name, spec.digest(), spec.ties
    df["version"] = package_version()
    df["seconds"] = round(time.perf_counter() - start, 3)
    return df


def _parts(output: Path) -> Path:
    return output.with_name(output.name + ".parts")


def _local(spec: SweepSpec, cells: list[Cell], jobs: int) -> Iterator[tuple[Cell, pd.DataFrame]]:
    if jobs <= 1:
        for cell in cells:
            yield cell, run_cell(spec, cell)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_cell, spec, c): c for c in cells}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def _ray(spec: SweepSpec, cells: list[Cell], address: str | None) -> Iterator[tuple[Cell, pd.DataFrame]]:
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray: pip install 'optisched[ray]'") from None
    started = not ray.is_initialized()  # a local cluster started here is stopped here
    if started:
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False)
    try:
        remote = ray.remote(run_cell)
        pending = {remote.remote(spec, c): c for c in cells}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                yield pending.pop(ref), ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def run_sweep(spec: SweepSpec, output: Path, executor: str = "local", jobs: int | None = None,
              address: str | None = None, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Run the cells not yet in ``OUTPUT.parts/`` and merge all parts into ``output`` (Parquet)."""
    parts = _parts(output)
    parts.mkdir(parents=True, exist_ok=True)
    digest = spec.digest()
    todo = [c for c in spec.cells() if not (parts / f"{digest}__{c.key}.parquet").exists()]
    total, done = len(spec.cells()), len(spec.cells()) - len(todo)
    if progress:
        progress(done, total)
    runner = _ray(spec, todo, address) if executor == "ray" else _local(spec, todo, jobs or os.cpu_count() or 1)
    for cell, df in runner:
        tmp = parts / f".{digest}__{cell.key}.tmp"
        df.to_parquet(tmp, index=False)
        tmp.replace(parts / f"{digest}__{cell.key}.parquet")
        done += 1
        if progress:
            progress(done, total)
    frames = [pd.read_parquet(parts / f"{digest}__{c.key}.parquet") for c in spec.cells()]
    result = pd.concat(frames, ignore_index=True)
    result.to_parquet(output, index=False)
    return result
