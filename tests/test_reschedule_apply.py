"""``--apply`` against a local HTTP server that speaks the pods list and the eviction subresource (no API
server can run here): 429 then 200, 500, and a replacement landing elsewhere, which stops the run."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

import optisched
from optisched.reschedule.apply import apply_plan

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-consolidate.yaml"


class FakeCluster:
    """Pods by ``ns/name``; ``answers[name]``: status codes the next evictions of that pod get (then 201);
    ``lands[name]``: the node its replacement is bound to."""

    def __init__(self, answers: dict[str, list[int]], lands: dict[str, str]) -> None:
        docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and d["kind"] == "Pod"]
        self.nodes = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and d["kind"] == "Node"]
        self.pods = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d for d in docs}
        self.answers, self.lands, self.posts = answers, lands, []

    def evict(self, ns: str, name: str) -> int:
        self.posts.append(name)
        queue = self.answers.get(name, [])
        code = queue.pop(0) if queue else 201
        if code == 201:
            pod = self.pods.pop(f"{ns}/{name}")
            new = json.loads(json.dumps(pod))
            new["metadata"]["name"] = name + "-r"
            new["spec"]["nodeName"] = self.lands[name]
            self.pods[f"{ns}/{name}-r"] = new
        return code


def _handler(cluster: FakeCluster) -> type[BaseHTTPRequestHandler]:
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
                self._send(200, {"kind": "PodList", "apiVersion": "v1", "items": list(cluster.pods.values())})
            elif path == "/api/v1/nodes":
                self._send(200, {"kind": "NodeList", "apiVersion": "v1", "items": cluster.nodes})
            else:  # every other list a live read makes: empty
                self._send(200, {"kind": "List", "apiVersion": "v1", "items": []})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            parts = self.path.split("?")[0].strip("/").split("/")  # api v1 namespaces NS pods NAME eviction
            code = cluster.evict(parts[3], parts[5])
            self._send(code, {"kind": "Status", "apiVersion": "v1", "code": code,
                              "reason": {429: "TooManyRequests", 500: "InternalError"}.get(code, "")})

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def serve():  # type: ignore[no-untyped-def]
    servers = []

    def start(cluster: FakeCluster):  # type: ignore[no-untyped-def]
        from kubernetes import client

        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(cluster))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{server.server_address[1]}"
        start.host = cfg.host  # type: ignore[attr-defined]
        return client.CoreV1Api(client.ApiClient(cfg))

    yield start
    for s in servers:
        s.shutdown()


@pytest.fixture(scope="module")
def plan():  # type: ignore[no-untyped-def]
    return optisched.reschedule(optisched.load([str(EXAMPLE)]), goal="consolidate", time_limit=5)


def _lands(plan) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {m.key.split("/")[1]: m.predicted for w in plan.staging.waves for m in w.moves}


def test_a_429_is_retried_until_the_budget_allows_it(plan, serve):
    cluster = FakeCluster({"web-31": [429, 429]}, _lands(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.stopped is None and report.waves_done == 1
    assert sorted(report.evicted) == ["default/web-31", "default/web-32"]
    assert cluster.posts.count("web-31") == 3


def test_a_500_is_reported_and_skipped(plan, serve):
    cluster = FakeCluster({"web-32": [500]}, _lands(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.evicted == ["default/web-31"] and report.skipped[0][0] == "default/web-32"
    assert report.stopped is None and "default/web-32" in cluster.pods


def test_a_replacement_landing_elsewhere_stops_the_run(plan, serve):
    lands = _lands(plan) | {"web-31": "n3"}
    report = apply_plan(plan, serve(FakeCluster({}, lands)), sleep=lambda s: None, poll=0.01)
    assert report.stopped is not None and "landed on" in report.stopped and "'n3'" in report.stopped
    assert report.waves_done == 0


def test_a_budget_that_never_allows_it_stops_at_the_deadline(plan, serve):
    cluster = FakeCluster({"web-31": [429] * 100_000}, _lands(plan))
    report = apply_plan(plan, serve(cluster), sleep=lambda s: None, retry_for=0.2)
    assert report.stopped is not None and "429" in report.stopped and report.evicted == []


def test_the_command_reads_the_cluster_plans_and_applies_it(serve, tmp_path, capsys):
    """End to end through the kubeconfig: a live read of the fake server, the plan, then --apply."""
    from builders import run_cli

    cluster = FakeCluster({"web-31": [429]}, {"web-31": "n1", "web-32": "n2"})
    serve(cluster)
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": serve.host}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    code, out, err = run_cli(["reschedule", "--kubeconfig", str(kc), "--apply", "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "replacements predicted on target: 2/2" in out and "applied 1 wave(s), 2 eviction(s)" in out
    assert {"default/web-31-r", "default/web-32-r"} <= set(cluster.pods)


def test_a_detour_evicts_the_replacement_of_its_first_leg(plan, serve):
    """A pod moved twice (a detour's two legs) is evicted the second time under its replacement's name."""
    import copy

    from optisched.reschedule.waves import Move, Wave

    detour = copy.deepcopy(plan)
    first = next(m for w in detour.staging.waves for m in w.moves if m.key == "default/web-31")
    onward = "n2" if first.predicted != "n2" else "n1"
    detour.staging.waves.append(Wave([Move(first.pod, first.key, first.predicted, onward, "detour (2 of 2)",
                                           onward)], {}))
    cluster = FakeCluster({}, _lands(plan) | {"web-31-r": onward})
    report = apply_plan(detour, serve(cluster), sleep=lambda s: None, poll=0.01)
    assert report.stopped is None and report.waves_done == 2
    assert cluster.posts[-1] == "web-31-r" and cluster.pods["default/web-31-r-r"]["spec"]["nodeName"] == onward
