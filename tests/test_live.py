"""Reading a live cluster through the kubernetes client (faked here: no cluster in the test machine)."""
from __future__ import annotations

import json
import sys
import types

import pytest
import yaml
from test_cli import EXAMPLES, run

from optisched.errors import InputError
from optisched.model import live


def fake_kubernetes(objects: list[dict], calls: list[str], missing: frozenset[str] = frozenset()) -> types.ModuleType:
    by_kind: dict[str, list[dict]] = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append({k: v for k, v in o.items() if k != "kind"})
    mod = types.ModuleType("kubernetes")
    mod.config = types.SimpleNamespace(load_kube_config=lambda config_file=None, context=None: calls.append(
        f"config {config_file} {context}"))

    class Api:
        def __init__(self, _client):
            pass

        def __getattr__(self, method):
            kind = next(k for k, _, _, m in live.LISTS if m == method)

            def call(_preload_content=True, limit=None, _continue=None):
                calls.append(method)
                if kind in missing:  # the API server does not serve this group
                    raise type("ApiException", (Exception,), {"status": 404})("(404) Not Found")
                items, start = by_kind.get(kind, []), int(_continue or 0)
                end = start + limit if limit else len(items)
                meta = {"continue": str(end)} if end < len(items) else {}
                return types.SimpleNamespace(data=json.dumps({"metadata": meta, "items": items[start:end]}).encode())
            return call

    mod.client = types.SimpleNamespace(ApiClient=lambda: None, CoreV1Api=Api, SchedulingV1Api=Api, PolicyV1Api=Api,
                                       AppsV1Api=Api, StorageV1Api=Api, ResourceV1Api=Api)
    return mod


def test_inspect_a_live_cluster_lists_only(monkeypatch, capsys):
    objects = list(yaml.safe_load_all((EXAMPLES / "quickstart.yaml").read_text()))
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes(objects, calls))
    code, out, err = run(["inspect", "--kubeconfig", "/tmp/kc", "--context", "prod", "--json"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["nodes"]["total"] == 7 and summary["pods"]["total"] == 19
    assert calls[0] == "config /tmp/kc prod"
    assert all(c.startswith("list_") for c in calls[1:]) and len(calls) == 1 + len(live.LISTS)


def test_without_the_kube_extra_the_error_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    code, _, err = run(["inspect", "--context", "prod"], capsys)
    assert code == 2 and "pip install 'optisched[kube]'" in err


def test_files_and_a_live_cluster_together_are_refused(capsys):
    code, _, err = run(["inspect", str(EXAMPLES / "quickstart.yaml"), "--context", "x"], capsys)
    assert code == 2 and "not both" in err


def test_lists_are_read_in_pages_without_their_managed_fields(monkeypatch):
    objects = [o for o in yaml.safe_load_all((EXAMPLES / "quickstart.yaml").read_text()) if o]
    for o in objects:
        o["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes(objects, calls))
    whole = live.list_live()
    monkeypatch.setattr(live, "CHUNK", 4)
    calls.clear()
    paged = live.list_live()
    assert paged == whole and len(paged) == len(objects)
    assert [(o["kind"], o["metadata"]["name"]) for o in paged] == [
        (o["kind"], o["metadata"]["name"]) for kind, *_ in live.LISTS for o in objects if o["kind"] == kind]
    assert all("managedFields" not in o["metadata"] for o in paged)
    assert calls.count("list_pod_for_all_namespaces") == 5  # 19 pods, 4 a page


def test_dra_objects_are_read_and_a_cluster_without_their_api_group_reads_as_none(monkeypatch):
    from pathlib import Path

    case = Path(__file__).parent / "data" / "conformance" / "cases-dra" / "dra-9001-n4-p12.yaml"
    objects = [o for o in yaml.safe_load_all(case.read_text()) if o]
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes(objects, calls))
    cluster = live.load_live()
    assert len(cluster.resource_slices) == sum(o["kind"] == "ResourceSlice" for o in objects) > 0
    assert len(cluster.device_classes) and len(cluster.resource_claim_templates)
    gone = frozenset(live.OPTIONAL)
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes(objects, calls, missing=gone))
    cluster = live.load_live()
    assert not cluster.resource_slices and not cluster.device_classes and cluster.nodes
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes(objects, calls, missing=frozenset({"Pod"})))
    with pytest.raises(InputError, match="listing Pod objects failed"):  # a core list that fails is an error
        live.load_live()
