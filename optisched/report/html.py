"""The comparison as one self-contained HTML page: inline CSS, plots as base64 PNG data URIs, no
scripts and no external references, so it opens from disk and can be mailed as a single file."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..comparison.tables import format_value, shown_resources, tier_definitions
from ..metrics import evicted, moved
from ..optimal.tier_labels import tier_label
from ..profile.releases import release
from ..version import KUBE_VERSION
from .page import e as _e
from .page import figure as _figure
from .page import is_number as _is_number
from .page import page
from .page import table as _table

if TYPE_CHECKING:
    from ..comparison.compare import Comparison

__all__ = ["render_html"]

MAX_ROWS = 200  # per table on the page; the CSV files hold every row


DEFINITIONS = [
    ("allocated", "requested / allocatable summed over the schedulable nodes."),
    ("node utilization", ("each schedulable node's requested / allocatable; mean, max and population standard "
     "deviation over the nodes offering the resource (empty nodes included).")),
    ("fragmented free", ("free capacity on nodes where no pending pod shape that requests the resource both may "
     "run (taints, nodeSelector, required node affinity) and fits in the node's whole free vector, as a share "
     "of all free capacity.")),
    ("expected fragmented free (FGD)", ("Weng et al., Beware of Fragmentation: Scheduling GPU-Sharing Workloads "
     "with Fragmentation Gradient Descent, USENIX ATC 2023: the free capacity the workload is expected not to "
     "be able to use, F = free × Σ p(shape) [the shape requests none of it or does not fit], with the pending "
     "pods' shapes and their shares as the workload. For nvidia.com/gpu this is the paper's GPU fragmentation "
     "with whole GPUs (the model has no GPU sharing).")),
    ("spread skew", ("for each topologySpreadConstraint the pods carry: max − min matching pods over the "
     "constraint's eligible domains (min taken as 0 below minDomains).")),
    ("evictions / moves", "pods bound in the input that a run leaves unplaced / places on another node."),
    ("PDB violations", ("PodDisruptionBudgets whose covered pods are evicted or moved more than their "
     "disruptionsAllowed.")),
]

DEVICE_DEFINITIONS = [
    ("DRA devices", ("devices the ResourceSlices of a node's own publish (newest pool generation); "
     "allocated: held by some ResourceClaim after the run (for an answer not reached cycle by cycle, "
     "allocated pod by pod as the optimal re-check does).")),
    ("DRA devices stranded", ("free devices on nodes where none of the pods the run leaves pending with "
     "claims can go: allowed there, fitting in the free cpu and memory, and its claims allocatable by the "
     "structured allocator against the devices in use. Zero when no pod with claims is left pending.")),
    ("DRA device fragmentation (FGD)", ("free devices × the share of the input's pending pods that cannot "
     "use them (no claim for a new device, or not allowed, not fitting or not allocatable there).")),
]


def _tier_terms(c: Comparison) -> list[tuple[str, str]]:
    """The certificate rows' terms ("placed at priority N: objective"), with what each tier counts."""
    return [(term, f"optimal mode's tier: {what}; its objective, the solver's bound and the gap between them.")
            for term, what in tier_definitions(c.runs)]


def _summary(c: Comparison) -> str:
    rows = []
    for metric, values in c.summary.iterrows():
        kind = c.formats.get(str(metric), "text")
        cells = [format_value(kind, v) for v in values.tolist()]
        rows.append([(str(metric), False, False)] +
                    [(x, _is_number(v), kind != "text" and i > 0 and x != cells[0])
                     for i, (x, v) in enumerate(zip(cells, values))])
    return _table(["metric", *(r.name for r in c.runs)], rows)


def _frame_rows(frame: Any, formats: Mapping[str, str]) -> list[list[tuple[str, bool, bool]]]:
    out = []
    for rec in frame.head(MAX_ROWS).itertuples(index=False):
        row = []
        for col, v in zip(frame.columns, rec):
            kind = formats.get(col, "text")
            row.append((format_value(kind, v, col.split(":", 1)[-1]), _is_number(v), False))
        out.append(row)
    return out


def _nodes(c: Comparison) -> str:
    shown = shown_resources(c.state)
    cols = ["run", "node", "zone", "pods", *(f"util:{r}" for r in shown), *(f"free:{r}" for r in shown),
            *(f"fragmented:{r}" for r in shown), "largest fitting shape", "copies of it"]
    formats = {f"util:{r}": "pct" for r in shown} | {f"free:{r}": "qty" for r in shown}
    formats |= {f"fragmented:{r}": "qty" for r in shown}
    frame = c.nodes[cols]
    note = f'<p class="note">first {MAX_ROWS} of {len(frame)} rows; nodes.csv lists all</p>' \
        if len(frame) > MAX_ROWS else ""
    return _table(cols, _frame_rows(frame, formats), tall=True) + note


def _pods(c: Comparison) -> str:
    if c.pods.empty:
        return "<p>Every run places every pod as the first run does.</p>"
    note = f'<p class="note">first {MAX_ROWS} of {len(c.pods)} rows; pods.csv lists all</p>' \
        if len(c.pods) > MAX_ROWS else ""
    return _table(list(c.pods.columns), _frame_rows(c.pods, {}), tall=True) + note


def _spread(c: Comparison) -> str:
    frame = c.spread_skews
    note = f'<p class="note">first {MAX_ROWS} of {len(frame)} constraints; spread.csv lists all</p>' \
        if len(frame) > MAX_ROWS else ""
    return _table(list(frame.columns), _frame_rows(frame, {}), tall=True) + note


def _disruption(c: Comparison) -> list[str]:
    """Evictions, moves and each PodDisruptionBudget's use per run (nothing when no run disrupts a pod)."""
    st = c.state
    counts = [(r.name, int(evicted(st, r.node_of).sum()), int(moved(st, r.node_of).sum())) for r in c.runs]
    if not any(e or m for _, e, m in counts):
        return []
    rows = [[(n, False, False), (str(e), True, False), (str(m), True, False)] for n, e, m in counts]
    out = ["<h2>Disruption</h2>", _table(["run", "evictions", "moves"], rows)]
    budgets = [(r.name, u) for r in c.runs for u in r.budget_rows(st)]
    if budgets:
        rows = [[(n, False, False), (u["budget"], False, False), (str(u["disruptionsAllowed"]), True, False),
                 (str(u["moves"]), True, False), (str(u["victims"]), True, False),
                 (str(u["violated"]), True, bool(u["violated"]))] for n, u in budgets]
        out += [('<p class="note">Moves go through the Eviction API and stay within disruptionsAllowed; '
                 "preemption victims are deleted by the scheduler and may break a budget (highlighted).</p>"),
                _table(["run", "budget", "disruptionsAllowed", "moves", "preemption victims", "violated"], rows)]
    return out


def _runs(c: Comparison) -> str:
    cards = []
    for r in c.runs:
        lines = [f"mode {r.mode}", f"run time {format_value('seconds', r.seconds)}"]
        cert = r.certificate or {}
        if cert.get("status"):
            lines.append(f"certificate {cert['status']}")
            if not cert.get("tiers"):
                lines.append("no tier solved: no bound, no gap")
        for tier in cert.get("tiers", []):
            gap = "no useful bound" if tier.get("gap") is None else f"gap {format_value('pct', tier['gap'])}"
            lines.append(f"{tier_label(str(tier.get('name')))}: {gap}")
        if cert.get("greedyOptimal"):
            lines.append("greedy is optimal for this batch")
        cards.append(f'<div class="run"><b>{_e(r.name)}</b>' + "".join(f"<span>{_e(x)}</span>" for x in lines)
                     + "</div>")
    return f'<div class="runs">{"".join(cards)}</div>'


def _lead(c: Comparison) -> str:
    pending = np.asarray(c.state.pending, dtype=np.int64)
    parts = [f"{_e(r.name)} places <b>{int(np.count_nonzero(r.node_of[pending] >= 0))}</b>" for r in c.runs]
    return f'<p class="lead">Of {len(pending)} pending pods, ' + ", ".join(parts) + ".</p>"


def render_html(c: Comparison, plots: Mapping[str, tuple[bytes, str]], files: list[str]) -> str:
    """The page: ``plots`` maps a section title to (PNG bytes, caption); ``files`` are linked beside it."""
    st = c.state
    title = " vs ".join(r.name for r in c.runs)
    sub = (f"{st.num_nodes} nodes ({int((~st.unschedulable).sum())} schedulable), {len(st.pods)} pods "
           f"({len(st.pending)} pending); kube-scheduler "
           f"{release(c.config.kubernetes_version).patch if c.config is not None else KUBE_VERSION} semantics")
    parts = [f"<h1>Placement comparison: {_e(title)}</h1>", f'<p class="sub">{_e(sub)}</p>', _lead(c), _runs(c)]
    figures = list(plots.items())
    if figures:
        name, (png, caption) = figures[0]
        parts += [f"<h2>{_e(name)}</h2>", _figure(png, name, caption)]
    parts += ["<h2>Summary</h2>", '<p class="note">Highlighted: differs from the first run.</p>', _summary(c)]
    for name, (png, caption) in figures[1:]:
        parts += [f"<h2>{_e(name)}</h2>", _figure(png, name, caption)]
    if len(c.spread_skews):
        parts += ["<h2>Topology spread constraints</h2>", _spread(c)]
    parts += _disruption(c)
    parts += [f"<h2>Pods placed differently from {_e(c.runs[0].name)}</h2>", _pods(c)]
    parts += ["<h2>Nodes</h2>", _nodes(c)]
    terms = DEFINITIONS + (DEVICE_DEFINITIONS if c.devices else []) + _tier_terms(c)
    parts.append("<h2>Definitions</h2><dl class=\"defs\">" +
                 "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in terms) + "</dl>")
    parts.append('<p class="note">Files: ' + ", ".join(f'<a href="{_e(f)}">{_e(f)}</a>' for f in files) + "</p>")
    return page(f"optisched: {title}", parts)
