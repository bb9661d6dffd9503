"""The three tables of a comparison, built from the metrics: summary, per-pod diff, per-node detail.

Values stay in the state's integer units (millicores, bytes, counts) and ratios in [0, 1]; the row
formats in :data:`FORMATS` tell renderers how to show them.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .. import metrics as m
from ..model.quantity import format_quantity, human_quantity
from ..model.state import ZONE_LABEL, ClusterState
from ..optimal.tier_labels import tier_glossary, tier_label
from .runs import PlacementRun

__all__ = ["format_value", "nodes_table", "pods_table", "shown_resources", "spread_table", "summary_table"]

Rows = list[tuple[str, str, list[Any]]]  # (label, format, one value per run)


def shown_resources(state: ClusterState) -> list[str]:
    """Resources some schedulable node offers and some pod requests, without the pod count (every table
    shows pods apart): a resource nobody asks for has nothing to compare."""
    offered = state.allocatable[~state.unschedulable].sum(axis=0) > 0
    requested = (state.pod_requests > 0).any(axis=0)
    return [r for r, ok in zip(state.resources, offered & requested) if ok and r != "pods"]


NO_BOUND = "no useful bound"  # a certificate tier's gap where its bound means nothing (Tier.useful_bound)


def format_value(kind: str, v: Any, resource: str = "") -> str:
    """Render one value: ``pct`` ratios, ``int``, ``float``, ``seconds``, ``qty`` (of ``resource``), text."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if kind == "pct":
        return v if isinstance(v, str) else f"{100 * v:.1f}%"
    if kind == "seconds":
        return f"{v:.3f}s"
    if kind == "float":
        return f"{v:,.2f}"
    if kind == "qty":
        return human_quantity(resource, int(v))
    if isinstance(v, bool) or kind == "bool":
        return "yes" if v else "no"
    return str(v)


def _placement_rows(state: ClusterState, runs: list[PlacementRun]) -> Rows:
    pending = np.asarray(state.pending, dtype=np.int64)
    rows: Rows = []
    prios = state.pod_priority[pending]
    for prio in sorted(set(prios.tolist()), reverse=True):
        of = pending[prios == prio]
        rows.append((f"placed, priority {prio} (of {len(of)})", "int",
                     [int(np.count_nonzero(r.node_of[of] >= 0)) for r in runs]))
    rows.append((f"placed (of {len(pending)} pending)", "int",
                 [int(np.count_nonzero(r.node_of[pending] >= 0)) for r in runs]))
    rows.append(("unschedulable", "int", [int(np.count_nonzero(r.node_of[pending] < 0)) - len(r.not_handled)
                                           for r in runs]))
    if any(r.not_handled for r in runs):
        rows.append(("not handled (gated, other scheduler)", "int", [len(r.not_handled) for r in runs]))
    rows.append(("nodes used", "int", [m.nodes_used(state, r.node_of) for r in runs]))
    if m.node_costs(state) is not None:
        rows.append(("cost per hour of the nodes used", "float", [m.hourly_cost(state, r.node_of) for r in runs]))
    return rows


def _resource_rows(state: ClusterState, runs: list[PlacementRun], workload: m.Workload) -> Rows:
    rows: Rows = []
    shown = shown_resources(state)
    ratios = [m.allocation_ratio(state, r.node_of) for r in runs]
    stats = [m.utilization_stats(state, r.node_of) for r in runs]
    frags = [m.fragmentation(state, r.node_of, workload) for r in runs]
    expected = [m.expected_fragmentation(state, r.node_of, workload) for r in runs]
    for res in shown:
        j = state.resource_col(res)
        rows.append((f"allocated {res}", "pct", [float(x[j]) for x in ratios]))
        for stat in ("mean", "max", "std"):
            rows.append((f"node {res} utilization {stat}", "pct", [float(getattr(s, stat)[j]) for s in stats]))
    for res in shown:
        j = state.resource_col(res)
        rows.append((f"fragmented free {res}", "pct", [float(f[j]) for f in frags]))
        rows.append((f"expected fragmented free {res} (FGD)", "pct", [float(e[j]) for e in expected]))
    if m.GPU in shown:
        rows.append(("GPU fragmentation (FGD, GPUs)", "float",
                     [m.gpu_fragmentation(state, r.node_of, workload).amount for r in runs]))
    return rows


def _device_rows(runs: list[PlacementRun], devices: dict[str, m.DeviceUsage],
                 frag: dict[str, m.GpuFragmentation]) -> Rows:
    """DRA devices of node-local ResourceSlices: allocated, free, stranded and FGD's fragmentation."""
    if not devices:
        return []
    total = int(next(iter(devices.values())).published.sum())
    use = [devices[r.name] for r in runs]
    return [(f"DRA devices allocated (of {total})", "int", [int(u.allocated.sum()) for u in use]),
            ("DRA devices free", "int", [int(u.free.sum()) for u in use]),
            ("DRA devices stranded (free, no pending claim fits)", "int",
             [int(u.stranded.sum()) for u in use]),
            ("DRA device fragmentation (FGD, devices)", "float", [frag[r.name].amount for r in runs])]


SUMMARY_SPREAD = 5  # the summary names this many constraints, worst first; spread_table has all


def spread_table(spread: list[m.SpreadDomains], runs: list[PlacementRun], skews: np.ndarray) -> pd.DataFrame:
    """One row per spread constraint (``skews[c, k]``: constraint ``c``'s skew in run ``k``), the worst
    first: by how far the skew exceeds maxSkew in any run, then by the skew itself."""
    max_skew = np.array([sd.constraint.max_skew for sd in spread], dtype=np.int64)
    excess = (skews - max_skew[:, None]).max(axis=1, initial=0) if len(spread) else np.zeros(0)
    order = sorted(range(len(spread)), key=lambda i: (-excess[i], -int(skews[i].max(initial=0)), spread[i].name))
    records = []
    for i in order:
        sd = spread[i]
        rec: dict[str, Any] = {"constraint": sd.name, "namespace": sd.namespace,
                               "topologyKey": sd.constraint.topology_key, "maxSkew": sd.constraint.max_skew,
                               "whenUnsatisfiable": sd.action, "pods": len(sd.pods)}
        rec |= {f"skew:{r.name}": int(skews[i, k]) for k, r in enumerate(runs)}
        records.append(rec)
    columns = ["constraint", "namespace", "topologyKey", "maxSkew", "whenUnsatisfiable", "pods",
               *(f"skew:{r.name}" for r in runs)]
    return pd.DataFrame.from_records(records, columns=columns)


def _disruption_rows(state: ClusterState, runs: list[PlacementRun], spread: pd.DataFrame) -> Rows:
    rows: Rows = []
    if len(spread):
        skew = spread[[f"skew:{r.name}" for r in runs]].to_numpy()
        excess = skew - spread["maxSkew"].to_numpy()[:, None]
        rows.append((f"spread constraints over maxSkew (of {len(spread)})", "int",
                     [int(x) for x in (excess > 0).sum(axis=0)]))
        rows.append(("worst spread skew over maxSkew", "int", [int(x) for x in np.maximum(excess, 0).max(axis=0)]))
        for _, row in spread.head(SUMMARY_SPREAD).iterrows():
            rows.append((f"spread skew: {row['constraint']}", "int", [int(row[f"skew:{r.name}"]) for r in runs]))
    rows.append(("evictions", "int", [int(m.evicted(state, r.node_of).sum()) for r in runs]))
    rows.append(("moves", "int", [int(m.moved(state, r.node_of).sum()) for r in runs]))
    rows.append(("PDB violations", "int", [len(m.pdb_violations(state, r.node_of)) for r in runs]))
    return rows


def _run_rows(runs: list[PlacementRun]) -> Rows:
    rows: Rows = [("score objective", "float", [r.score_objective for r in runs]),
                  ("run time", "seconds", [r.seconds for r in runs])]
    certs = [r.certificate or {} for r in runs]
    if any(certs):
        rows.append(("certificate status", "text", [c.get("status") for c in certs]))
        tiers = list(dict.fromkeys(t["name"] for c in certs for t in c.get("tiers", [])))
        for tier in tiers:
            found: list[dict[str, Any]] = [next((t for t in c.get("tiers", []) if t["name"] == tier), {})
                                           for c in certs]
            label = tier_label(tier)  # what it counts: tier_glossary, beside the table
            rows.append((f"{label}: objective", "float", [t.get("objective") for t in found]))
            rows.append((f"{label}: bound", "float", [t.get("bound") for t in found]))
            rows.append((f"{label}: gap", "pct", [_gap(t) for t in found]))
        rows.append(("greedy is optimal for this batch", "bool", [c.get("greedyOptimal") for c in certs]))
    return rows


def tier_definitions(runs: list[PlacementRun]) -> list[tuple[str, str]]:
    """(term, what it counts) for the tiers of the runs' certificates: the summary rows' glossary."""
    return tier_glossary(t["name"] for r in runs for t in (r.certificate or {}).get("tiers", []))


def _gap(tier: dict[str, Any]) -> float | str | None:
    """A tier's gap (a ratio), "no useful bound" where the certificate gives none, None without the tier."""
    if not tier:
        return None
    return NO_BOUND if tier.get("gap") is None else tier["gap"]


def summary_table(state: ClusterState, runs: list[PlacementRun], workload: m.Workload,
                  spread: pd.DataFrame, devices: dict[str, m.DeviceUsage] | None = None,
                  device_frag: dict[str, m.GpuFragmentation] | None = None
                  ) -> tuple[pd.DataFrame, dict[str, str]]:
    """One column per run, one row per metric; and each row's format. ``spread`` is :func:`spread_table`;
    ``devices`` and ``device_frag`` (by run name) add the DRA device rows."""
    rows = [("mode", "text", [r.mode for r in runs])]
    rows += _placement_rows(state, runs) + _resource_rows(state, runs, workload)
    rows += _device_rows(runs, devices or {}, device_frag or {})
    rows += _disruption_rows(state, runs, spread) + _run_rows(runs)
    frame = pd.DataFrame([vals for _, _, vals in rows], index=[label for label, _, _ in rows],
                         columns=[r.name for r in runs], dtype=object)
    frame.index.name = "metric"
    return frame, {label: kind for label, kind, _ in rows}


def _change(state: ClusterState, p: int, first: PlacementRun, other: PlacementRun) -> str | None:
    """How ``other`` treats pod ``p`` compared with the first run, in a few words."""
    a, b = int(first.node_of[p]), int(other.node_of[p])
    if a == b:
        return None
    bound = int(state.pod_node[p])
    if b < 0:
        return "evicts it" if bound >= 0 else "leaves it pending"
    if a < 0:
        return "places it" + (" back" if bound >= 0 else "")
    return "moves it" if bound >= 0 and b != bound else "other node"


def pods_table(state: ClusterState, runs: list[PlacementRun]) -> pd.DataFrame:
    """Every pending, moved or evicted pod that some run places differently from the first run."""
    first = runs[0]
    stack = np.stack([r.node_of for r in runs])
    touched = (state.pod_node < 0) | (stack != state.pod_node).any(axis=0)
    differ: list[int] = np.flatnonzero(touched & (stack != stack[0]).any(axis=0)).tolist()
    rows = sorted(differ, key=lambda p: (-int(state.pod_priority[p]), state.pods[p].key))
    plugins = list(dict.fromkeys(pl for p in rows for pl in first.pod_scores.get(p, {})))
    names = state.node_names
    records = []
    for p in rows:
        bound = int(state.pod_node[p])
        rec: dict[str, Any] = {"pod": state.pods[p].key, "priority": int(state.pod_priority[p]),
                               "input node": names[bound] if bound >= 0 else None}
        for r in runs:
            rec[f"node:{r.name}"] = names[int(r.node_of[p])] if r.node_of[p] >= 0 else None
        placed_by = [r.name for r in runs if r.node_of[p] >= 0]
        rec["placed only by"] = placed_by[0] if len(placed_by) == 1 else None
        rec["change"] = "; ".join(f"{r.name} {c}" for r in runs[1:] if (c := _change(state, p, first, r)))
        for r in runs:
            why = r.unschedulable.get(p) or r.not_handled.get(p)
            if why is None and r.node_of[p] < 0 and bound >= 0:
                why = "evicted"
            rec[f"reason:{r.name}"] = why
        scores = first.pod_scores.get(p, {})
        for pl in plugins:
            rec[f"{first.name} score:{pl}"] = scores.get(pl)
        if plugins:
            rec[f"{first.name} score:total"] = sum(scores.values()) if scores else None
        records.append(rec)
    columns = ["pod", "priority", "input node", *(f"node:{r.name}" for r in runs), "placed only by", "change",
               *(f"reason:{r.name}" for r in runs)]
    score_cols = [f"{first.name} score:{pl}" for pl in plugins] + ([f"{first.name} score:total"] if plugins else [])
    frame = pd.DataFrame.from_records(records, columns=columns + score_cols)
    for col in columns:  # text columns: None, never NaN, where there is nothing to say
        frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
    return frame.astype({"priority": "Int64", **{col: "Int64" for col in score_cols}})


def _shape_text(state: ClusterState, shape: np.ndarray) -> str:
    return ", ".join(f"{r}={format_quantity(r, int(v))}" for r, v in zip(state.resources, shape)
                     if v and r != "pods")


def nodes_table(state: ClusterState, runs: list[PlacementRun], workload: m.Workload,
                devices: dict[str, m.DeviceUsage] | None = None) -> pd.DataFrame:
    """One row per run and node: pods, utilization, free and fragmented free per resource, the largest
    workload shape that still fits and how many copies of it; with ``devices`` (by run name) the DRA
    devices published, allocated, free and stranded. ``expected fragmented:nvidia.com/gpu`` is FGD's
    per-node GPU fragmentation."""
    shown = shown_resources(state)
    cols = [state.resource_col(r) for r in shown]
    zone = state.label(ZONE_LABEL)
    frames = []
    for r in runs:
        util = m.utilization(state, r.node_of)
        free = m.free_capacity(state, r.node_of)
        frag = m.fragmented_free(state, r.node_of, workload)
        best = m.largest_fitting_shape(state, r.node_of, workload)
        data: dict[str, Any] = {"run": r.name, "node": state.node_names,
                                "zone": [zone.values[c] if c >= 0 else None for c in zone.codes],
                                "schedulable": ~state.unschedulable, "pods": m.pods_per_node(state, r.node_of)}
        for res, j in zip(shown, cols):
            data[f"util:{res}"] = util[:, j]
        for res, j in zip(shown, cols):
            data[f"free:{res}"] = free[:, j]
        expected = m.expected_fragmented_free(state, r.node_of, workload)
        for res, j in zip(shown, cols):
            data[f"fragmented:{res}"] = frag[:, j]
        for res, j in zip(shown, cols):
            data[f"expected fragmented:{res}"] = expected[:, j]
        data["largest fitting shape"] = [_shape_text(state, workload.shapes[b]) if b >= 0 else None for b in best]
        data["copies of it"] = [int(m.copies_that_fit(free[n:n + 1], workload.shapes[b])[0]) if b >= 0 else 0
                                for n, b in enumerate(best)]
        if devices:
            use = devices[r.name]
            data |= {"DRA devices": use.published, "DRA allocated": use.allocated, "DRA free": use.free,
                     "DRA stranded": use.stranded}
        frames.append(pd.DataFrame(data))
    return pd.concat(frames, ignore_index=True)
