"""Read clusters from files, folders, stdin or a live cluster.

Accepts what ``kubectl get nodes,pods,pdb,priorityclasses,namespaces,services,replicasets -A -o yaml``
(and ``pv,pvc,storageclass,csinode,csidriver``) writes (``kind: List``), multi-document YAML manifests and JSON. Any problem
becomes an :class:`~optisched.errors.InputError` naming the file, the object
and the field; input files are only ever read.
"""
from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import InputError
from .cluster import Cluster, resolve_priority
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
from .storage import CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass, storage_warnings

__all__ = ["cluster_from_objects", "load_cluster", "load_documents", "validation_message"]

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
}
_NAMESPACED = {"Pod", "PodDisruptionBudget", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
               "PersistentVolumeClaim"}
_SUFFIXES = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_source(path: str) -> tuple[str, str]:
    """(name, text) of a file or ``-``; unreadable input becomes an :class:`InputError` naming it."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    p = Path(path)
    try:
        return path, p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file or folder", source=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", source=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=path) from None


def _expand(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        p = Path(path)
        if path != "-" and p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in _SUFFIXES)
            if not files:
                raise InputError("folder holds no .yaml, .yml or .json file", source=path)
            yield from (str(f) for f in files)
        else:
            yield path


def load_documents(source: str, text: str) -> list[Any]:
    """Parse one file's text: JSON when it looks like JSON, else (multi-document) YAML."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            doc = json.loads(text)
            return doc if isinstance(doc, list) else [doc]
        except json.JSONDecodeError:
            pass  # YAML flow style also starts with '{'
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", source=source) from None


def validation_message(err: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, in API terms: ``.spec.containers[0].resources``."""
    e = err.errors(include_url=False)[0]
    path = ""
    for part in e["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    msg = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    kind = e["type"]
    if kind == "missing":
        msg = "required field is missing"
    elif kind in ("enum", "literal_error"):
        msg = f"{e.get('input')!r} is not one of {e.get('ctx', {}).get('expected', '')}"
    elif "input" in e and kind not in ("value_error",) and not isinstance(e["input"], (dict, list)):
        msg = f"{e['input']!r}: {msg}"
    # a resource-list error names the resource inside the message ("cpu: '2x' is not a quantity")
    if kind == "value_error" and ": " in msg and path.endswith(("requests", "limits", "allocatable", "capacity",
                                                                "overhead")):
        name, _, rest = msg.partition(": ")
        path, msg = f"{path}.{name}", rest
    return path, msg


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
    key = (kind, obj.metadata.namespace if kind in _NAMESPACED else None, obj.metadata.name)  # type: ignore
    if key in seen:
        raise InputError("duplicate object: the same kind, namespace and name appear twice",
                         source=source, obj=obj.ref)  # type: ignore[attr-defined]
    seen.add(key)
    getattr(cluster, attr).append(obj)
    cluster.__dict__.setdefault("_origin", {})[key] = source


def _finish(cluster: Cluster) -> Cluster:
    origin: dict = cluster.__dict__.pop("_origin", {})
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
            raise InputError(f"bound to node {pod.spec.node_name!r}, which is not in the input",
                             source=src, obj=pod.ref, path=".spec.nodeName")
        try:
            resolved.append(resolve_priority(pod, classes, default))
        except KeyError:
            raise InputError(f"PriorityClass {pod.spec.priority_class_name!r} does not exist",
                             source=src, obj=pod.ref, path=".spec.priorityClassName") from None
    cluster.pods = resolved
    cluster.warnings.extend(storage_warnings(cluster))
    return cluster


@contextmanager
def _no_gc() -> Iterator[None]:
    """Building many small objects: the cyclic GC would rescan them over and over."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()  # what was loaded lives as long as the run: keep it out of later collections
            gc.enable()


def cluster_from_objects(objects: Iterable[dict], source: str = "<objects>") -> Cluster:
    """Build a :class:`Cluster` from already-parsed API objects (dicts)."""
    cluster, seen = Cluster(sources=[source]), set()
    with _no_gc():
        for i, raw in enumerate(objects):
            _add_object(cluster, source, raw, i, seen)
        return _finish(cluster)


def load_cluster(paths: Iterable[str]) -> Cluster:
    """Load one or more files, folders (``*.yaml``, ``*.yml``, ``*.json``, recursively) or ``-`` (stdin)."""
    cluster, seen = Cluster(), set()
    with _no_gc():
        for path in _expand(paths):
            source, text = read_source(path)
            cluster.sources.append(source)
            for i, raw in enumerate(load_documents(source, text)):
                _add_object(cluster, source, raw, i, seen)
        if not cluster.sources:
            raise InputError("no input given")
        return _finish(cluster)
