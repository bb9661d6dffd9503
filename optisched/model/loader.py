"""Read clusters from files, folders, stdin or a live cluster.

Accepts what ``kubectl get nodes,pods,pdb,priorityclasses,namespaces,services,replicasets -A -o yaml``
(and ``pv,pvc,storageclass,csinode,csidriver,csistoragecapacities,volumeattachments``) writes (``kind: List``), multi-document YAML manifests and JSON. Any problem
becomes an :class:`~optisched.errors.InputError` naming the file, the object
and the field; input files are only ever read. Each input is read as a stream, a List's items validated
one at a time (:mod:`optisched.model.stream`), so memory follows what is kept.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import collector
from ..errors import InputError
from .bounded import DEFAULT_MAX_INPUT, Input, open_input
from .cluster import Cluster, resolve_priority
from .documents import load_documents, read_source, validation_message
from .dra import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from .gang_objects import PodGroup, Topology, Workload
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
from .stream import DOC, ITEM, REITEMS, documents

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
    "DeviceClass": (DeviceClass, ("resource.k8s.io/v1",), "device_classes"),
    "ResourceSlice": (ResourceSlice, ("resource.k8s.io/v1",), "resource_slices"),
    "ResourceClaim": (ResourceClaim, ("resource.k8s.io/v1",), "resource_claims"),
    "ResourceClaimTemplate": (ResourceClaimTemplate, ("resource.k8s.io/v1",), "resource_claim_templates"),
    "Workload": (Workload, ("scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1alpha2"), "workloads"),
    "PodGroup": (PodGroup, ("scheduling.k8s.io/v1alpha2", "scheduling.x-k8s.io/v1alpha1"), "pod_groups"),
    "Topology": (Topology, ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1alpha1"),
                 "topologies"),
}
_NAMESPACED = {"Pod", "PodDisruptionBudget", "Service", "ReplicaSet", "StatefulSet", "ReplicationController",
               "PersistentVolumeClaim", "CSIStorageCapacity", "ResourceClaim", "ResourceClaimTemplate", "Workload", "PodGroup"}
_SUFFIXES = (".yaml", ".yml", ".json")
_ATTRS = tuple(attr for _, _, attr in _MODELS.values())
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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
    meta: dict = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
    name = meta.get("name")
    if not name:
        return f"{kind} (document {index + 1})"
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if ns and kind in _NAMESPACED else f"{kind}/{name}"


def _version(cluster: Cluster, source: str, version: Any) -> None:
    """A List's top-level ``kubernetesVersion`` (the API server's ``gitVersion``, e.g. ``v1.36.2``): the
    release a run follows unless ``--kubernetes-version`` says otherwise; two Lists must agree."""
    if version is None:
        return
    if not isinstance(version, str) or not version.strip():
        raise InputError("expected a version such as v1.36.2", source=source, obj="List", path=".kubernetesVersion")
    if cluster.kubernetes_version is not None and cluster.kubernetes_version[0] != version:
        raise InputError(f"{version!r} differs from {cluster.kubernetes_version[0]!r} in "
                         f"{cluster.kubernetes_version[1]}", source=source, obj="List", path=".kubernetesVersion")
    cluster.kubernetes_version = (version, source)


def _any_release_config(raw: dict, source: str):  # type: ignore[no-untyped-def]
    """The configuration decoded for the default release, else for the first later one that accepts it
    (a field only a later release has); the run decodes it again for the release it follows
    (``profile.for_version``), whose error stands when that release refuses it."""
    from ..profile import parse_config
    from ..profile.releases import DEFAULT_VERSION, VERSIONS

    try:
        return parse_config(raw, source=source)
    except InputError as first:
        for version in VERSIONS[VERSIONS.index(DEFAULT_VERSION) + 1:]:
            try:
                return parse_config(raw, source=source, kubernetes_version=version)
            except InputError:
                continue
        raise first from None


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
        _version(cluster, source, raw.get("kubernetesVersion"))
        for i, item in enumerate(items):
            _add_object(cluster, source, item, i, seen)
        return
    if kind == "KubeSchedulerConfiguration":
        if cluster.config is not None:
            raise InputError("a second KubeSchedulerConfiguration; give exactly one", source=source, obj=kind)
        cluster.config = _any_release_config(raw, source)
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


def trim(raw: Any) -> Any:
    """``raw`` without what nothing here reads and dumps are mostly made of: ``metadata.managedFields`` and
    kubectl's ``last-applied-configuration`` copy; an object of a kind not read is only its ``kind``."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if not isinstance(kind, str) or not kind:
        return raw
    if kind not in _MODELS:
        return raw if kind == "KubeSchedulerConfiguration" or kind.endswith("List") else {"kind": kind}
    meta = raw.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    applied = isinstance(ann, dict) and isinstance(ann.get(LAST_APPLIED), str)
    if not isinstance(meta, dict) or ("managedFields" not in meta and not applied):
        return raw
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if applied:
        meta["annotations"] = {k: v for k, v in ann.items() if k != LAST_APPLIED}  # type: ignore[union-attr]
    return {**raw, "metadata": meta}


class _Seen(set):  # type: ignore[type-arg]
    """The keys of the objects read, also in the order they came (to take the last ones back)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple] = []

    def add(self, key: Any) -> None:
        super().add(key)
        self.order.append(key)


class _Stage:
    """What one input adds to the cluster, as it is read. What a document or the input turns out not to
    hold (the items of a document that is no List, a JSON-looking input that is YAML) is taken back; the
    first error waits for the parse to end, as a syntax error anywhere comes first."""

    def __init__(self, cluster: Cluster, seen: _Seen, source: str) -> None:
        self.cluster, self.seen, self.source = cluster, seen, source
        self.error: InputError | None = None
        self.start = self.mark()
        self.doc: tuple | None = None  # the mark before the current document's items

    def mark(self) -> tuple:
        c = self.cluster
        return {a: len(getattr(c, a)) for a in _ATTRS}, c.config, Counter(c.skipped), len(self.seen.order), self.error

    def back(self, mark: tuple | None) -> None:
        if mark is None:
            return
        lengths, config, skipped, n, self.error = mark
        c = self.cluster
        for attr, length in lengths.items():
            del getattr(c, attr)[length:]
        c.config, c.skipped = config, Counter(skipped)
        origin = c.__dict__.get("_origin", {})
        for key in self.seen.order[n:]:
            self.seen.discard(key)
            origin.pop(key, None)
        del self.seen.order[n:]

    def add(self, raw: Any, index: int) -> None:
        if self.error is None:
            try:
                _add_object(self.cluster, self.source, raw, index, self.seen)
            except InputError as e:
                self.error = e

    def item(self, raw: Any, index: int) -> None:
        if self.doc is None:
            self.doc = self.mark()
        self.add(raw, index)

    def document(self, raw: Any, index: int) -> None:
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if not (isinstance(kind, str) and kind.endswith("List")):
            self.back(self.doc)  # the items read before it were no objects of their own
        self.doc = None
        self.add(raw, index)


def _load_input(cluster: Cluster, seen: _Seen, inp: Input) -> None:
    stage = _Stage(cluster, seen, inp.name)
    for event in documents(inp, trim):
        if event[0] == ITEM:
            stage.item(event[2], event[1])
        elif event[0] == DOC:
            stage.document(event[2], event[1])
        elif event[0] == REITEMS:
            stage.back(stage.doc)
            stage.doc = None
        else:  # RESTART: read again, as YAML
            stage.back(stage.start)
            stage.doc = None
    if stage.error is not None:
        raise stage.error


def cluster_from_objects(objects: Iterable[dict], source: str = "<objects>") -> Cluster:
    """Build a :class:`Cluster` from already-parsed API objects (dicts)."""
    cluster, seen = Cluster(sources=[source]), set[tuple]()
    with collector.paused(freeze=True):  # what was loaded lives as long as the run
        for i, raw in enumerate(objects):
            _add_object(cluster, source, raw, i, seen)
        return _finish(cluster)


def load_cluster(paths: Iterable[str], max_bytes: int = DEFAULT_MAX_INPUT) -> Cluster:
    """Load one or more files, folders (``*.yaml``, ``*.yml``, ``*.json``, recursively) or ``-`` (stdin),
    each at most ``max_bytes`` long. Objects are validated as they are read (a List's items one at a
    time, :mod:`optisched.model.stream`), so memory follows what is kept, not the files' size."""
    cluster, seen = Cluster(), _Seen()
    with collector.paused(freeze=True):  # what was loaded lives as long as the run
        for path in _expand(paths):
            with open_input(path, max_bytes) as inp:
                cluster.sources.append(inp.name)
                _load_input(cluster, seen, inp)
        if not cluster.sources:
            raise InputError("no input given")
        return _finish(cluster)
