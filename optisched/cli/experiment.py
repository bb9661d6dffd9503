"""``optisched experiment``: the FGD paper's seeded sweeps on the openb trace, their plots, and the offline
optimum beside FGD (docs/experiments.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from . import common
from .options import time_limit_option

EXPERIMENT_CONTEXT = {"help_option_names": ["-h", "--help"]}


def experiment(
    target: Annotated[str, typer.Argument(help="SPEC.yaml, 'fgd' (part of the FGD grid) or 'plot'.")],
    results: Annotated[Path | None, typer.Argument(help="plot: the RESULTS.parquet to draw.")] = None,
    workloads: Annotated[str | None, typer.Option(help="fgd: comma-separated pod lists (default: the paper's 17).")] = None,
    policies: Annotated[str | None, typer.Option(help="fgd: comma-separated policies (default: the paper's 6).")] = None,
    seeds: Annotated[str, typer.Option(help="fgd: seeds, e.g. 42-51 or 42,45.")] = "42-51",
    data: Annotated[Path | None, typer.Option(help="fgd: the openb trace folder with csv/ (default: $OPENB_DIR).")] = None,
    ties: Annotated[str, typer.Option(
        help="fgd: equal scores go to a per-run node order | random | first; simulator: the authors' draws.")] = "order",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Parquet results (plot: figure folder).")] = None,
    executor: Annotated[str, typer.Option(help="local (processes) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(help="ray: address of a running cluster.")] = None,
    jobs: Annotated[int | None, typer.Option(help="local: worker processes (default: one per core); "
                                              "optimum: solver threads (default 4).")] = None,
    points: Annotated[str, typer.Option(help="optimum: arrived-workload points, % of GPU capacity.")] = "100",
    time_limit: Annotated[float, time_limit_option("optimum: solver seconds per point.")] = 300.0,
) -> None:
    """Seeded sweeps of the FGD paper's protocol on the openb trace, and its offline optimum ('optimum')
    (see docs/experiments.md)."""
    from ..experiments.fgd_report import plot_results
    from ..experiments.sweep import FGD_POLICIES, FGD_WORKLOADS, SweepSpec, load_spec, parse_seeds, run_sweep

    if target == "plot":
        if results is None:
            raise InputError("experiment plot needs RESULTS.parquet")
        for path in plot_results(results, output):
            common.err.print(f"wrote {path}")
        return
    if target == "optimum":
        _experiment_optimum(data, workloads, seeds, points, time_limit, jobs, output)
        return
    if executor not in ("local", "ray"):
        raise InputError(f"--executor must be local or ray, not {executor!r}")
    if target == "fgd":
        folder = str(Path(_openb(data, "experiment fgd")))
        spec = SweepSpec(folder, tuple(workloads.split(",")) if workloads else FGD_WORKLOADS,
                         tuple(policies.split(",")) if policies else FGD_POLICIES, tuple(parse_seeds(seeds)),
                         ties=ties, name="fgd-cli")
        spec.check("--data/--workloads/--policies")
        out_path = output or Path("fgd_results.parquet")
    else:
        spec = load_spec(target)
        out_path = output or Path(target).with_suffix(".parquet")
    inputs = {Path(spec.data).resolve(), Path(target).resolve()}
    if out_path.resolve() in inputs or Path(spec.data).resolve() in out_path.resolve().parents:
        raise InputError(f"{out_path}: the output must not be an input or lie inside the data folder")
    from .progress import progress_bar

    with progress_bar(common.err, "experiment", len(spec.cells()), unit="cells", every=1) as advance:
        df = run_sweep(spec, out_path, executor, jobs, address, progress=advance)
    common.err.print(f"wrote {len(df)} rows ({len(spec.cells())} cells) to {out_path}")


def _openb(data: Path | None, what: str) -> str:
    """The openb folder: ``--data``, else ``$OPENB_DIR``."""
    import os

    folder = str(data or os.environ.get("OPENB_DIR", ""))
    if not folder:
        raise InputError(f"{what} needs --data DIR or OPENB_DIR (the openb folder with csv/)")
    return folder


def _experiment_optimum(data: Path | None, workloads: str | None, seeds: str, points: str, time_limit: float,
                        jobs: int | None, output: Path | None) -> None:
    """``experiment optimum``: the offline optimum beside FGD at the given arrived points (one Parquet row each)."""
    from ..experiments.fgd_optimum import OPTIMUM_WORKLOADS, run_optimum
    from ..experiments.sweep import SweepSpec, parse_seeds

    folder = _openb(data, "experiment optimum")
    names = tuple(workloads.split(",")) if workloads else OPTIMUM_WORKLOADS
    spec = SweepSpec(folder, names, ("FGD",), tuple(parse_seeds(seeds)))
    spec.check("--data/--workloads")
    try:
        at = [float(p) for p in points.split(",")]
    except ValueError:
        at = []
    if not at or not all(0 < p <= 1000 for p in at):
        raise InputError(f"{points!r} is not a list of percentages like 90,100", source="--points")
    out_path = output or Path("optimum.parquet")
    if Path(folder).resolve() in out_path.resolve().parents:
        raise InputError(f"{out_path}: the output must not lie inside the data folder")
    from .progress import progress_bar

    total = len(names) * len(spec.seeds) * len(at)
    with progress_bar(common.err, "optimum", total, unit="points", every=1) as advance:
        done = iter(range(1, total + 1))
        df = run_optimum(folder, names, spec.seeds, at, time_limit, jobs or 4,
                         progress=lambda: advance(next(done), total))
    df.to_parquet(out_path, index=False)
    common.err.print(f"wrote {len(df)} rows to {out_path}")
