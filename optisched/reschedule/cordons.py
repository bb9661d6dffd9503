"""Cordon and uncordon nodes for ``--apply``, as ``kubectl cordon`` and ``kubectl uncordon`` do.

Every replay that predicts a plan's landings holds the plan's ``cordoned`` nodes (the ones it empties)
and ``held`` nodes (empty ones it keeps empty) unschedulable, so a run must cordon them before its
first eviction or kube-scheduler's LeastAllocated score sends a replacement to the emptiest node.
kubectl v1.35 (``staging/src/k8s.io/kubectl/pkg/drain/cordon.go``, ``CordonHelper``) reads the node,
changes nothing when ``spec.unschedulable`` already has the value wanted (``UpdateIfRequired``), and
otherwise sends the two-way strategic merge patch between the node and the node changed
(``PatchOrReplaceWithContext``): ``{"spec": {"unschedulable": true}}`` to cordon, and
``{"spec": {"unschedulable": null}}`` to uncordon (the field is ``omitempty``: false drops it).
Each cordon here also writes the run's mark in the same patch, and each uncordon removes it
(:mod:`.marks`); only a marked node is ever uncordoned, so a node found unschedulable is the user's and
stays as it is.
"""
from __future__ import annotations

import json
from typing import Any

from .marks import cordon_patch, mark_of, uncordon_patch

__all__ = ["api_error", "cordon", "release", "uncordon_all"]

STRATEGIC_MERGE = "application/strategic-merge-patch+json"  # types.StrategicMergePatchType


def api_error(e: Exception) -> str:
    """An API error or a connection error in one line."""
    status = getattr(e, "status", None)
    if status is not None:
        return f"{status} {getattr(e, 'reason', '') or ''}".strip()
    return " ".join(str(e).split())  # a connection error: one line


def _read(api: Any, name: str, verb: str) -> tuple[dict | None, str | None]:
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    try:
        return json.loads(api.read_node(name, _preload_content=False).data), None
    except (ApiException, HTTPError) as e:
        return None, f"cannot {verb} node {name}: reading it answered {api_error(e)}"


def _patch(api: Any, name: str, body: dict, verb: str) -> str | None:
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    try:
        api.patch_node(name, body, _content_type=STRATEGIC_MERGE, _preload_content=False)
    except (ApiException, HTTPError) as e:
        return f"cannot {verb} node {name}: the patch answered {api_error(e)}"
    return None


def _unchanged(node: dict, body: dict) -> dict:
    """``body`` applied only to the node as read: its ``resourceVersion`` in the patch is a precondition
    (the API server answers 409 Conflict when the node changed since), so a cordon the user made meanwhile
    is never marked, and a node re-cordoned meanwhile never uncordoned."""
    version = (node.get("metadata") or {}).get("resourceVersion")
    if not version:
        return body
    return body | {"metadata": {**body.get("metadata", {}), "resourceVersion": version}}


def cordon(api: Any, name: str, plan_id: str, why: str) -> tuple[bool, str | None]:
    """Cordon node ``name`` through ``api`` (a kubernetes ``CoreV1Api``) and mark it for ``plan_id``
    (:mod:`.marks`), unless it is unschedulable already: (whether it was patched, None) or (False, why it
    failed, one line). A node found unschedulable is neither patched nor marked."""
    node, failed = _read(api, name, "cordon")
    if node is None:
        return False, failed
    if (node.get("spec") or {}).get("unschedulable"):
        return False, None
    failed = _patch(api, name, _unchanged(node, cordon_patch(plan_id, why)), "cordon")
    return failed is None, failed


def release(api: Any, name: str, plan_id: str | None) -> tuple[str | None, str | None]:
    """Uncordon node ``name`` and remove its mark when the mark is ``plan_id``'s (any plan's when None):
    (``"uncordoned"``, None), (``"unmarked"``, None) for a schedulable node keeping a mark (a user ran
    ``kubectl uncordon``): the mark only is removed; (None, None) for a node without the mark, or with
    another plan's, which is left alone; (None, why it failed)."""
    node, failed = _read(api, name, "uncordon")
    if node is None:
        return None, failed
    mark = mark_of(node)
    if mark is None or (plan_id is not None and mark.plan != plan_id):
        return None, None
    failed = _patch(api, name, _unchanged(node, uncordon_patch(mark.unschedulable)), "uncordon")
    return (None, failed) if failed else ("uncordoned" if mark.unschedulable else "unmarked", None)


def uncordon_all(api: Any, names: list[str], plan_id: str | None) -> tuple[list[str], list[tuple[str, str]]]:
    """:func:`release` each of ``names``: (the nodes uncordoned, (node, why) per failure); a failure does
    not stop the others."""
    done: list[str] = []
    failed: list[tuple[str, str]] = []
    for name in names:
        outcome, why = release(api, name, plan_id)
        if why:
            failed.append((name, why))
        elif outcome == "uncordoned":
            done.append(name)
    return done, failed
