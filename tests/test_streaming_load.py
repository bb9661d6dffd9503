"""The streaming loader (a List's items read, checked and trimmed one at a time) gives what parsing each
file's whole text gave: the same objects, or the same first error, on every input."""
from __future__ import annotations

import importlib.util
import io
import json
import sys
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bad_input import CASES as BAD
from test_hostile_input import CASES as HOSTILE
from test_hostile_input import assert_refused, run

from optisched.errors import InputError
from optisched.model import bounded, stream_json
from optisched.model.cluster import Cluster
from optisched.model.loader import (
    LAST_APPLIED,
    _add_object,
    _expand,
    _finish,
    load_cluster,
    load_documents,
    read_source,
    trim,
)
from optisched.model.stream import RESTART, documents

REPO = Path(__file__).resolve().parents[1]
INPUTS = sorted(p for folder in ("datasets", "tests/data") for p in (REPO / folder).rglob("*")
                if p.suffix in (".yaml", ".yml", ".json"))


def whole_text(paths: list[str], limit: int = 2**30) -> Cluster:
    """The loader as it was: each file read whole, parsed whole, then its objects added."""
    cluster, seen = Cluster(), set()
    for path in _expand(paths):
        source, text = read_source(path, limit)
        cluster.sources.append(source)
        for i, raw in enumerate(load_documents(source, text)):
            _add_object(cluster, source, raw, i, seen)
    return _finish(cluster)


def outcome(load, paths: list[str]) -> object:
    """What a load gives, comparable: its error, or every object as a dict (kubectl's last-applied copy,
    which the streaming loader drops, left out), the config, what was skipped and the warnings."""
    try:
        cluster = load(paths)
    except InputError as e:
        return ("error", str(e))
    objects = {}
    for attr, value in vars(cluster).items():
        if isinstance(value, list) and value and hasattr(value[0], "model_dump"):
            dumped = [o.model_dump() for o in value]
            for d in dumped:
                d["metadata"].get("annotations", {}).pop(LAST_APPLIED, None)
            objects[attr] = dumped
    return objects, repr(cluster.config), dict(cluster.skipped), cluster.warnings, cluster.sources


def same(paths: list[str]) -> object:
    old, new = outcome(whole_text, paths), outcome(load_cluster, paths)
    assert new == old
    return new


@pytest.mark.parametrize("path", INPUTS, ids=[str(p.relative_to(REPO)) for p in INPUTS])
def test_every_example_and_test_input_loads_as_before(path):
    same([str(path)])


@pytest.mark.parametrize("name,text", [(c[1], c[2]) for c in HOSTILE] + [(f"c{i}.yaml", c[1]) for i, c in
                                                                           enumerate(BAD)],
                         ids=[c[0] for c in HOSTILE] + [c[0] for c in BAD])
def test_bad_and_hostile_inputs_fail_as_before(name, text, tmp_path):
    f = tmp_path / name
    f.write_text(text)
    same([str(f)])


def as_list(items: list, fmt: str, kind_last: bool = True) -> str:
    """A List as kubectl prints it (kind after items) or as written by hand (kind first)."""
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    if not kind_last:
        doc = {"kind": "List", **doc}
    return json.dumps(doc, indent=4) if fmt == "json" else yaml.safe_dump(doc, sort_keys=kind_last)


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "100m"}}}]}}

def spread_bomb(levels: int = 3, items: int = 30) -> str:
    """Anchors of 9**levels expanded nodes in the first item, each later item naming the largest: every
    item alone stays within the budget, all of them do not."""
    lines = ["kind: List", "items:", "- kind: Event", "  l0: &l0 [" + ", ".join(['"lol"'] * 9) + "]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    lines += [f"- {{kind: Event, x: *l{levels}}}"] * items
    return "\n".join(lines) + "\n"


SPECIAL = [
    ("a List whose kind comes first", lambda tmp: as_list([NODE, POD], "yaml", kind_last=False)),
    ("a Node with a top-level items sequence is no List", lambda tmp: yaml.safe_dump(
        {**NODE, "items": [POD, "not an object"]})),
    ("an Event with a top-level items sequence, in kubectl's key order", lambda tmp: yaml.safe_dump(
        {"apiVersion": "v1", "items": [NODE], "kind": "Event", "metadata": {"name": "e"}})),
    ("a document's own managedFields", lambda tmp: yaml.safe_dump({**NODE, "metadata": {
        **NODE["metadata"], "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]}})),
    ("a List that repeats items: the last one counts", lambda tmp: "kind: List\nitems:\n- " + json.dumps(POD)
     + "\nitems:\n- " + json.dumps(NODE) + "\n"),
    ("a JSON List that repeats items", lambda tmp: '{"kind": "List", "items": [' + json.dumps(POD)
     + '], "items": [' + json.dumps(NODE) + "]}"),
    ("a List whose second item is bad, with a syntax error after it", lambda tmp: as_list(
        [NODE, {**POD, "spec": {}}], "yaml") + "kind: [\n"),
    ("a List without a kind", lambda tmp: yaml.safe_dump({"items": [NODE]})),
    ("an anchor in one item, its alias in the next", lambda tmp: "kind: List\nitems:\n- apiVersion: v1\n"
     "  kind: Node\n  metadata: {name: n1, labels: &l {zone: a}}\n  status: {allocatable: {cpu: '4'}}\n"
     "- apiVersion: v1\n  kind: Node\n  metadata: {name: n2, labels: *l}\n  status: {allocatable: {cpu: '2'}}\n"),
    ("an anchor inside managedFields used later", lambda tmp: "kind: List\nitems:\n- apiVersion: v1\n"
     "  kind: Node\n  metadata:\n    name: n1\n    managedFields: [{manager: &m kubelet}]\n"
     "    labels: {by: *m}\n  status: {allocatable: {cpu: '4'}}\n"),
    ("an undefined alias inside managedFields", lambda tmp: "kind: List\nitems:\n- kind: Node\n  metadata:\n"
     "    name: n1\n    managedFields: [{manager: *m}]\n"),
    ("a duplicate anchor across items", lambda tmp: "kind: List\nitems:\n- &a {kind: Event}\n- &a {kind: Event}\n"),
    ("JSON that is YAML after its first item", lambda tmp: '{"kind": "List", "items": [' + json.dumps(NODE)
     + ", {kind: Event}]}"),
    ("a JSON List of a 500-digit number after an item", lambda tmp: '{"kind": "List", "items": ['
     + json.dumps(NODE) + ", " + "9" * 500 + "]}"),
    ("JSON with extra data", lambda tmp: json.dumps(NODE) + " {}"),
    ("a JSON array of documents", lambda tmp: json.dumps([NODE, POD, None])),
    ("a List within a List", lambda tmp: as_list([{"kind": "PodList", "items": [POD]}, NODE], "yaml")),
    ("two documents, the second a List", lambda tmp: yaml.safe_dump(NODE) + "---\n" + as_list([POD], "yaml")),
    ("a managedFields entry and kubectl's last-applied copy", lambda tmp: as_list([{**NODE, "metadata": {
        **NODE["metadata"], "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        "annotations": {LAST_APPLIED: json.dumps(NODE), "keep": "me"}}}], "yaml")),
    ("a List item that is a string", lambda tmp: as_list([NODE, "text"], "json")),
    ("an empty List", lambda tmp: as_list([], "json")),
    ("an alias bomb spread over a List's items", lambda tmp: spread_bomb()),
    ("a List's items with an anchor", lambda tmp: "kind: List\nitems: &i\n- " + json.dumps(NODE) + "\n"),
]


@pytest.mark.parametrize("make", [c[1] for c in SPECIAL], ids=[c[0] for c in SPECIAL])
def test_documents_the_stream_treats_specially_load_as_before(make, tmp_path):
    text = make(tmp_path)
    for suffix in (".yaml", ".json"):
        f = tmp_path / f"c{suffix}"
        f.write_text(text)
        same([str(f)])


def test_an_alias_bomb_spread_over_items_is_refused_as_a_whole(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(spread_bomb(items=1))
    assert same([str(f)])[0] == {}  # one item naming the anchors stays within the budget
    f.write_text(spread_bomb(items=30))
    assert same([str(f)]) == ("error", f"{f}: YAML aliases expand the document beyond 10 times its size")


def test_a_folder_of_several_files_loads_as_before(tmp_path):
    (tmp_path / "nodes.yaml").write_text(as_list([NODE, {**NODE, "metadata": {"name": "n2"}}], "yaml"))
    (tmp_path / "pods.json").write_text(as_list([POD], "json"))
    result = same([str(tmp_path)])
    assert len(result[0]["nodes"]) == 2 and len(result[0]["pods"]) == 1
    (tmp_path / "again.yaml").write_text(yaml.safe_dump(POD))
    assert "duplicate object" in same([str(tmp_path)])[1]


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.sampled_from(["a", "4", "8Gi", "100m", ""]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(
    st.sampled_from(["name", "kind", "items", "metadata", "managedFields", "cpu", "x"]), inner, max_size=3)),
                       max_leaves=8)


@st.composite
def objects(draw: st.DrawFn) -> object:
    base = draw(st.sampled_from([NODE, POD, {"kind": "Event", "metadata": {"name": "e"}}, {"kind": "List"}]))
    obj = json.loads(json.dumps(base))
    obj["metadata"] = {**obj.get("metadata", {}), "name": draw(st.sampled_from(["n1", "n2", "web"]))}
    for key in draw(st.lists(st.sampled_from(["metadata", "spec", "status", "items", "kind"]), max_size=2)):
        obj[key] = draw(_VALUES)
    if draw(st.booleans()) and isinstance(obj.get("metadata"), dict):
        obj["metadata"]["managedFields"] = draw(_VALUES)
    return obj


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(objects(), max_size=4), fmt=st.sampled_from(["yaml", "json"]), kind_last=st.booleans())
def test_random_lists_load_as_before(items, fmt, kind_last, tmp_path):
    f = tmp_path / f"c.{fmt}"
    f.write_text(as_list(items, fmt, kind_last))
    same([str(f)])


def _gen_dump():
    spec = importlib.util.spec_from_file_location("gen_dump", REPO / "benchmarks" / "gen_dump.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dump(path: Path, nodes: int, pods: int, managed: bool = True) -> Path:
    """A dump as kubectl prints it (``benchmarks/gen_dump.py``), by default with managedFields."""
    gen = _gen_dump()
    with open(path, "w") as f:
        gen.write_dump(gen.items(nodes, pods, managed), f, "json" if path.suffix == ".json" else "yaml")
    return path


def peak(load, paths: list[str]) -> tuple[int, Cluster]:
    tracemalloc.start()
    try:
        cluster = load(paths)
        return tracemalloc.get_traced_memory()[1], cluster
    finally:
        tracemalloc.stop()


def test_a_dump_past_the_old_limit_loads_in_memory_that_follows_what_is_kept(tmp_path):
    """A JSON dump padded past the 256 MiB the limit once was: the default admits it, and what it holds
    (not its size) sets the memory."""
    small = dump(tmp_path / "small.json", 10, 60)
    big = tmp_path / "big.json"
    with open(big, "w") as f:
        f.write(small.read_text())
        f.writelines(" " * 2**20 for _ in range(260))
    assert big.stat().st_size > 256 * 2**20
    used, cluster = peak(load_cluster, [str(big)])
    assert (len(cluster.nodes), len(cluster.pods)) == (10, 60)
    assert outcome(lambda p: cluster, [str(big)])[0] == outcome(load_cluster, [str(small)])[0]
    assert used < 32 * 2**20, used


def test_memory_does_not_grow_with_managed_fields(tmp_path, monkeypatch):
    """The same cluster with and without managedFields: the file is more than twice as large, the
    loader's peak is not (parsing the whole text first, as the loader once did, grows with the file).
    Files are read in 16 KiB chunks here, so the one chunk held at a time does not hide the difference."""
    monkeypatch.setattr(bounded, "_CHUNK", 2**14)
    lean = dump(tmp_path / "lean.yaml", 6, 30, managed=False)
    heavy = dump(tmp_path / "heavy.yaml", 6, 30)
    assert heavy.stat().st_size > 2 * lean.stat().st_size
    lean_peak, lean_cluster = peak(load_cluster, [str(lean)])
    heavy_peak, heavy_cluster = peak(load_cluster, [str(heavy)])
    assert outcome(lambda p: heavy_cluster, [])[0] == outcome(lambda p: lean_cluster, [])[0]
    assert heavy_peak < 1.1 * lean_peak, (heavy_peak, lean_peak)
    whole_lean, _ = peak(whole_text, [str(lean)])
    whole_heavy, _ = peak(whole_text, [str(heavy)])
    assert whole_heavy > 2 * whole_lean  # what the check above would have caught


def test_an_over_limit_dump_is_refused_in_one_line(tmp_path):
    f = dump(tmp_path / "cluster.yaml", 4, 10)
    proc = run(["inspect", str(f), "--max-input-size", "100Ki"], timeout=60)
    assert_refused(proc, f"cluster.yaml: larger than the input limit of {100 * 1024} bytes")
    assert len(proc.stderr.decode().strip().splitlines()) == 1


def test_the_api_load_takes_the_same_limit_as_the_command_line(tmp_path):
    import optisched

    f = dump(tmp_path / "cluster.yaml", 4, 10)
    for limit in ("100Ki", 100 * 1024):
        with pytest.raises(InputError, match=f"cluster.yaml: larger than the input limit of {100 * 1024} bytes"):
            optisched.load([str(f)], max_input_size=limit)
    with pytest.raises(InputError, match="^--max-input-size: 'lots' is not a size"):
        optisched.load([str(f)], max_input_size="lots")
    assert len(optisched.load([str(f)], max_input_size="1Mi").nodes) == 4


def test_standard_input_is_read_twice_from_its_copy(tmp_path, monkeypatch):
    """A JSON-looking input that is YAML is parsed again from the start: standard input too."""
    text = '{"kind": "List", "items": [' + json.dumps(NODE) + ", {kind: Event}]}"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    cluster = load_cluster(["-"])
    assert [n.metadata.name for n in cluster.nodes] == ["n1"] and cluster.skipped == {"Event": 1}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    with pytest.raises(InputError, match="^<stdin>: larger than the input limit of 100 bytes"):
        load_cluster(["-"], 100)


def test_the_default_limit_still_refuses_absurd_input_at_once(tmp_path):
    """A 50 GB file (sparse here: it takes no disk) is refused from its size, before a byte is read."""
    f = tmp_path / "cluster.yaml"
    with open(f, "wb") as out:
        out.truncate(50 * 10**9)
    with pytest.raises(InputError) as e:
        load_cluster([str(f)])
    assert str(e.value) == (f"{f}: larger than the input limit of {bounded.DEFAULT_MAX_INPUT} bytes "
                            "(raise it with --max-input-size)")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.tuples(objects(), st.lists(objects(), max_size=3)), min_size=1, max_size=3),
       fmt=st.sampled_from(["yaml", "json"]), sort=st.booleans(), kind=st.sampled_from(["List", "PodList", "Node",
                                                                                         "Event", None]))
def test_random_documents_with_items_load_as_before(docs, fmt, sort, kind, tmp_path):
    """Top-level objects of any kind that hold an items sequence, its kind before or after it."""
    objs = []
    for obj, items in docs:
        obj = {**obj, "items": items}
        if kind is not None:
            obj["kind"] = kind
        objs.append(obj)
    f = tmp_path / f"c.{fmt}"
    f.write_text(json.dumps(objs if len(objs) > 1 else objs[0]) if fmt == "json" else
                 yaml.safe_dump_all(objs, sort_keys=sort))
    same([str(f)])


@pytest.mark.parametrize("chunk", [1, 5, 64, 4096])
def test_json_values_cut_at_any_point_of_the_buffer_decode_as_before(chunk, tmp_path, monkeypatch):
    """Every value crosses the buffer's end when it is refilled a few characters at a time: numbers,
    escapes (kubectl's last-applied JSON, \\u00e9), literals, nested objects; and text that only starts
    like JSON is still read as YAML."""
    f = dump(tmp_path / "c.json", 3, 12)
    text = f.read_text().replace('"pool": "general"', '"pool": "caf\\u00e9"').replace(
        '"resourceVersion": ', '"x": {"n": 12345678901, "t": true, "z": null, "f": -1.5e3}, "resourceVersion": ')
    f.write_text(text)
    monkeypatch.setattr(stream_json, "_CHUNK", chunk)
    assert same([str(f)])[0]["nodes"]
    with bounded.open_input(str(f)) as inp:
        assert RESTART not in {e[0] for e in documents(inp, trim)}  # read as JSON, not again as YAML
    for name, make in SPECIAL:
        f.write_text(make(tmp_path))
        same([str(f)])


def test_a_file_that_fails_on_its_second_reading_is_one_error(tmp_path, monkeypatch):
    """The input is read twice (checked, then parsed); an I/O error in the second is an input error too."""
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(NODE))

    class Failing(io.FileIO):
        reads = 0

        def read(self, size: int = -1) -> bytes:
            Failing.reads += 1
            if Failing.reads > 2:  # the first pass reads the text, then its end
                raise OSError(5, "Input/output error")
            return super().read(size)

    monkeypatch.setattr(bounded, "open", lambda path, mode: Failing(path, "r"), raising=False)
    with pytest.raises(InputError, match=f"^{f}: cannot read: Input/output error$"):
        load_cluster([str(f)])
    assert Failing.reads == 3
