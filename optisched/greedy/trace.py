"""Greedy runs as traces, in the format of the conformance traces (``shared/conformance/README.md``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import Code
from ..profile import SchedulerConfig
from ..profile.releases import release
from .scheduler import CycleRecord, GreedyResult
from .select import TieBreak

__all__ = ["cycle_to_json", "trace_of"]

_TIE = {TieBreak.FIRST: "first-in-node-order", TieBreak.HEAP: "heap", TieBreak.RANDOM: "random"}


def _filter_failures(res: GreedyResult, rec: CycleRecord) -> dict[str, dict]:
    names = res.state.node_names
    out: dict[str, dict] = {}
    if rec.pre_filter is not None:
        status, plugin = rec.pre_filter
        for n in names:
            out[n] = {"code": status.code.label, "plugin": plugin, "reasons": list(status.reasons)}
        return out
    fp = rec.filters
    if rec.absent is not None:  # the conformance traces expand the shared status node by node
        for row in rec.absent.nonzero()[0]:
            out[names[int(row)]] = {"code": "UnschedulableAndUnresolvable", "plugin": "PreFilterResult",
                                  "reasons": [rec.absent_reason]}
    if fp is None:
        return out
    for pos in np.flatnonzero(~fp.passed):
        out[names[int(fp.evaluated[pos])]] = {
            "code": Code(int(fp.fail_code[pos])).label,
            "plugin": fp.plugin_names[int(fp.fail_plugin[pos])],
            "reasons": fp.reasons_at(int(pos)),
        }
    return out


def _absent_nodes(res: GreedyResult, rec: CycleRecord) -> dict[str, Any]:
    """The nodes a PreFilter result left out and their one shared status, as kube-scheduler's diagnosis
    keeps them (``NodeToStatus.absentNodesStatus``): not filter failures of any plugin."""
    assert rec.absent is not None
    names = res.state.node_names
    return {"plugins": list(rec.absent_plugins), "code": "UnschedulableAndUnresolvable",
            "reasons": [rec.absent_reason], "nodes": [names[int(n)] for n in rec.absent.nonzero()[0]]}


def cycle_to_json(res: GreedyResult, rec: CycleRecord) -> dict[str, Any]:
    state = res.state
    names = state.node_names
    pod = state.pods[rec.pod]
    out: dict[str, Any] = {"pod": pod.key, "attempt": rec.attempt, "priority": int(state.pod_priority[rec.pod])}
    if rec.nominated:
        out["nominatedNodeName"] = rec.nominated
    out["skippedFilterPlugins"] = sorted(rec.skipped_filters)
    fp = rec.filters
    out["evaluatedNodes"] = len(fp.evaluated) if fp is not None else 0
    out["feasible"] = [names[int(n)] for n in fp.feasible] if fp is not None else []
    out["filterFailures"] = _filter_failures(res, rec)
    if rec.absent is not None:
        out["preFilterNodeNames"] = [n for n, left_out in zip(names, rec.absent) if not left_out]
        out["absentNodes"] = _absent_nodes(res, rec)
    sp = rec.scores
    out["scored"] = bool(fp is not None and len(fp.feasible) > 1)
    if sp is not None:
        out["skippedScorePlugins"] = sorted(sp.skipped)
        scores = {}
        for i, n in enumerate(sp.nodes):
            scores[names[int(n)]] = {
                "total": int(sp.total[i]),
                "plugins": {k: int(v[i]) for k, v in sp.weighted.items()},
                "normalized": {k: int(v[i]) for k, v in sp.normalized.items()},
                "raw": {k: int(v[i]) for k, v in sp.raw.items()},
            }
        out["scores"] = scores
        best = int(sp.total.max())
        out["maxScore"] = best
        out["maxScoreNodes"] = [names[int(n)] for n, t in zip(sp.nodes, sp.total) if t == best]
    else:
        out["maxScore"] = None
        out["maxScoreNodes"] = []
    if rec.heap_pick is not None:
        out["heapPick"] = names[rec.heap_pick]
    out["chosen"] = names[rec.chosen] if rec.chosen is not None else None
    out["preemption"] = rec.preemption
    if rec.allocations:
        out["allocations"] = rec.allocations
    if rec.deallocated:
        out["deallocated"] = rec.deallocated
    if rec.message:
        out["message"] = rec.message
    return out


def trace_of(res: GreedyResult, config: SchedulerConfig, tie_break: TieBreak) -> dict[str, Any]:
    """The whole run as one trace document."""
    profile = config.profiles[0]
    state = res.state
    doc = {
        "kubernetesVersion": release(config.kubernetes_version).patch,
        "source": "optisched greedy mode",
        "tieBreak": _TIE[tie_break],
        "percentageOfNodesToScore": profile.effective_percentage(config.percentage_of_nodes_to_score),
        "scoreWeights": dict(profile.score_weights),
        "plugins": {k: list(v) for k, v in profile.plugins.items()},
        # the gates the scheduler reads, as the run had them (a conformance trace's featureGates)
        "featureGates": config.feature_gates.scheduler_values(),
        "nodeOrder": [state.node_names[int(i)] for i in res.node_order],
        "queueOrder": [state.pods[p].key for p in res.queue_order],
        "cycles": [cycle_to_json(res, rec) for rec in res.cycles],
        "final": res.placements(),
        "unschedulable": sorted(state.pods[p].key for p in res.unschedulable),
        "preempted": {state.pods[v].key: {"by": state.pods[by].key, "node": state.node_names[n]}
                      for v, (by, n) in res.preempted.items()},
    }
    claims = _claims(res)
    if claims:
        doc["claims"] = claims
    return doc


def _claims(res: GreedyResult) -> dict[str, dict]:
    """Every ResourceClaim at the end of the run: its node, devices, requests and ``reservedFor`` (pods by
    ``ns/name``), as the DRA conformance traces end."""
    if not res.state.cluster.resource_claims and not res.state.cluster.resource_claim_templates:
        return {}
    from ..plugins.dynamicresources.claims import claim_book

    book = claim_book(res.snapshot)
    by_ref = {p.metadata.uid or p.key: p.key for p in res.state.pods}
    out = {}
    for key, claim in sorted(book.claims.items()):
        entry: dict = {"devices": list(claim.devices),
                       "requests": [r.request for r in claim.allocation.devices.results] if claim.allocation else []}
        sel = claim.allocation.node_selector if claim.allocation is not None else None
        nodes = [v for t in (sel.node_selector_terms if sel else []) for f in t.match_fields for v in f.values]
        if len(nodes) == 1:
            entry["node"] = nodes[0]
        if claim.reserved_for:
            entry["reservedFor"] = [by_ref.get(r, r) for r in claim.reserved_for]
        out[key] = entry
    return out
