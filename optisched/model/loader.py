"""Read clusters from files, folders, stdin or a live cluster.

Accepts what ``kubectl get nodes,pods,pdb,priorityclasses,namespaces,services,replicasets -A -o yaml``
(and ``pv,pvc,storageclass,csinode,csidriver,csistoragecapacities,volumeattachments``) writes (``kind: List``), multi-document YAML manifests and JSON. Any problem
becomes an :class:`~optisched.errors.InputError` naming the file, the object
and the field; input files are only ever read.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import collector
from ..errors import InputError
from .bounded import DEFAULT_MAX_INPUT
from .cluster import Cluster, resolve_priority
from .documents import load_documents, read_source, validation_message
from .names import check_object_name
from .objects import (
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
)
from .storage import (
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    storage_warnings,
)
from .storage_kinds import CSIStorageCapacity, VolumeAttachment

__all__ = ["cluster_from_objects", "load_cluster", "load_documents", "read_source", "validation_message"]

_MODELS: dict[str, tuple[type[BaseModel], tuple[str, ...], str]] = {
    # kind: (model, accepted apiVersions, Cluster attribute)
    "Node": (Node, ("v1",), "nodes"),
    "Pod": (Pod, ("v1",), "pods"),
    "PriorityClass": (PriorityClass, ("scheduling.k8s.io/v1",), "priority_classes"),
    "PodDisruptionBudget": (PodDisruptionBudget, ("policy/v1",), "pdbs"),
    "Namespace": (Namespace, ("v1",), "namespaces"),
    "Service": (Service, ("v1",), "services"),
    "ReplicaSet": (ReplicaSet, ("apps/v1",), "replica_sets"),
    "StatefulSet": (StatefulSet, ("apps/v1",), "stateful_sets"),
    "ReplicationController": (ReplicationController, ("v1",), "replication_controllers"),
    "PersistentVolume": (PersistentVolume, ("v1",), "persistent_volumes"),
    "PersistentVolumeClaim": (PersistentVolumeClaim, ("v1",), "persistent_volume_claims"),
    "StorageClass": (StorageClass, ("storage.k8s.io/v1",), "storage_classes"),
    "CSINode": (CSINode, ("storage.k8s.io/v1",), "csi_nodes"),
    "CSIDriver": (CSIDriver, ("storage.k8s.io/v1",), "csi_drivers"),
    "CSIStorageCapacity": (CSIStorageCapacity, ("storage.k8s.io/v1",), "csi_storage_capacities"),
    "VolumeAttachment": (VolumeAttachment, ("storage.k8s.io/v1",), "volume_attachments"),
}
_NAMESPACED = {"Pod", "PodDisruptionBudget", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
               "PersistentVolumeClaim", "CSIStorageCapacity"}
_SUFFIXES = (".yaml", ".yml", ".json")


def _walk_error(e: OSError) -> None:
    raise InputError(f"cannot read: {e.strerror}", source=str(e.filename)) from None


def _folder_files(folder: str) -> list[str]:
    """The manifests under ``folder``, recursively; a sub-folder that cannot be listed is an error, not a
    silently empty part of the input."""
    files = []
    for root, dirs, names in os.walk(folder, onerror=_walk_error):
        dirs.sort()
        files += [os.path.join(root, n) for n in names if n.endswith(_SUFFIXES)]
    return sorted(files)


def _expand(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if path != "-" and Path(path).is_dir():
            files = _folder_files(path)
            if not files:
                raise InputError("folder holds no .yaml, .yml or .json file", source=path)
            yield from files
        else:
            yield path


def _object_ref(kind: str, raw: dict, index: int) -> str:
    meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name") if meta else None
    if not name:
        return f"{kind} (document {index + 1})"
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if ns and kind in _NAMESPACED else f"{kind}/{name}"


def _add_object(cluster: Cluster, source: str, raw: Any, index: int, seen: set) -> None:
    if raw is None:
        return
    if not isinstance(raw, dict):
        raise InputError(f"document {index + 1} is a {type(raw).__name__}, expected a Kubernetes object",
                         source=source)
    kind = raw.get("kind")
    if not kind or not isinstance(kind, str):
        raise InputError(f"document {index + 1} has no kind", source=source, path=".kind")
    if kind == "List" or kind.endswith("List") and isinstance(raw.get("items"), list):
        items = raw.get("items")
        if not isinstance(items, list):
            raise InputError("a List needs items", source=source, obj="List", path=".items")
        for i, item in enumerate(items):
            _add_object(cluster, source, item, i, seen)
        return
    if kind == "KubeSchedulerConfiguration":
        from ..profile import parse_config

        if cluster.config is not None:
            raise InputError("a second KubeSchedulerConfiguration; give exactly one", source=source, obj=kind)
        cluster.config = parse_config(raw, source=source)
        return
    if kind not in _MODELS:
        cluster.skipped[kind] += 1
        return
    model, versions, attr = _MODELS[kind]
    ref = _object_ref(kind, raw, index)
    api = raw.get("apiVersion")
    if api is not None and api not in versions:
        raise InputError(f"apiVersion {api!r} is not supported for {kind}; expected {' or '.join(versions)}",
                         source=source, obj=ref, path=".apiVersion")
    meta = raw.get("metadata")
    if kind in _NAMESPACED and isinstance(meta, dict) and not meta.get("namespace"):
        raw = {**raw, "metadata": {**meta, "namespace": "default"}}
    try:
        obj = model.model_validate(raw)
    except ValidationError as err:
        path, msg = validation_message(err)
        raise InputError(msg, source=source, obj=ref, path=path) from None
    namespace = obj.metadata.namespace if kind in _NAMESPACED else None  # type: ignore[attr-defined]
    check_object_name(kind, obj.metadata.name, namespace, source=source, ref=ref)  # type: ignore[attr-defined]
    key = (kind, namespace, obj.metadata.name)  # type: ignore[attr-defined]
    if key in seen:
        raise InputError("duplicate object: the same kind, namespace and name appear twice",
                         source=source, obj=obj.ref)  # type: ignore[attr-defined]
    seen.add(key)
    getattr(cluster, attr).append(obj)
    cluster.__dict__.setdefault("_origin", {})[key] = source


def _finish(cluster: Cluster) -> Cluster:
    origin: dict = cluster.__dict__.pop("_origin", {})
    cluster.origins = origin
    node_names = {n.metadata.name for n in cluster.nodes}
    classes = {pc.metadata.name: pc for pc in cluster.priority_classes}
    defaults = [pc for pc in cluster.priority_classes if pc.global_default]
    if len(defaults) > 1:
        raise InputError("more than one PriorityClass has globalDefault: true (" +
                         ", ".join(d.metadata.name for d in defaults) + ")",
                         source=origin.get(("PriorityClass", None, defaults[1].metadata.name), ""),
                         obj=defaults[1].ref, path=".globalDefault")
    default = defaults[0] if defaults else None
    resolved = []
    for pod in cluster.pods:
        src = origin.get(("Pod", pod.metadata.namespace, pod.metadata.name), "")
        if pod.spec.node_name and pod.spec.node_name not in node_names:
            # normal in a dump taken while a node is removed: the pod goes with its node
            cluster.warnings.append(f"{src + ': ' if src else ''}{pod.ref} .spec.nodeName: bound to node "
                                    f"{pod.spec.node_name!r}, which is not in the input; the pod is left out")
            continue
        try:
            resolved.append(resolve_priority(pod, classes, default))
        except KeyError:
            raise InputError(f"PriorityClass {pod.spec.priority_class_name!r} does not exist",
                             source=src, obj=pod.ref, path=".spec.priorityClassName") from None
    cluster.pods = resolved
    cluster.warnings.extend(storage_warnings(cluster))
    return cluster


def cluster_from_objects(objects: Iterable[dict], source: str = "<objects>") -> Cluster:
    """Build a :class:`Cluster` from already-parsed API objects (dicts)."""
    cluster, seen = Cluster(sources=[source]), set()
    with collector.paused(freeze=True):  # what was loaded lives as long as the run
        for i, raw in enumerate(objects):
            _add_object(cluster, source, raw, i, seen)
        return _finish(cluster)


def load_cluster(paths: Iterable[str], max_bytes: int = DEFAULT_MAX_INPUT) -> Cluster:
    """Load one or more files, folders (``*.yaml``, ``*.yml``, ``*.json``, recursively) or ``-`` (stdin),
    each at most ``max_bytes`` long."""
    cluster, seen = Cluster(), set()
    with collector.paused(freeze=True):  # what was loaded lives as long as the run
        for path in _expand(paths):
            source, text = read_source(path, max_bytes)
            cluster.sources.append(source)
            for i, raw in enumerate(load_documents(source, text)):
                _add_object(cluster, source, raw, i, seen)
        if not cluster.sources:
            raise InputError("no input given")
        return _finish(cluster)
