"""FGD sweep results beside the published ones, and the paper's kinds of figure.

The published numbers are ``summary_by_workload_policy_arrival.csv`` (means over seeds 42-51 of the
authors' cached results of hkust-adsl/kubernetes-scheduler-simulator, ``experiments/analysis/
expected_results/``). Figures: GPU allocation against arrived workload per policy (Fig. 9(a)), bars at
100 % arrived per workload (Figs. 11-14), fragmentation amount against arrived workload (Fig. 7).
"""
from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from ..errors import InputError

__all__ = ["compare_published", "load_published", "plot_results", "seed_means"]

METRICS = ("gpu_alloc_pct", "frag_amount_pct", "frag_ratio_pct")


def load_published(path: str | Path) -> pd.DataFrame:
    """The published summary with our column names (``workload`` without its file prefix, ``policy``
    without its number)."""
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError) as e:
        raise InputError(f"cannot read published summary: {e}", source=str(path)) from None
    return pd.DataFrame({
        "workload": df["workload"].str.removeprefix("openb_pod_list_"),
        "policy": df["sc_policy"].str.split("-", n=1).str[1],
        "arrived_pct": df["arrived_gpu_pct"],
        **{m: df[f"{m}_mean"] for m in METRICS}})


def seed_means(results: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per workload, policy and arrived step, with the number of seeds."""
    g = results.groupby(["workload", "policy", "arrived_pct"])
    out = g[list(METRICS)].mean()
    out["n_seeds"] = g["seed"].nunique()
    return out.reset_index()


def compare_published(results: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Per workload and policy: our and the published allocation at 100 % arrived, their difference, and
    the largest allocation difference over the published steps (0, 10, …, 130)."""
    ours = seed_means(results)
    both = ours.merge(published, on=["workload", "policy", "arrived_pct"], suffixes=("", "_pub"))
    both["diff"] = both["gpu_alloc_pct"] - both["gpu_alloc_pct_pub"]
    at100 = both[both["arrived_pct"] == 100].set_index(["workload", "policy"])
    worst = both.groupby(["workload", "policy"])["diff"].agg(lambda d: d.abs().max())
    return pd.DataFrame({"seeds": at100["n_seeds"], "ours_100": at100["gpu_alloc_pct"],
                         "published_100": at100["gpu_alloc_pct_pub"], "diff_100": at100["diff"],
                         "max_curve_diff": worst}).reset_index()


def _figures(results: pd.DataFrame, outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = seed_means(results)
    paths = []
    for metric, label in (("gpu_alloc_pct", "GPU allocation (%)"), ("frag_amount_pct", "fragmented GPU (% of all)")):
        workloads = sorted(means["workload"].unique())
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 3.6), squeeze=False)
        for ax, w in zip(axes[0], workloads):
            for p, d in means[means["workload"] == w].groupby("policy"):
                ax.plot(d["arrived_pct"], d[metric], label=p)
            ax.set(title=w, xlabel="arrived workload (% of GPU capacity)", ylabel=label)
        axes[0][0].legend(fontsize=7)
        paths.append(outdir / f"{metric}_vs_arrived.png")
        fig.tight_layout()
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    bars = means[means["arrived_pct"] == 100].pivot(index="workload", columns="policy", values="gpu_alloc_pct")
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(bars)), 3.6))
    (100 - bars).plot.bar(ax=ax, ylabel="unallocated GPU (%)", title="unallocated GPU at 100 % arrived workload")
    ax.legend(title="policy", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    paths.append(outdir / "unallocated_at_100.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def plot_results(results_path: str | Path, outdir: str | Path | None = None) -> list[Path]:
    """PNG figures and one self-contained HTML page (images inlined) next to the results."""
    results_path = Path(results_path)
    try:
        results = pd.read_parquet(results_path)
    except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"cannot read Parquet results: {e}", source=str(results_path)) from None
    if "optimum_alloc_pct" in results:  # ``experiment optimum`` results
        return _optimum_page(results, results_path, Path(outdir) if outdir else results_path.with_suffix(""))
    missing = [c for c in ("workload", "policy", "seed", "arrived_pct", *METRICS) if c not in results]
    if missing:
        raise InputError(f"missing column {missing[0]!r}", source=str(results_path))
    out = Path(outdir) if outdir else results_path.with_suffix("")
    out.mkdir(parents=True, exist_ok=True)
    pngs = _figures(results, out)
    imgs = "".join(f'<h2>{html.escape(p.stem)}</h2><img src="data:image/png;base64,'
                   f'{base64.b64encode(p.read_bytes()).decode()}">' for p in pngs)
    table = (100 - seed_means(results).query("arrived_pct == 100").pivot(
        index="workload", columns="policy", values="gpu_alloc_pct")).round(2).to_html()
    page = out / "report.html"
    page.write_text(f"<!doctype html><meta charset=utf-8><title>{html.escape(results_path.name)}</title>"
                    f"<h1>{html.escape(results_path.name)}</h1><h2>unallocated GPU % at 100 % arrived</h2>"
                    f"{table}{imgs}")
    return [*pngs, page]


def _optimum_page(results: pd.DataFrame, results_path: Path, out: Path) -> list[Path]:
    """The offline optimum per workload (mean over seeds at each point): FGD, the best placement found and
    the certified bound, as bars, and the same numbers as a table in a self-contained page."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    cols = {"fgd_alloc_pct": "FGD", "optimum_alloc_pct": "best placement found", "bound_pct": "certified bound"}
    means = results.groupby(["arrived_pct", "workload"], sort=False)[list(cols)].mean().rename(columns=cols)
    paths = []
    for pct, d in means.groupby(level=0):
        d = d.droplevel(0)
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(d)), 3.8))
        d.plot.bar(ax=ax, ylim=(max(0, d.to_numpy().min() - 5), 100.5), width=0.8,
                   ylabel="GPU allocation (%)", title=f"GPU allocation at {pct:g} % arrived workload")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        fig.tight_layout()
        paths.append(out / f"optimum_at_{pct:g}.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    imgs = "".join(f'<img src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">' for p in paths)
    page = out / "report.html"
    page.write_text(f"<!doctype html><meta charset=utf-8><title>{html.escape(results_path.name)}</title>"
                    f"<h1>{html.escape(results_path.name)}</h1>{means.round(2).to_html()}{imgs}")
    return [*paths, page]
