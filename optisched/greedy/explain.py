"""One pod's scheduling cycles as plain data: what ``optisched explain`` prints and ``--json`` returns.

A pod can take several cycles: a preemptor's first cycle fails, nominates a node and evicts victims
(PostFilter, ``pkg/scheduler/framework/preemption``, v1.35.4), and its next cycle binds it there. Every
attempt is listed, so the preemption and the placement it made room for are both shown.
"""
from __future__ import annotations

from typing import Any

from .scheduler import CycleRecord, GreedyResult

__all__ = ["explain_pod"]


def _nodes(result: GreedyResult, rec: CycleRecord) -> list[dict[str, Any]]:
    """Every node in evaluation order: chosen, feasible (with weighted scores), the rejecting plugin and
    its reasons, or not evaluated (the feasible-node count was reached first)."""
    names, fp, sp = result.state.node_names, rec.filters, rec.scores
    scored = {int(n): i for i, n in enumerate(sp.nodes)} if sp is not None else {}
    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    if fp is not None:
        for pos, n in enumerate(fp.evaluated.tolist()):
            seen.add(n)
            if fp.passed[pos]:
                i = scored.get(n)
                scores = {p: int(w[i]) for p, w in sp.weighted.items()} if sp is not None and i is not None else {}
                rows.append({"node": names[n], "result": "chosen" if n == rec.chosen else "feasible",
                             "scores": scores, "total": int(sp.total[i]) if sp is not None and i is not None
                             else None})
            else:
                rows.append({"node": names[n], "result": "rejected",
                             "plugin": fp.plugin_names[int(fp.fail_plugin[pos])], "reasons": list(fp.reasons_at(pos))})
    if rec.pre_filter is None:
        rows += [{"node": names[int(n)], "result": "not evaluated"} for n in result.node_order if int(n) not in seen]
    return rows


def _attempt(result: GreedyResult, rec: CycleRecord) -> dict[str, Any]:
    state = result.state
    pre = None
    if rec.pre_filter is not None:
        st, plugin = rec.pre_filter
        pre = {"plugin": plugin, "reasons": list(st.reasons)}
    preemption = None
    pf = rec.post_filter
    if pf is not None:
        preemption = {"node": state.node_names[pf.nominated] if pf.nominated is not None else None,
                      "victims": [{"pod": state.pods[v].key, "priority": int(state.pod_priority[v])}
                                  for v in pf.victims],
                      "message": pf.message}
    return {"attempt": rec.attempt, "nominatedNode": rec.nominated, "preFilter": pre,
            "nodes": _nodes(result, rec),
            "chosen": state.node_names[rec.chosen] if rec.chosen is not None else None,
            "scorePluginsSkipped": list(rec.scores.skipped) if rec.scores is not None else [],
            "message": rec.message, "preemption": preemption}


def explain_pod(result: GreedyResult, row: int) -> dict[str, Any]:
    """Every cycle greedy mode ran for pod ``row``, in order, and where it ended."""
    state = result.state
    node = int(result.snapshot.node_of[row])
    return {"pod": state.pods[row].key, "priority": int(state.pod_priority[row]),
            "node": state.node_names[node] if node >= 0 else None,
            "attempts": [_attempt(result, rec) for rec in result.cycles if rec.pod == row]}
