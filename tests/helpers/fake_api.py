"""A local HTTP server speaking the part of the Kubernetes API ``reschedule --apply`` and
``--undo-cordons`` use (no API server can run here): the pods list, the nodes list, a node's GET and
PATCH (a strategic merge of ``spec.unschedulable`` and ``metadata.annotations``, ``null`` deleting), the
eviction subresource, `/version`, and the lists a live read makes (empty unless given).

A test can hold one request (:meth:`FakeCluster.hold`): the server blocks the n-th request of a method
until the test lets it go, so a test can kill the client at a known point, deterministically.
"""
from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "reschedule-consolidate.yaml"


class FakeCluster:
    """Pods by ``ns/name``; ``answers[name]``: status codes the next evictions of that pod get (then 201);
    ``lands[name]``: the node its replacement is bound to; ``node_answers[name]``: status codes the next
    PATCHes of that node get (then 200); ``list_answers``: codes the next pod lists get (then 200);
    ``lists``: items of other list paths (e.g. ``/apis/policy/v1/poddisruptionbudgets``); ``on_list``:
    called with the pod list's index (0 first) before each pod list is answered; ``on_read``: called
    with the node's name once a node's GET has read it, before it is answered. A node with ``metadata.resourceVersion`` gets
    it bumped on each PATCH, and a PATCH naming another one is answered 409 Conflict.
    ``log`` records each PATCH and POST in order, ``patches`` each PATCH's node, body and content type."""

    def __init__(self, answers: dict[str, list[int]], lands: dict[str, str], extra: tuple[dict, ...] = (),
                 node_answers: dict[str, list[int]] | None = None, list_answers: list[int] | None = None,
                 lists: dict[str, list[dict]] | None = None) -> None:
        docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
        self.pods = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d for d in docs if d["kind"] == "Pod"}
        self.nodes = [d for d in docs if d["kind"] == "Node"] + [copy.deepcopy(d) for d in extra]
        self.answers, self.lands, self.posts = answers, lands, []
        self.node_answers, self.list_answers = node_answers or {}, list_answers or []
        self.lists = lists or {}
        self.on_list: Callable[[int], None] | None = None
        self.on_read: Callable[[str], None] | None = None
        self.pod_lists = 0
        self.version: str | None = "v1.35.4"  # /version's gitVersion (None: the server does not answer it)
        self.log: list[tuple[str, str]] = []
        self.patches: list[tuple[str, dict, str]] = []
        self.lock = threading.Lock()
        self._hold: tuple[str, int] | None = None
        self._seen: dict[str, int] = {}
        self.reached = threading.Event()  # the held request arrived
        self._gate = threading.Event()
        self._proceed = False

    def hold(self, method: str, index: int) -> None:
        """Block the ``index``-th (0 first) ``method`` request (``"POST"``: an eviction, ``"PATCH"``: a node)
        until :meth:`release`; :attr:`reached` is set when it arrives."""
        self._hold = (method, index)

    def release(self, proceed: bool) -> None:
        """Let the held request go: carried out (``proceed``) or answered 503 without effect."""
        self._proceed = proceed
        self._gate.set()

    def gate(self, method: str) -> bool:
        """Whether this request may be carried out (blocking first when it is the held one)."""
        with self.lock:
            n = self._seen.get(method, 0)
            self._seen[method] = n + 1
        if self._hold != (method, n):
            return True
        self.reached.set()
        self._gate.wait(120)
        return self._proceed

    def node(self, name: str) -> dict | None:
        return next((n for n in self.nodes if n["metadata"]["name"] == name), None)

    def unschedulable(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes if n.get("spec", {}).get("unschedulable")]

    def annotations(self, name: str) -> dict:
        return dict((self.node(name) or {}).get("metadata", {}).get("annotations") or {})

    def patch(self, name: str, body: dict, content_type: str) -> int:
        """A strategic merge patch of ``spec.unschedulable`` and ``metadata.annotations`` (null deletes)."""
        with self.lock:
            self.log.append(("PATCH", name))
            self.patches.append((name, body, content_type))
            queue = self.node_answers.get(name, [])
            code = queue.pop(0) if queue else 200
            node = self.node(name)
            if node is None:
                return 404
            version = node["metadata"].get("resourceVersion")
            asked = (body.get("metadata") or {}).get("resourceVersion")
            if code == 200 and asked is not None and asked != version:
                return 409  # the precondition: the node changed since it was read
            if code == 200 and version is not None:
                node["metadata"]["resourceVersion"] = str(int(version) + 1)
            if code == 200:
                if "spec" in body:
                    spec = node.setdefault("spec", {})
                    if body["spec"]["unschedulable"]:
                        spec["unschedulable"] = True
                    else:
                        spec.pop("unschedulable", None)
                ann = node["metadata"].setdefault("annotations", {})
                for k, v in ((body.get("metadata") or {}).get("annotations") or {}).items():  # null deletes
                    if v is None:
                        ann.pop(k, None)
                    else:
                        ann[k] = v
            return code

    def evict(self, ns: str, name: str) -> int:
        with self.lock:
            self.posts.append(name)
            self.log.append(("POST", name))
            queue = self.answers.get(name, [])
            code = queue.pop(0) if queue else 201
            if code == 201:
                pod = self.pods.pop(f"{ns}/{name}")
                new = json.loads(json.dumps(pod))
                new["metadata"]["name"] = name + "-r"
                new["spec"]["nodeName"] = self.lands[name]
                self.pods[f"{ns}/{name}-r"] = new
            return code

    def pod_list(self) -> list[dict]:
        with self.lock:
            index, self.pod_lists = self.pod_lists, self.pod_lists + 1
        if self.on_list is not None:
            self.on_list(index)
        with self.lock:
            return copy.deepcopy(list(self.pods.values()))


def status(code: int) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "code": code,
            "reason": {404: "NotFound", 429: "TooManyRequests", 500: "InternalError",
                       409: "Conflict", 503: "ServiceUnavailable"}.get(code, "")}


def handler(cluster: FakeCluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/api/v1/pods":
                code = cluster.list_answers.pop(0) if cluster.list_answers else 200
                self._send(code, {"kind": "PodList", "apiVersion": "v1", "items": cluster.pod_list()}
                           if code == 200 else status(code))
            elif path.rstrip("/") == "/version":  # (the client asks for /version/)
                if cluster.version is None:
                    self._send(404, status(404))
                else:
                    self._send(200, {"major": "1", "minor": cluster.version.split(".")[1],
                                     "gitVersion": cluster.version})
            elif path == "/api/v1/nodes":
                with cluster.lock:
                    self._send(200, {"kind": "NodeList", "apiVersion": "v1", "items": cluster.nodes})
            elif path.startswith("/api/v1/nodes/"):
                node = cluster.node(path.rsplit("/", 1)[1])
                if node is None:
                    self._send(404, status(404))
                else:
                    with cluster.lock:
                        read = copy.deepcopy(node)
                    if cluster.on_read is not None:  # a change after the read, before the client has it
                        cluster.on_read(node["metadata"]["name"])
                    self._send(200, read)
            else:  # every other list a live read makes: as given, else empty
                self._send(200, {"kind": "List", "apiVersion": "v1", "items": cluster.lists.get(path, [])})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            parts = self.path.split("?")[0].strip("/").split("/")  # api v1 namespaces NS pods NAME eviction
            if not cluster.gate("POST"):
                self._send(503, status(503))
                return
            code = cluster.evict(parts[3], parts[5])
            self._send(code, status(code))

        def do_PATCH(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            name = self.path.split("?")[0].rsplit("/", 1)[1]  # api v1 nodes NAME
            if not cluster.gate("PATCH"):
                self._send(503, status(503))
                return
            code = cluster.patch(name, body, self.headers.get("Content-Type", ""))
            self._send(code, cluster.node(name) if code == 200 else status(code))

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class Servers:
    """Fake API servers started in this process, each on its own port, shut down by :meth:`close`."""

    def __init__(self) -> None:
        self.servers: list[ThreadingHTTPServer] = []
        self.host = ""

    def start(self, cluster: FakeCluster):  # type: ignore[no-untyped-def]
        """Serve ``cluster``; a ``CoreV1Api`` on it (``self.host`` its URL)."""
        from kubernetes import client

        server = ThreadingHTTPServer(("127.0.0.1", 0), handler(cluster))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.servers.append(server)
        cfg = client.Configuration()
        cfg.host = self.host = f"http://127.0.0.1:{server.server_address[1]}"
        return client.CoreV1Api(client.ApiClient(cfg))

    def close(self) -> None:
        for s in self.servers:
            s.shutdown()


def landings(plan) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each moved pod's name -> the node the plan predicts for its replacement."""
    return {m.key.split("/")[1]: m.predicted for w in plan.staging.waves for m in w.moves}


def kubeconfig(folder: Path, host: str) -> str:
    """A kubeconfig file in ``folder`` whose one context is the server at ``host``."""
    kc = folder / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": host}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    return str(kc)
