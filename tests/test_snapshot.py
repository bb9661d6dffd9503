"""``optisched snapshot``: a live read saved as one List file that loads back to the same ClusterState.

The cluster is a local HTTP server that answers the list endpoints of the kinds optisched reads (as the
API server does: a ``*List`` whose items carry neither kind nor apiVersion); the real kubernetes client
talks to it through a kubeconfig.
"""
from __future__ import annotations

import copy
import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pytest
import yaml
from builders import run_cli
from conftest import require_extra
from test_cli import EXAMPLES

from optisched.model.live import LISTS, load_live
from optisched.model.loader import load_cluster
from optisched.model.state import ClusterState, compile_cluster


@pytest.fixture(autouse=True)
def _kubernetes_client() -> None:
    """The real client talks to the fake server: skips without the kube extra (fails under OPTISCHED_REQUIRE_ALL)."""
    require_extra("kubernetes", "kube", "reading a live cluster")

ROUTES = {  # the REST path of every list call in live.LISTS
    "list_node": "/api/v1/nodes", "list_pod_for_all_namespaces": "/api/v1/pods",
    "list_namespace": "/api/v1/namespaces", "list_service_for_all_namespaces": "/api/v1/services",
    "list_replication_controller_for_all_namespaces": "/api/v1/replicationcontrollers",
    "list_priority_class": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "list_pod_disruption_budget_for_all_namespaces": "/apis/policy/v1/poddisruptionbudgets",
    "list_replica_set_for_all_namespaces": "/apis/apps/v1/replicasets",
    "list_stateful_set_for_all_namespaces": "/apis/apps/v1/statefulsets",
    "list_persistent_volume": "/api/v1/persistentvolumes",
    "list_persistent_volume_claim_for_all_namespaces": "/api/v1/persistentvolumeclaims",
    "list_storage_class": "/apis/storage.k8s.io/v1/storageclasses",
    "list_csi_node": "/apis/storage.k8s.io/v1/csinodes", "list_csi_driver": "/apis/storage.k8s.io/v1/csidrivers",
    "list_csi_storage_capacity_for_all_namespaces": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "list_volume_attachment": "/apis/storage.k8s.io/v1/volumeattachments",
    "list_device_class": "/apis/resource.k8s.io/v1/deviceclasses",
    "list_resource_slice": "/apis/resource.k8s.io/v1/resourceslices",
    "list_resource_claim_for_all_namespaces": "/apis/resource.k8s.io/v1/resourceclaims",
    "list_resource_claim_template_for_all_namespaces": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
}


def served_objects() -> list[dict]:
    """The quickstart example as a live cluster shows it: pods with status, a managedFields entry."""
    objs = [o for o in yaml.safe_load_all((EXAMPLES / "quickstart.yaml").read_text()) if o]
    for o in objs:
        if o["kind"] == "Pod":
            o.setdefault("status", {})["phase"] = "Running" if o["spec"].get("nodeName") else "Pending"
            o["status"]["startTime"] = "2026-01-01T00:00:00Z" if o["spec"].get("nodeName") else None
        o["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Apply"}]
    return objs


class Server:
    def __init__(self, objects: list[dict]) -> None:
        kinds = {ROUTES[method]: kind for kind, _, _, method in LISTS if method in ROUTES}
        by_path: dict[str, list[dict]] = {path: [] for path in kinds}
        for o in objects:
            path = next((p for p, k in kinds.items() if k == o["kind"]), None)
            if path is not None:
                by_path[path].append({k: v for k, v in o.items() if k not in ("kind", "apiVersion")})
        self.by_path, self.requests = by_path, []
        self.version: str | None = "v1.36.2"  # /version's gitVersion (None: not answered)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                outer.requests.append(path)
                if path.rstrip("/") == "/version":  # (the client asks for /version/)
                    self._json(200, {"major": "1", "gitVersion": outer.version} if outer.version else {}, outer.version)
                    return
                items = outer.by_path.get(path)
                args = dict(parse_qsl(query))  # pages of ?limit=N, the next one from ?continue=...
                start = int(args.get("continue", 0))
                end = start + int(args["limit"]) if "limit" in args and items else len(items or [])
                meta = {"continue": str(end)} if items and end < len(items) else {}
                page = items[start:end] if items is not None else None
                self._json(200, {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page}, items is not None)

            def _json(self, code: int, doc: dict, found: object) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server(served_objects())
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


@pytest.fixture
def kubeconfig(tmp_path: Path, server: Server) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "other",
        "clusters": [{"name": "local", "cluster": {"server": server.url}},
                     {"name": "nowhere", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "test", "context": {"cluster": "local", "user": "me"}},
                     {"name": "other", "context": {"cluster": "nowhere", "user": "me"}}]}))
    return path


def assert_same_state(a: ClusterState, b: ClusterState) -> None:
    for kind in ("nodes", "pods", "priority_classes", "pdbs", "namespaces", "services", "replica_sets",
                 "stateful_sets", "replication_controllers"):
        assert getattr(a.cluster, kind) == getattr(b.cluster, kind), kind
    assert a.node_names == b.node_names and a.resources == b.resources and list(a.pod_index) == list(b.pod_index)
    for arr in ("allocatable", "unschedulable", "pod_requests", "pod_nonzero", "pod_node", "pod_priority"):
        assert np.array_equal(getattr(a, arr), getattr(b, arr)), arr


@pytest.mark.parametrize("name", ["cluster.yaml", "cluster.json"], ids=["as YAML", "as JSON"])
def test_a_snapshot_loads_back_to_the_state_of_the_live_read(tmp_path, capsys, server, kubeconfig, name):
    out = tmp_path / name
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(out)], capsys)
    assert code == 0, err
    # every kind read, and the server's version, nothing else
    assert sorted(server.requests) == sorted([*(ROUTES[m] for *_, m in LISTS), "/version/"])
    live = compile_cluster(load_live(str(kubeconfig), "test"))
    saved = compile_cluster(load_cluster([str(out)]))
    assert_same_state(live, saved)
    assert len(live.pods) == 19 and int((live.pod_node >= 0).sum()) > 0
    doc = (json.loads if name.endswith(".json") else yaml.safe_load)(out.read_text())
    assert doc["kind"] == "List" and "managedFields" not in json.dumps(doc)
    assert doc["kubernetesVersion"] == "v1.36.2" and live.cluster.kubernetes_version[0] == "v1.36.2"
    pods = [o for o in doc["items"] if o["kind"] == "Pod"]
    assert all(p["status"]["phase"] in ("Running", "Pending") for p in pods)  # status kept


def test_a_snapshot_read_in_pages_is_the_same(tmp_path, capsys, server, kubeconfig, monkeypatch):
    whole = tmp_path / "whole.yaml"
    assert run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(whole)],
                   capsys)[0] == 0
    monkeypatch.setattr("optisched.model.live.CHUNK", 5)
    server.requests.clear()
    paged = tmp_path / "paged.yaml"
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(paged)],
                           capsys)
    assert code == 0, err
    assert server.requests.count(ROUTES["list_pod_for_all_namespaces"]) == 4  # 19 pods, 5 a page
    assert paged.read_text() == whole.read_text()


def test_an_existing_file_is_kept_unless_force(tmp_path, capsys, kubeconfig, server):
    out = tmp_path / "cluster.yaml"
    out.write_text("mine\n")
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(out)], capsys)
    assert code == 2 and "--force" in err and out.read_text() == "mine\n"
    assert server.requests == []  # refused before anything is read
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(out),
                            "--force"], capsys)
    assert code == 0, err
    assert yaml.safe_load(out.read_text())["kind"] == "List"


def test_a_snapshot_to_stdout_loads_back(tmp_path, capsys, kubeconfig, monkeypatch):
    code, out, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", "-"], capsys)
    assert code == 0, err
    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    assert_same_state(compile_cluster(load_live(str(kubeconfig), "test")), compile_cluster(load_cluster(["-"])))


def test_the_kubeconfig_is_never_the_output(capsys, kubeconfig):
    before = kubeconfig.read_text()
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(kubeconfig), "--force"], capsys)
    assert code == 2 and "kubeconfig" in err and kubeconfig.read_text() == before


def test_a_missing_folder_is_refused(tmp_path, capsys, kubeconfig):
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "-o", str(tmp_path / "no" / "c.yaml")],
                           capsys)
    assert code == 2 and "does not exist" in err


def test_an_unreachable_cluster_is_one_line_and_leaves_no_file(tmp_path, capsys, kubeconfig):
    out = tmp_path / "cluster.yaml"
    code, _, err = run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "other", "-o", str(out)],
                           capsys)
    assert code == 2 and "listing Node objects failed" in err and not out.exists()
    assert list(tmp_path.iterdir()) == [kubeconfig]


def test_replaying_a_snapshot_offline(tmp_path, capsys, kubeconfig):
    out = tmp_path / "cluster.yaml"
    assert run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(out)], capsys)[0] == 0
    code, stdout, err = run_cli(["compare", str(out), "--replay", "--time-limit", "10"], capsys)
    assert code == 0, err
    assert "current" in stdout


def test_snapshot_items_are_not_changed_in_the_caller(tmp_path):
    from optisched.model.live import snapshot_list

    objs = served_objects()
    before = copy.deepcopy(objs)
    doc = snapshot_list(objs)
    assert objs == before and all("managedFields" not in o["metadata"] for o in doc["items"])


@pytest.mark.parametrize("served,asked,follows,noted", [
    pytest.param("v1.36.2", [], "v1.36.2", False, id="the snapshot's release"),
    pytest.param("v1.36.2", ["--kubernetes-version", "1.35"], "v1.35.4", False, id="the flag over the snapshot"),
    pytest.param("v1.38.1", [], "v1.37.0", True, id="a later release: the newest before it, said"),
    pytest.param(None, [], "v1.35.4", False, id="a server hiding /version: the default"),
])
def test_a_run_on_a_snapshot_follows_the_release_it_recorded(tmp_path, capsys, server, kubeconfig, served, asked,
                                                              follows, noted):
    server.version = served
    out = tmp_path / "snap.yaml"
    assert run_cli(["snapshot", "--kubeconfig", str(kubeconfig), "--context", "test", "-o", str(out)], capsys)[0] == 0
    code, stdout, err = run_cli(["schedule", str(out), "--json", *asked], capsys)
    assert code == 0, err
    assert json.loads(stdout)["kubernetesVersion"] == follows
    assert ("names Kubernetes v1.38.1, a release optisched does not reproduce" in err) == noted
