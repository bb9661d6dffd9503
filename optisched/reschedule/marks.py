"""The marks ``--apply`` leaves on the nodes it cordons, so that a later run can find and undo them.

Karpenter taints the nodes it disrupts and removes its taints when it restarts; here the cordon itself
(``spec.unschedulable``) is the change, and the same PATCH that sets it writes who made it:
``optisched.io/cordoned-by`` (the plan's id), ``optisched.io/cordoned-at`` (RFC 3339, UTC) and
``optisched.io/cordoned-for`` (``emptied``: a node the plan empties; ``held``: an empty node kept empty
while the plan runs). The PATCH that uncordons it removes them (``null`` deletes a map key in a strategic
merge patch as in a JSON merge patch). A node unschedulable without the mark is the user's: never
uncordoned, never marked.

A node is *empty* when every pod bound to it is a DaemonSet pod, a mirror or static pod, a terminating
pod (:func:`optisched.policy.eviction.node_bound`) or a finished one (phase ``Succeeded``/``Failed``), as
cluster-autoscaler 1.35's drainability rules (``simulator/drainability/rules/{daemonset,mirror,terminal,
longterminating}``) and ``kubectl drain`` (kubectl v1.35 ``pkg/drain/filters.go``) leave such pods out.
One difference: cluster-autoscaler leaves out only the pods terminating for longer than their grace
period; here any terminating pod, being on its way off the node, leaves it empty.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from ..model.objects import Pod
from ..policy.eviction import node_bound

__all__ = ["CORDONED_AT", "CORDONED_BY", "CORDONED_FOR", "Mark", "cordon_patch", "earlier_line", "holding",
           "list_nodes", "list_pods", "mark_of", "uncordon_patch"]

CORDONED_BY = "optisched.io/cordoned-by"
CORDONED_AT = "optisched.io/cordoned-at"
CORDONED_FOR = "optisched.io/cordoned-for"
KEYS = (CORDONED_BY, CORDONED_AT, CORDONED_FOR)


@dataclass(frozen=True)
class Mark:
    """The mark on one node: the plan that cordoned it, when, why, and whether it is cordoned still."""

    node: str
    plan: str
    at: str
    why: str
    unschedulable: bool


def mark_of(node: dict) -> Mark | None:
    """The node's mark, or None when it carries none."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    if CORDONED_BY not in ann:
        return None
    return Mark(node["metadata"]["name"], str(ann[CORDONED_BY]), str(ann.get(CORDONED_AT, "")),
                str(ann.get(CORDONED_FOR, "")), bool((node.get("spec") or {}).get("unschedulable")))


def cordon_patch(plan_id: str, why: str, now: datetime | None = None) -> dict:
    """``kubectl cordon``'s patch and the mark, in one body."""
    at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"annotations": {CORDONED_BY: plan_id, CORDONED_AT: at, CORDONED_FOR: why}},
            "spec": {"unschedulable": True}}


def uncordon_patch(cordoned: bool = True) -> dict:
    """``kubectl uncordon``'s patch (``spec.unschedulable`` is ``omitempty``: null drops it) and the mark's
    removal; only the removal when the node is schedulable already (``cordoned`` false)."""
    body: dict = {"metadata": {"annotations": dict.fromkeys(KEYS)}}
    return body | ({"spec": {"unschedulable": None}} if cordoned else {})


def list_nodes(api: Any) -> list[dict]:
    """Every node, as raw JSON (a ``CoreV1Api``'s ``list_node``)."""
    return json.loads(api.list_node(_preload_content=False).data).get("items") or []


def list_pods(api: Any) -> dict[str, dict]:
    """Every pod by ``namespace/name``, as raw JSON."""
    data = json.loads(api.list_pod_for_all_namespaces(_preload_content=False).data)
    return {f"{p['metadata'].get('namespace', 'default')}/{p['metadata']['name']}": p for p in data.get("items") or []}


def _counts(pod: dict) -> bool:
    """Whether the pod keeps its node from being empty (the module docstring). A pod the model cannot read
    counts: a node is never called empty by mistake."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    try:
        return node_bound(Pod.model_validate(pod)) is None
    except ValidationError:
        return True


def holding(pods: dict[str, dict]) -> set[str]:
    """The nodes some pod of ``pods`` keeps from being empty."""
    return {p["spec"]["nodeName"] for p in pods.values() if (p.get("spec") or {}).get("nodeName") and _counts(p)}


def earlier_line(marks: list[Mark]) -> str:
    """One line naming the cordoned nodes an earlier run marked, per plan (at its first cordon)."""
    plans: dict[str, list[Mark]] = {}
    for m in marks:
        plans.setdefault(m.plan, []).append(m)
    runs = "; ".join(f"(plan {plan} at {min(m.at for m in ms) or 'an unknown time'}): {', '.join(m.node for m in ms)}"
                     for plan, ms in plans.items())
    return f"nodes cordoned by an earlier optisched run {runs} - run optisched reschedule --undo-cordons to restore them"
