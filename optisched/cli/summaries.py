"""A run's outcome as plain data: what ``schedule`` prints as tables and as ``--json``, and what ``--output``
writes. The renderer formats these numbers and nothing else, so the table and the JSON always agree.

Pods are keyed by ``namespace/name``; quantities are in scheduler units (cpu in millicores, memory and
storage in bytes), percentages are of allocatable.
"""
from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import numpy as np

from ..model.state import ClusterState
from ..outputs import csv_text

__all__ = ["greedy_summary", "optimal_summary", "placement_summary", "placements_out", "placements_text",
           "pod_status"]


def _evicted(state: ClusterState, node_of: np.ndarray, preempted: dict[int, tuple[int, int]]) -> dict[str, Any]:
    """Pods bound in the input that end without a node: the victims of preemption (with their preemptor
    when the run knows it: greedy mode does, optimal mode's batch does not name one pod)."""
    out: dict[str, Any] = {}
    for p in np.flatnonzero((state.pod_node >= 0) & (node_of < 0)).tolist():
        by = preempted.get(p)
        out[state.pods[p].key] = {"node": state.node_names[int(state.pod_node[p])],
                                  "priority": int(state.pod_priority[p]),
                                  "preemptor": state.pods[by[0]].key if by is not None else None}
    return out


def _moved(state: ClusterState, node_of: np.ndarray) -> dict[str, dict[str, str]]:
    rows = np.flatnonzero((state.pod_node >= 0) & (node_of >= 0) & (node_of != state.pod_node))
    return {state.pods[p].key: {"from": state.node_names[int(state.pod_node[p])],
                                "to": state.node_names[int(node_of[p])]} for p in rows.tolist()}


def _utilization(state: ClusterState, node_of: np.ndarray) -> list[dict[str, Any]]:
    requested = np.zeros_like(state.allocatable)
    on = node_of >= 0
    np.add.at(requested, node_of[on], state.pod_requests[on])
    rows = []
    for j, r in enumerate(state.resources):
        alloc = state.allocatable[:, j]
        if not alloc.any():
            continue
        req = requested[:, j]
        per = np.where(alloc > 0, req / np.maximum(alloc, 1), 0.0)
        rows.append({"resource": r, "requested": int(req.sum()), "allocatable": int(alloc.sum()),
                     "percent": round(100 * float(req.sum()) / float(alloc.sum()), 1),
                     "maxNodePercent": round(100 * float(per.max()), 1)})
    return rows


def placement_summary(state: ClusterState, node_of: np.ndarray, unschedulable: dict[int, str],
                      not_handled: dict[int, str], preempted: dict[int, tuple[int, int]] | None = None
                      ) -> dict[str, Any]:
    """Counts, the pods left pending (``unschedulable``: keyed ``ns/name``, with priority and the last
    FitError), the pods not handled (gated, another scheduler), the evicted and moved pods, and utilization
    (requested / allocatable per resource, overall and on the fullest node)."""
    pending = state.pending
    evicted = _evicted(state, node_of, preempted or {})
    moved = _moved(state, node_of)
    return {
        "counts": {"pending": len(pending),
                   "scheduled": int(np.count_nonzero(node_of[pending] >= 0)) if len(pending) else 0,
                   "unschedulable": len(unschedulable), "notHandled": len(not_handled),
                   "evicted": len(evicted), "moved": len(moved)},
        "unschedulable": {state.pods[p].key: {"priority": int(state.pod_priority[p]), "reason": why}
                          for p, why in unschedulable.items()},
        "notHandled": {state.pods[p].key: why for p, why in not_handled.items()},
        "evicted": evicted,
        "moved": moved,
        "utilization": _utilization(state, node_of),
    }


def pod_status(state: ClusterState, node_of: np.ndarray, not_handled: dict[int, str],
               not_attempted: Collection[int] = ()) -> list[str]:
    """Per pod row: ``bound`` (kept its node), ``moved``, ``scheduled`` (was pending, placed), ``evicted``
    (was bound, has no node now), ``not handled``, ``not attempted`` (an interrupted run did not reach it)
    or ``pending``."""
    untried = set(not_attempted)
    out = []
    for p in range(len(state.pods)):
        was, now = int(state.pod_node[p]), int(node_of[p])
        if was >= 0:
            out.append("evicted" if now < 0 else "bound" if now == was else "moved")
        elif now >= 0:
            out.append("scheduled")
        else:
            out.append("not handled" if p in not_handled else "not attempted" if p in untried else "pending")
    return out


def placements_out(state: ClusterState, node_of: np.ndarray, not_handled: dict[int, str]) -> dict[str, str | None]:
    """Every pod still in the cluster with its node (``None``: pending or not handled); the evicted pods
    are left out (they are listed apart), so an eviction never reads as a pod left pending."""
    names, status = state.node_names, pod_status(state, node_of, not_handled)
    return {pod.key: names[int(node_of[p])] if node_of[p] >= 0 else None
            for p, pod in enumerate(state.pods) if status[p] != "evicted"}


def placements_text(fmt: str, mode: str, state: ClusterState, node_of: np.ndarray, not_handled: dict[int, str],
                    extra: dict[str, Any], not_attempted: Collection[int] = ()) -> str:
    """What ``--output`` writes: ``fmt="csv"``, one ``pod,node,status`` row per pod (``status`` from
    :func:`pod_status`); else a JSON document ``{"mode", "placements", **extra}``."""
    if fmt == "csv":
        names, status = state.node_names, pod_status(state, node_of, not_handled, not_attempted)
        rows = [(pod.key, names[int(node_of[p])] if node_of[p] >= 0 else "", status[p])
                for p, pod in enumerate(state.pods)]
        return csv_text(["pod", "node", "status"], rows)  # every field quoted, formulas neutralized
    doc = {"mode": mode, "placements": placements_out(state, node_of, not_handled), **extra}
    return json.dumps(doc, indent=1) + "\n"


def greedy_summary(result: Any) -> dict[str, Any]:
    """A greedy run (:class:`~optisched.greedy.scheduler.GreedyResult`) as :func:`placement_summary`."""
    node_of = np.asarray(result.snapshot.node_of, dtype=np.int64)
    out = {"mode": "greedy", **placement_summary(result.state, node_of, result.unschedulable, result.skipped,
                                                 result.preempted)}
    if result.interrupted:  # Ctrl-C: the pods bound so far; the rest were never tried
        untried = result.not_attempted
        out["interrupted"] = True
        out["counts"]["notAttempted"] = len(untried)
        out["notAttempted"] = [result.state.pods[p].key for p in untried]
    return out


def optimal_summary(result: Any) -> dict[str, Any]:
    """An optimal run (:class:`~optisched.optimal.result.OptimalResult`): :func:`placement_summary`, the
    certificate, why pods stay pending, and the placements that fail the independent re-check."""
    return {"mode": "optimal",
            **placement_summary(result.state, result.node_of, result.unschedulable, result.batch.skipped),
            "certificate": result.certificate.to_dict(),
            "explanations": [e.to_dict() for e in result.explanations],
            "violations": [str(v) for v in result.violations],
            **({"interrupted": True} if result.certificate.interrupted else {})}
