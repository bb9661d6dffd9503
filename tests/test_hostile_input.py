"""Hostile input through the installed ``optisched`` command: one line naming the file, object and field,
exit status 2, no traceback, bounded time and memory, and nothing the user gave modified."""
from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optisched.textsafe import unsafe_chars

OPTISCHED = str(Path(sys.executable).parent / "optisched")
EXAMPLES = Path(__file__).resolve().parent.parent / "datasets" / "examples"
DROP_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: worker-3, labels: {topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def pod(name: str = "web", namespace: str = "shop", requests: str = "{cpu: 100m}", spec: str = "") -> str:
    return "---\n" + textwrap.dedent(f"""\
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}, namespace: {namespace}}}
    spec:
      containers: [{{name: c, image: app, resources: {{requests: {requests}}}}}]
    """) + textwrap.indent(textwrap.dedent(spec), "  ")


def doc(kind_block: str) -> str:
    return "---\n" + textwrap.dedent(kind_block)


def run(args: list[str], *, stdin: bytes | None = None, timeout: float = 120, permissions: bool = False,
        memory: int | None = None) -> subprocess.CompletedProcess:
    """The console script in a subprocess, under an address-space limit when ``memory`` is given.

    ``permissions``: file permissions bind (root's override capabilities are dropped for the command)."""
    def limits() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    prefix = DROP_DAC if permissions and os.geteuid() == 0 else []
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run([*prefix, OPTISCHED, *args], input=stdin, capture_output=True, timeout=timeout,
                          check=False, preexec_fn=limits, env=env)


def assert_refused(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err
    line = " ".join(err.split())
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"
    assert not unsafe_chars(err.replace("\n", "")), err
    return line


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def alias_bomb(levels: int = 9) -> str:
    lines = ["apiVersion: v1", "kind: Node", "metadata:", "  name: worker-3", "  annotations:",
             '    l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join([*lines, 'status: {allocatable: {cpu: "4"}}']) + "\n"


def profile(plugin: str) -> str:
    return doc(f"""\
    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    profiles:
    - plugins: {{score: {{enabled: [{{name: {plugin}}}]}}}}
    """)


PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web, namespace: shop}}
spec: {{minAvailable: "{value}", selector: {{matchLabels: {{app: web}}}}}}
"""

# (id, file name, text, extra arguments, fragments of the one-line error)
CASES: list[tuple[str, str, str, list[str], list[str]]] = [
    # terminal and markup injection in error messages
    ("an escape sequence in a name is shown escaped", "c.yaml",
     NODE.replace("name: worker-3", 'name: "w\\e]0;owned\\a\\e[2J"').replace('cpu: "4"', "cpu: 2x"), [],
     ["Node/w\\x1b]0;owned\\x07\\x1b[2J", ".status.allocatable.cpu"]),
    ("a newline in a name keeps the error on one line", "c.yaml",
     NODE.replace("name: worker-3", 'name: "w\\n[bold]x"').replace('cpu: "4"', "cpu: 2x"), [],
     ["Node/w\\n[bold]x .status.allocatable.cpu"]),
    # resource exhaustion
    ("a YAML alias bomb", "c.yaml", alias_bomb(), [], ["c.yaml: YAML aliases expand the document beyond"]),
    ("a YAML alias that contains itself", "c.yaml", "kind: Node\nmetadata: &m {name: a, x: *m}\n", [],
     ["c.yaml: a YAML alias refers to the node that contains it"]),
    ("JSON nested 100,000 deep", "c.json", "[" * 100_000 + "]" * 100_000, [], ["c.json: nested too deeply"]),
    ("YAML nested 2,000 deep", "c.yaml", "a: " + "[" * 2000 + "]" * 2000 + "\n", [], ["c.yaml: invalid YAML"]),
    ("YAML with aliases nested 200 deep", "c.yaml", "a: &a 1\nb: " + "[" * 200 + "*a" + "]" * 200 + "\n", [],
     ["c.yaml: nested more than 100 levels deep"]),
    ("a 5,000-digit integer in JSON", "c.json",
     '{"kind": "Node", "metadata": {"name": "a"}, "x": ' + "9" * 5000 + "}", [], ["c.json: an integer of more than 100 digits"]),
    ("a 5,000-digit integer in YAML", "c.yaml", "kind: Node\nmetadata: {name: a}\nx: " + "9" * 5000 + "\n", [],
     ["c.yaml: invalid YAML at line 3, column 4: an integer of more than 100 digits"]),
    ("a 500-digit integer", "c.yaml", "kind: Node\nmetadata: {name: a}\nx: " + "9" * 500 + "\n", [],
     ["c.yaml: invalid YAML at line 3, column 4: an integer of more than 100 digits"]),
    ("a file beyond --max-input-size", "c.yaml", NODE, ["--max-input-size", "100"],
     ["c.yaml: larger than the input limit of 100 bytes"]),
    # numbers at and beyond their limits
    ("a quantity exponent of a billion", "c.yaml", NODE + pod(requests="{cpu: 1e999999999}"), [],
     ["Pod/shop/web", ".requests.cpu", "is too large"]),
    ("a quantity of a megabyte of digits names the field", "c.yaml",
     NODE + pod(requests='{memory: "' + "1" * 1_000_000 + '"}'), [],
     ["Pod/shop/web", ".spec.containers[0].resources.requests.memory", "more than 100 digits"]),
    ("a 10-petacore CPU request overflows millicores", "c.yaml", NODE + pod(requests="{cpu: 10P}"), [],
     ["Pod/shop/web", ".requests.cpu", "'10P' is beyond the int64 range in millicores"]),
    ("8 Ei of memory on a node", "c.yaml", NODE.replace("memory: 8Gi", "memory: 8Ei"), [],
     ["Node/worker-3", ".status.allocatable.memory", "beyond the int64 range"]),
    ("container requests that add up beyond int64", "c.yaml", NODE + pod(spec="""\
        initContainers: [{name: i, image: app, resources: {requests: {memory: 5Ei}}}]
        """).replace("cpu: 100m", "memory: 5Ei"), [],
     ["Pod/shop/web", ".spec", "memory requests of the containers add up beyond the int64 range"]),
    ("a pod priority beyond int32", "c.yaml", NODE + pod(spec="priority: 2147483648\n"), [],
     ["Pod/shop/web", ".spec.priority"]),
    ("an unquoted integer of a megabyte of digits names its line", "c.yaml",
     NODE + pod(requests="{memory: " + "1" * 1_000_000 + "}"), [],
     ["c.yaml: invalid YAML at line 10, column 69: an integer of more than 100 digits"]),
    ("an image size beyond int64", "c.yaml",
     NODE.replace("}}\n", "}, images: [{names: [app], sizeBytes: 9223372036854775808}]}\n"), [],
     ["Node/worker-3", ".status.images[0].sizeBytes"]),
    ("a maxSkew beyond int32", "c.yaml", NODE + pod(spec="""\
        topologySpreadConstraints:
        - {maxSkew: 2147483648, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
        """), [], ["Pod/shop/web", ".spec.topologySpreadConstraints[0].maxSkew"]),
    ("a negative node cost", "c.yaml", NODE.replace("labels: {", 'labels: {optisched.io/hourly-cost: "-1", '),
     ["--mode", "optimal", "--objective", "pack", "--time-limit", "5"],
     ["Node/worker-3", "optisched.io/hourly-cost", "'-1' is not a number from 0 to 1000000"]),
    ("a node cost of 1e30", "c.yaml", NODE.replace("labels: {", 'labels: {optisched.io/hourly-cost: "1e30", '),
     ["--mode", "optimal", "--objective", "pack", "--time-limit", "5"], ["'1e30' is not a number from 0"]),
    # validation gaps
    ("a PDB percentage over 100", "c.yaml", NODE + doc(PDB.format(value="150%")), [],
     ["PodDisruptionBudget/shop/web", ".spec.minAvailable", "'150%' must not be greater than 100%"]),
    ("a fractional PDB percentage", "c.yaml", NODE + doc(PDB.format(value="12.5%")), [],
     ["PodDisruptionBudget/shop/web", ".spec.minAvailable", "'12.5%' is neither an integer nor a percentage"]),
    ("a pod name with a slash", "c.yaml", NODE + pod(name='"a/b"'), [],
     ["Pod/shop/a/b", ".metadata.name", "is not a lowercase RFC 1123 subdomain"]),
    ("an upper-case namespace", "c.yaml", NODE + pod(namespace="Shop"), [],
     [".metadata.namespace", "'Shop' is not a lowercase RFC 1123 label"]),
    ("a node name of 254 characters", "c.yaml", NODE.replace("worker-3", "a" * 254), [],
     [".metadata.name", "no more than 253 characters"]),
    ("a service name starting with a digit", "c.yaml",
     NODE + doc("apiVersion: v1\nkind: Service\nmetadata: {name: 1web, namespace: shop}\n"), [],
     ["Service/shop/1web", ".metadata.name", "RFC 1035 label"]),
    ("a profile with a plugin that does not exist", "c.yaml", NODE + profile("NoSuchPlugin"), [],
     ["KubeSchedulerConfiguration", ".profiles[0].plugins.score.enabled[0].name",
      "plugin 'NoSuchPlugin' does not exist"]),
]


@pytest.mark.parametrize("name,text,args,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_input_is_refused_in_one_line(name, text, args, fragments, tmp_path):
    f = tmp_path / name
    f.write_text(text)
    before = digest(f)
    command = ["schedule"] if "--mode" in args else ["inspect"]
    proc = run([*command, str(f), *args])
    assert_refused(proc, *fragments)
    assert len(proc.stderr.decode().strip().splitlines()) == 1
    assert digest(f) == before


def test_an_alias_bomb_stays_within_bounded_memory_and_time(tmp_path):
    """Optimal mode once drove a 1.6 KB bomb to 2.4 GB; under a 1.5 GiB address-space limit it is refused."""
    f = tmp_path / "bomb.yaml"
    f.write_text(NODE + "---\n" + alias_bomb(levels=10))
    proc = run(["schedule", str(f), "--mode", "optimal", "--time-limit", "5"], memory=3 * 2**29, timeout=60)
    assert_refused(proc, "bomb.yaml: YAML aliases expand the document")


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom"], ids=["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_at_once(source):
    proc = run(["inspect", source], memory=3 * 2**29, timeout=30)
    assert_refused(proc, f"{source}: not a regular file")


def test_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "cluster.yaml"
    os.mkfifo(fifo)
    assert_refused(run(["inspect", str(fifo)], timeout=30), "cluster.yaml: not a regular file")


def test_endless_stdin_is_cut_at_the_limit():
    proc = run(["inspect", "-", "--max-input-size", "1Ki"], stdin=b" " * 4096, timeout=30)
    assert_refused(proc, "<stdin>: larger than the input limit of 1024 bytes")


def test_a_folder_with_an_unreadable_subfolder_is_an_error(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "nodes.yaml").write_text(NODE)
    secret = tmp_path / "in" / "pods"
    secret.mkdir()
    (secret / "pods.yaml").write_text(pod())
    secret.chmod(0o000)
    assert_refused(run(["inspect", str(tmp_path / "in")], permissions=True), "pods: cannot read: Permission denied")


def test_a_folder_with_an_unreadable_file_is_an_error(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "nodes.yaml").write_text(NODE)
    (tmp_path / "in" / "pods.yaml").write_text(pod())
    (tmp_path / "in" / "pods.yaml").chmod(0o000)
    assert_refused(run(["inspect", str(tmp_path / "in")], permissions=True),
                   "pods.yaml: cannot read: Permission denied")


CLI_VALUES = [
    ("a time limit of zero", ["--mode", "optimal", "--time-limit", "0"], "--time-limit: 0.0 is not a number"),
    ("a time limit of nan", ["--mode", "optimal", "--time-limit", "nan"], "--time-limit: nan is not a number"),
    ("an infinite time limit", ["--mode", "optimal", "--time-limit", "inf"], "--time-limit: inf is not"),
    ("a negative time limit", ["--mode", "optimal", "--time-limit", "-5"], "--time-limit: -5.0 is not"),
    ("zero workers", ["--mode", "optimal", "--workers", "0"], "--workers: 0 is not a number of workers"),
    ("a seed beyond int64", ["--seed", "99999999999999999999"], "--seed: 99999999999999999999 is beyond the int32"),
    ("a seed beyond int32", ["--mode", "optimal", "--seed", "2147483648"], "--seed: 2147483648 is beyond"),
    ("a weight beyond int64", ["--mode", "optimal", "--weights", "placed=99999999999999999999"],
     "--weights placed: 99999999999999999999 is beyond the int32 range"),
    ("a weight that overflows the solver", ["--mode", "optimal", "--weights", "placed=4611686018427387904"],
     "--weights placed: 4611686018427387904 is beyond"),
    ("a maximum input size that is not a size", ["--max-input-size", "lots"], "--max-input-size: 'lots' is not a size"),
]


@pytest.mark.parametrize("args,fragment", [c[1:] for c in CLI_VALUES], ids=[c[0] for c in CLI_VALUES])
def test_out_of_range_option_values_are_refused(args, fragment):
    assert_refused(run(["schedule", str(EXAMPLES / "quickstart.yaml"), *args], timeout=60), fragment)


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    f = folder / "cluster.yaml"
    f.write_text((EXAMPLES / "quickstart.yaml").read_text())
    return f


OUTPUTS = [
    ("--output on the input file", lambda f: ["schedule", str(f), "--output", str(f)], "is an input"),
    ("--trace on the input file by another spelling",
     lambda f: ["schedule", str(f), "--trace", f"{f.parent}/../in/cluster.yaml"], "is an input"),
    ("--output on the profile", lambda f: ["schedule", str(f), "--profile", str(f), "--output", str(f)],
     "is an input"),
    ("--output inside the input folder", lambda f: ["schedule", str(f.parent), "--output", str(f.parent / "p.json")],
     "is inside the input folder"),
    ("compare D --report D", lambda f: ["compare", str(f.parent), "--report", str(f.parent)],
     "is inside the input folder"),
    ("--output and --trace on one file",
     lambda f: ["schedule", str(f), "--output", str(f.parent.parent / "o.json"), "--trace",
                str(f.parent.parent / "o.json")], "is also given to --output"),
    ("--output in a missing folder", lambda f: ["schedule", str(f), "--output", str(f.parent / "no" / "o.json")],
     "does not exist"),
    ("--output on /dev/full", lambda f: ["schedule", str(f), "--output", "/dev/full"], "is not a regular file"),
    ("--output on a folder", lambda f: ["preempt", str(f), "--output", str(f.parent.parent)], "is a folder"),
    ("--report on a file", lambda f: ["compare", str(f), "--report", "/dev/null"], "is not a folder"),
]


@pytest.mark.parametrize("argv,fragment", [c[1:] for c in OUTPUTS], ids=[c[0] for c in OUTPUTS])
def test_bad_output_paths_are_refused_before_any_work(argv, fragment, cluster):
    before = digest(cluster)
    listing = sorted(p.name for p in cluster.parent.iterdir())
    assert_refused(run(argv(cluster), timeout=60), fragment)
    assert digest(cluster) == before
    assert sorted(p.name for p in cluster.parent.iterdir()) == listing


def test_an_output_without_permission_is_refused(tmp_path, cluster):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    proc = run(["schedule", str(cluster), "--output", str(locked / "o.json")], permissions=True)
    assert_refused(proc, "permission denied")


def test_a_report_folder_with_a_users_file_is_refused_and_left_alone(tmp_path, cluster):
    report = tmp_path / "report"
    report.mkdir()
    (report / "nodes.csv").write_text("my,own,file\n")
    assert_refused(run(["compare", str(cluster), "--report", str(report), "--time-limit", "2"]),
                   "holds nodes.csv, not written by an earlier report")
    assert (report / "nodes.csv").read_text() == "my,own,file\n"
    assert sorted(p.name for p in report.iterdir()) == ["nodes.csv"]


def test_a_report_is_written_again_into_its_own_folder(tmp_path, cluster):
    report = tmp_path / "report"
    for _ in range(2):
        proc = run(["compare", str(cluster), "--report", str(report), "--time-limit", "2"])
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    rows = (report / "pods.csv").read_text().splitlines()
    assert rows and all(line.startswith('"') and line.endswith('"') for line in rows)


def test_output_dash_writes_placements_to_stdout(cluster):
    proc = run(["schedule", str(cluster), "--output", "-"])
    assert proc.returncode == 0, proc.stderr.decode()
    placed = json.loads(proc.stdout)
    assert placed["mode"] == "greedy" and placed["placements"]
    assert b"Greedy placement" in proc.stderr  # the summary goes to stderr


def test_csv_placements_quote_every_field(tmp_path, cluster):
    out = tmp_path / "p.csv"
    assert run(["schedule", str(cluster), "--output", str(out)]).returncode == 0
    lines = out.read_text().splitlines()
    assert lines[0] == '"pod","node","status"' and len(lines) > 1
    assert all(line.count('"') == 6 for line in lines)
