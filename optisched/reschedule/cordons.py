"""Cordon and uncordon nodes for ``--apply``, as ``kubectl cordon`` and ``kubectl uncordon`` do.

Every replay that predicts a plan's landings holds the plan's ``cordoned`` nodes (the ones it empties)
and ``held`` nodes (empty ones it keeps empty) unschedulable, so a run must cordon them before its
first eviction or kube-scheduler's LeastAllocated score sends a replacement to the emptiest node.
kubectl v1.35 (``staging/src/k8s.io/kubectl/pkg/drain/cordon.go``, ``CordonHelper``) reads the node,
changes nothing when ``spec.unschedulable`` already has the value wanted (``UpdateIfRequired``), and
otherwise sends the two-way strategic merge patch between the node and the node changed
(``PatchOrReplaceWithContext``): ``{"spec": {"unschedulable": true}}`` to cordon, and
``{"spec": {"unschedulable": null}}`` to uncordon (the field is ``omitempty``: false drops it).
A node found unschedulable is the user's and is never uncordoned.
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ["api_error", "set_unschedulable", "uncordon_all"]

STRATEGIC_MERGE = "application/strategic-merge-patch+json"  # types.StrategicMergePatchType


def api_error(e: Exception) -> str:
    """An API error or a connection error in one line."""
    status = getattr(e, "status", None)
    if status is not None:
        return f"{status} {getattr(e, 'reason', '') or ''}".strip()
    return " ".join(str(e).split())  # a connection error: one line


def set_unschedulable(api: Any, name: str, desired: bool) -> tuple[bool, str | None]:
    """Make node ``name`` (un)schedulable through ``api`` (a kubernetes ``CoreV1Api``) unless it is so
    already: (whether it was patched, None) or (False, why it failed, one line)."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    verb = "cordon" if desired else "uncordon"
    try:
        node = json.loads(api.read_node(name, _preload_content=False).data)
    except (ApiException, HTTPError) as e:
        return False, f"cannot {verb} node {name}: reading it answered {api_error(e)}"
    if bool((node.get("spec") or {}).get("unschedulable")) == desired:
        return False, None
    body = {"spec": {"unschedulable": True if desired else None}}
    try:
        api.patch_node(name, body, _content_type=STRATEGIC_MERGE, _preload_content=False)
    except (ApiException, HTTPError) as e:
        return False, f"cannot {verb} node {name}: the patch answered {api_error(e)}"
    return True, None


def uncordon_all(api: Any, names: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Uncordon each of ``names``: (the nodes uncordoned, (node, why) per failure); a failure does not
    stop the others."""
    done: list[str] = []
    failed: list[tuple[str, str]] = []
    for name in names:
        changed, why = set_unschedulable(api, name, False)
        if why:
            failed.append((name, why))
        elif changed:
            done.append(name)
    return done, failed
