"""``--apply`` against a local HTTP server that speaks the pods list, the eviction subresource and a
node's GET and PATCH (no API server can run here): 429 then 200, 500, a replacement landing elsewhere,
which stops the run, and the nodes cordoned before the first eviction and uncordoned after the plan."""
from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from conftest import require_extra

import optisched
from optisched.reschedule.apply import apply_plan

EXAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "examples" / "reschedule-consolidate.yaml"
# An empty node the consolidation keeps empty: the plan holds it cordoned while it runs.
N4 = {"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "n4", "labels": {"kubernetes.io/hostname": "n4", "optisched.io/hourly-cost": "0.4"}},
      "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
CORDON = {"spec": {"unschedulable": True}}
UNCORDON = {"spec": {"unschedulable": None}}  # what kubectl uncordon sends: the field is omitempty
STRATEGIC = "application/strategic-merge-patch+json"


class FakeCluster:
    """Pods by ``ns/name``; ``answers[name]``: status codes the next evictions of that pod get (then 201);
    ``lands[name]``: the node its replacement is bound to; ``node_answers[name]``: status codes the next
    PATCHes of that node get (then 200); ``list_answers``: codes the next pod lists get (then 200).
    ``log`` records each PATCH and POST in order, ``patches`` each PATCH's node, body and content type."""

    def __init__(self, answers: dict[str, list[int]], lands: dict[str, str], extra: tuple[dict, ...] = (),
                 node_answers: dict[str, list[int]] | None = None, list_answers: list[int] | None = None) -> None:
        docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
        self.pods = {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d for d in docs if d["kind"] == "Pod"}
        self.nodes = [d for d in docs if d["kind"] == "Node"] + [copy.deepcopy(d) for d in extra]
        self.answers, self.lands, self.posts = answers, lands, []
        self.node_answers, self.list_answers = node_answers or {}, list_answers or []
        self.log: list[tuple[str, str]] = []
        self.patches: list[tuple[str, dict, str]] = []

    def node(self, name: str) -> dict | None:
        return next((n for n in self.nodes if n["metadata"]["name"] == name), None)

    def unschedulable(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes if n.get("spec", {}).get("unschedulable")]

    def patch(self, name: str, body: dict, content_type: str) -> int:
        """A strategic merge patch of ``spec.unschedulable``, the only field a cordon touches."""
        self.log.append(("PATCH", name))
        self.patches.append((name, body, content_type))
        queue = self.node_answers.get(name, [])
        code = queue.pop(0) if queue else 200
        node = self.node(name)
        if node is None:
            return 404
        if code == 200:
            spec = node.setdefault("spec", {})
            if body["spec"]["unschedulable"]:
                spec["unschedulable"] = True
            else:
                spec.pop("unschedulable", None)
        return code

    def evict(self, ns: str, name: str) -> int:
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


def _status(code: int) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "code": code,
            "reason": {404: "NotFound", 429: "TooManyRequests", 500: "InternalError"}.get(code, "")}


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
                code = cluster.list_answers.pop(0) if cluster.list_answers else 200
                self._send(code, {"kind": "PodList", "apiVersion": "v1", "items": list(cluster.pods.values())}
                           if code == 200 else _status(code))
            elif path == "/api/v1/nodes":
                self._send(200, {"kind": "NodeList", "apiVersion": "v1", "items": cluster.nodes})
            elif path.startswith("/api/v1/nodes/"):
                node = cluster.node(path.rsplit("/", 1)[1])
                if node is None:
                    self._send(404, _status(404))
                else:
                    self._send(200, node)
            else:  # every other list a live read makes: empty
                self._send(200, {"kind": "List", "apiVersion": "v1", "items": []})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            parts = self.path.split("?")[0].strip("/").split("/")  # api v1 namespaces NS pods NAME eviction
            code = cluster.evict(parts[3], parts[5])
            self._send(code, _status(code))

        def do_PATCH(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            name = self.path.split("?")[0].rsplit("/", 1)[1]  # api v1 nodes NAME
            code = cluster.patch(name, body, self.headers.get("Content-Type", ""))
            self._send(code, cluster.node(name) if code == 200 else _status(code))

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def serve():  # type: ignore[no-untyped-def]
    require_extra("kubernetes", "kube", "the kubernetes client talking to the fake API server")
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


def _kubeconfig(tmp_path: Path, host: str) -> str:
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": host}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
    return str(kc)


def test_the_command_reads_the_cluster_plans_and_applies_it(serve, tmp_path, capsys):
    """End to end through the kubeconfig: a live read of the fake server, the plan, then --apply."""
    from builders import run_cli

    cluster = FakeCluster({"web-31": [429]}, {"web-31": "n1", "web-32": "n2"})
    serve(cluster)
    code, out, err = run_cli(["reschedule", "--kubeconfig", _kubeconfig(tmp_path, serve.host), "--apply",
                              "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "replacements predicted on target: 2/2" in out and "applied 1 wave(s), 2 eviction(s)" in out
    assert {"default/web-31-r", "default/web-32-r"} <= set(cluster.pods)
    assert cluster.log[0] == ("PATCH", "n3") and "cordoned n3" in out and cluster.unschedulable() == ["n3"]


def test_without_apply_the_command_changes_nothing(serve, tmp_path, capsys):
    """The dry run reads the cluster and plans: no node is patched, no pod evicted."""
    from builders import run_cli

    cluster = FakeCluster({}, {"web-31": "n1", "web-32": "n2"})
    serve(cluster)
    code, out, err = run_cli(["reschedule", "--kubeconfig", _kubeconfig(tmp_path, serve.host),
                              "--time-limit", "5"], capsys)
    assert code == 0, err
    assert "cordon first: n3" in out and cluster.log == [] and cluster.unschedulable() == []


def test_a_detour_evicts_the_replacement_of_its_first_leg(plan, serve):
    """A pod moved twice (a detour's two legs) is evicted the second time under its replacement's name."""
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


@pytest.fixture(scope="module")
def held_plan(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The example with an empty node n4 the consolidation keeps empty: n3 cordoned, n4 held."""
    extra = tmp_path_factory.mktemp("held") / "n4.yaml"
    extra.write_text(yaml.safe_dump(N4))
    plan = optisched.reschedule(optisched.load([str(EXAMPLE), str(extra)]), goal="consolidate", time_limit=5)
    assert plan.staging.cordoned == ["n3"] and plan.staging.held == ["n4"]
    return plan


def _run(plan, cluster, serve, **kw):  # type: ignore[no-untyped-def]
    return apply_plan(plan, serve(cluster), sleep=lambda s: None, poll=0.01, **kw)


def test_the_nodes_a_plan_empties_are_cordoned_before_the_first_eviction(plan, serve):
    cluster = FakeCluster({}, _lands(plan))
    report = _run(plan, cluster, serve)
    assert report.stopped is None and not report.failed
    assert cluster.log == [("PATCH", "n3"), ("POST", "web-31"), ("POST", "web-32")]
    assert cluster.patches == [("n3", CORDON, STRATEGIC)]
    assert cluster.unschedulable() == ["n3"] and report.cordoned == ["n3"] and report.uncordoned == []
    assert "cordoned n3" in report.lines() and "left cordoned: n3 (emptied, for an autoscaler to remove)" \
        in report.lines()


def test_held_nodes_are_uncordoned_after_the_last_wave(held_plan, serve):
    cluster = FakeCluster({}, _lands(held_plan), extra=(N4,))
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.waves_done == 1
    assert cluster.log == [("PATCH", "n3"), ("PATCH", "n4"), ("POST", "web-31"), ("POST", "web-32"),
                           ("PATCH", "n4")]
    assert cluster.patches[-1] == ("n4", UNCORDON, STRATEGIC)
    assert cluster.unschedulable() == ["n3"] and report.uncordoned == ["n4"] and report.left_cordoned == ["n3"]
    assert "uncordoned n4" in report.lines()


@pytest.mark.parametrize("answers, lands, list_answers, why", [
    pytest.param({"web-31": [429] * 100_000}, {}, [], "429", id="a budget that never allows it"),
    pytest.param({}, {"web-31": "n3"}, [], "landed on", id="a replacement landing elsewhere"),
    pytest.param({"web-31": [403]}, {}, [], "eviction answered 403", id="an eviction refused"),
    pytest.param({}, {}, [500], "the API server answered 500", id="the pods list failing"),
])
def test_held_nodes_are_uncordoned_when_the_run_stops(held_plan, serve, answers, lands, list_answers, why):
    cluster = FakeCluster(answers, _lands(held_plan) | lands, extra=(N4,), list_answers=list_answers)
    report = _run(held_plan, cluster, serve, retry_for=0.2)
    assert report.stopped is not None and why in report.stopped and report.failed
    assert cluster.log[-1] == ("PATCH", "n4") and cluster.patches[-1] == ("n4", UNCORDON, STRATEGIC)
    assert cluster.unschedulable() == ["n3"] and report.uncordoned == ["n4"] and report.left_cordoned == ["n3"]
    assert "left cordoned: n3 (kubectl uncordon to undo)" in report.lines()


@pytest.mark.parametrize("already, patched", [
    pytest.param(["n4"], [("n3", CORDON)], id="a held node the user cordoned stays cordoned"),
    pytest.param(["n3"], [("n4", CORDON), ("n4", UNCORDON)], id="an emptied node cordoned already is left alone"),
    pytest.param(["n3", "n4"], [], id="nothing is patched when every node is cordoned already"),
])
def test_a_node_unschedulable_already_is_neither_patched_nor_uncordoned(held_plan, serve, already, patched):
    cluster = FakeCluster({}, _lands(held_plan), extra=(N4,))
    for name in already:
        cluster.node(name).setdefault("spec", {})["unschedulable"] = True
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.found_cordoned == already
    assert [(n, body) for n, body, _ in cluster.patches] == patched
    assert sorted(cluster.unschedulable()) == sorted(set(already) | {"n3"})


@pytest.mark.parametrize("failing, undone", [
    pytest.param("n3", [], id="the first node failing cordons nothing"),
    pytest.param("n4", ["n3"], id="a later node failing uncordons the ones before it"),
])
def test_a_node_that_cannot_be_cordoned_stops_the_run_before_any_eviction(held_plan, serve, failing, undone):
    cluster = FakeCluster({}, _lands(held_plan), extra=(N4,), node_answers={failing: [500]})
    report = _run(held_plan, cluster, serve)
    assert report.stopped == f"cannot cordon node {failing}: the patch answered 500 Internal Server Error"
    assert cluster.posts == [] and report.evicted == [] and report.waves_done == 0
    assert report.uncordoned == undone and report.left_cordoned == [] and cluster.unschedulable() == []


def test_a_held_node_that_cannot_be_uncordoned_is_reported(held_plan, serve):
    cluster = FakeCluster({}, _lands(held_plan), extra=(N4,), node_answers={"n4": [200, 500]})
    report = _run(held_plan, cluster, serve)
    assert report.stopped is None and report.waves_done == 1 and report.failed
    assert report.uncordon_failed == [("n4", "cannot uncordon node n4: the patch answered 500 Internal Server Error")]
    assert any("kubectl uncordon n4" in line for line in report.lines()) and cluster.unschedulable() == ["n3", "n4"]
