"""Read the scheduler's inputs from a live cluster, read-only (the ``kube`` extra: the kubernetes client).

The same objects ``kubectl get nodes,pods,pdb,priorityclasses,namespaces,services,replicasets,
statefulsets,replicationcontrollers,pv,pvc,storageclass,csinode,csidriver -A -o json`` would list, fetched as raw JSON so they go through
the same validation as files. Only ``list`` calls are made.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import InputError
from .cluster import Cluster
from .loader import cluster_from_objects

__all__ = ["LISTS", "load_live"]

# (kind, apiVersion, API class, list method)
LISTS = [
    ("Node", "v1", "CoreV1Api", "list_node"),
    ("Pod", "v1", "CoreV1Api", "list_pod_for_all_namespaces"),
    ("Namespace", "v1", "CoreV1Api", "list_namespace"),
    ("Service", "v1", "CoreV1Api", "list_service_for_all_namespaces"),
    ("ReplicationController", "v1", "CoreV1Api", "list_replication_controller_for_all_namespaces"),
    ("PriorityClass", "scheduling.k8s.io/v1", "SchedulingV1Api", "list_priority_class"),
    ("PodDisruptionBudget", "policy/v1", "PolicyV1Api", "list_pod_disruption_budget_for_all_namespaces"),
    ("ReplicaSet", "apps/v1", "AppsV1Api", "list_replica_set_for_all_namespaces"),
    ("StatefulSet", "apps/v1", "AppsV1Api", "list_stateful_set_for_all_namespaces"),
    ("PersistentVolume", "v1", "CoreV1Api", "list_persistent_volume"),
    ("PersistentVolumeClaim", "v1", "CoreV1Api", "list_persistent_volume_claim_for_all_namespaces"),
    ("StorageClass", "storage.k8s.io/v1", "StorageV1Api", "list_storage_class"),
    ("CSINode", "storage.k8s.io/v1", "StorageV1Api", "list_csi_node"),
    ("CSIDriver", "storage.k8s.io/v1", "StorageV1Api", "list_csi_driver"),
]


def _client() -> tuple[Any, Any]:
    try:
        from kubernetes import client, config  # type: ignore[import-not-found]
    except ImportError:
        raise InputError("reading a live cluster needs the kubernetes client: pip install 'optisched[kube]'") from None
    return client, config


def load_live(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """List the objects from the cluster of ``context`` in ``kubeconfig`` (defaults as kubectl's)."""
    client, config = _client()
    source = f"kubeconfig {kubeconfig or '~/.kube/config'}" + (f" context {context}" if context else "")
    try:
        config.load_kube_config(config_file=kubeconfig, context=context)
    except Exception as e:  # noqa: BLE001 - ConfigException, FileNotFoundError, ... all mean the same to a user
        raise InputError(f"cannot load the kubeconfig: {e}", source=source) from None
    api_client = client.ApiClient()
    objs: list[dict] = []
    for kind, api_version, api_name, method in LISTS:
        api = getattr(client, api_name)(api_client)
        try:
            resp = getattr(api, method)(_preload_content=False)
            data = json.loads(resp.data)
        except Exception as e:  # noqa: BLE001 - ApiException, urllib3 and TLS errors alike
            raise InputError(f"listing {kind} objects failed: {e}", source=source) from None
        for item in data.get("items", []):
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
            objs.append(item)
    return cluster_from_objects(objs, source=source)
