"""Bad input: one clear line naming the file, the object and the field; exit status 2; no traceback."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import pytest
from builders import run_cli

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: worker-3}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def pod_doc(spec_extra: str = "", name: str = "web", meta_extra: str = "") -> str:
    return textwrap.dedent(f"""\
    ---
    apiVersion: v1
    kind: Pod
    metadata: {{name: {name}, namespace: shop{meta_extra}}}
    spec:
      containers: [{{name: c, image: app, resources: {{requests: {{cpu: 100m}}}}}}]
    """) + textwrap.indent(textwrap.dedent(spec_extra), "  ")


def affinity(block: str) -> str:
    return "affinity:\n" + textwrap.indent(textwrap.dedent(block), "  ")


CASES: list[tuple[str, str, list[str]]] = [
    ("a malformed cpu quantity on a node",
     NODE.replace('cpu: "4"', "cpu: 2x"), ["Node/worker-3", ".status.allocatable.cpu", "'2x' is not a quantity"]),
    ("a malformed memory request", NODE + pod_doc().replace("cpu: 100m", "memory: 12QB"),
     ["Pod/shop/web", ".spec.containers[0].resources.requests.memory", "'12QB' is not a quantity"]),
    ("a negative request", NODE + pod_doc().replace("cpu: 100m", "cpu: -1"),
     ["Pod/shop/web", ".requests.cpu", "must not be negative"]),
    ("an unknown node affinity operator", NODE + pod_doc(affinity("""\
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: Maybe, values: [ssd]}]}]
        """)), ["Pod/shop/web", ".matchExpressions[0].operator", "'Maybe' is not one of"]),
    ("an unknown pod affinity selector operator", NODE + pod_doc(affinity("""\
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchExpressions: [{key: app, operator: Gt, values: ["1"]}]}
        """)), ["Pod/shop/web", ".labelSelector.matchExpressions[0].operator", "'Gt' is not one of"]),
    ("a missing name", NODE + pod_doc(name='""'), ["Pod", ".metadata.name"]),
    ("a document without kind", NODE + "---\napiVersion: v1\nmetadata: {name: x}\n", ["document 2 has no kind"]),
    ("a duplicate node", NODE + "---\n" + NODE, ["Node/worker-3", "duplicate object"]),
    ("a duplicate pod", NODE + pod_doc() + pod_doc(), ["Pod/shop/web", "duplicate object"]),
    ("invalid YAML", NODE + "---\nkind: Pod\nmetadata: {name: [unclosed\n", ["invalid YAML at line"]),
    ("a config with the wrong apiVersion",
     NODE + "---\napiVersion: kubescheduler.config.k8s.io/v1beta2\nkind: KubeSchedulerConfiguration\n",
     ["KubeSchedulerConfiguration", "apiVersion", "kubescheduler.config.k8s.io/v1"]),
    ("a negative maxSkew", NODE + pod_doc("""\
        topologySpreadConstraints:
        - {maxSkew: -1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}
        """), ["Pod/shop/web", ".spec.topologySpreadConstraints[0].maxSkew", "greater than or equal to 1"]),
    ("a zero minDomains", NODE + pod_doc("""\
        topologySpreadConstraints:
        - {maxSkew: 1, minDomains: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}
        """), ["Pod/shop/web", ".minDomains"]),
    ("minDomains with ScheduleAnyway", NODE + pod_doc("""\
        topologySpreadConstraints:
        - {maxSkew: 1, minDomains: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {}}
        """), ["Pod/shop/web", ".spec.topologySpreadConstraints[0]", "minDomains may only be set"]),
    ("an unknown whenUnsatisfiable", NODE + pod_doc("""\
        topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Sometimes}
        """), [".whenUnsatisfiable", "'Sometimes' is not one of DoNotSchedule, ScheduleAnyway"]),
    ("an unknown taint effect", NODE.replace("metadata: {name: worker-3}",
                                             "metadata: {name: worker-3}\nspec: {taints: [{key: a, effect: Never}]}"),
     ["Node/worker-3", ".spec.taints[0].effect", "'Never' is not one of"]),
    ("an unknown toleration operator", NODE + pod_doc("tolerations: [{key: a, operator: Like}]\n"),
     [".spec.tolerations[0].operator", "'Like'"]),
    ("a toleration Exists with a value", NODE + pod_doc("tolerations: [{key: a, operator: Exists, value: b}]\n"),
     [".spec.tolerations[0]", "operator Exists takes no value"]),
    ("In without values", NODE + pod_doc(affinity("""\
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: In}]}]
        """)), [".matchExpressions[0]", "operator In needs at least one value"]),
    ("Gt with two values", NODE + pod_doc(affinity("""\
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: cores, operator: Gt, values: ["1", "2"]}]}]
        """)), [".matchExpressions[0]", "operator Gt needs exactly one value"]),
    ("matchFields on a label", NODE + pod_doc(affinity("""\
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchFields: [{key: metadata.labels, operator: In, values: [a]}]}]
        """)), [".matchFields", "supports only the key metadata.name"]),
    ("an unknown PriorityClass", NODE + pod_doc("priorityClassName: urgent\n"),
     ["Pod/shop/web", ".spec.priorityClassName", "PriorityClass 'urgent' does not exist"]),
    ("two global default PriorityClasses", NODE + textwrap.dedent("""\
        ---
        {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: a}, value: 1, globalDefault: true}
        ---
        {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: b}, value: 2, globalDefault: true}
        """), ["PriorityClass/b", ".globalDefault", "more than one"]),
    ("a pod without containers", NODE + pod_doc().replace(
        "containers: [{name: c, image: app, resources: {requests: {cpu: 100m}}}]", "containers: []"),
     ["Pod/shop/web", ".spec.containers"]),
    ("a PDB with minAvailable and maxUnavailable", NODE + textwrap.dedent("""\
        ---
        apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: web, namespace: shop}
        spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: web}}}
        """), ["PodDisruptionBudget/shop/web", ".spec", "mutually exclusive"]),
    ("a PDB with a malformed percentage", NODE + textwrap.dedent("""\
        ---
        apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {name: web, namespace: shop}
        spec: {minAvailable: "half", selector: {matchLabels: {app: web}}}
        """), ["PodDisruptionBudget/shop/web", ".spec.minAvailable", "'half' is neither an integer nor a percentage"]),
    ("a document that is not a mapping", NODE + "---\n- just\n- a list\n", ["document 2 is a list"]),
    ("a host port out of range", NODE + pod_doc().replace(
        "resources: {requests: {cpu: 100m}}", "ports: [{containerPort: 80, hostPort: 70000}]"),
     [".spec.containers[0].ports[0].hostPort", "less than or equal to 65535"]),
    ("an unknown port protocol", NODE + pod_doc().replace(
        "resources: {requests: {cpu: 100m}}", "ports: [{containerPort: 80, hostPort: 80, protocol: HTTP}]"),
     [".spec.containers[0].ports[0].protocol", "'HTTP' is not one of TCP, UDP, SCTP"]),
    ("a preferred weight of zero", NODE + pod_doc(affinity("""\
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - {weight: 0, preference: {matchExpressions: [{key: disk, operator: Exists}]}}
        """)), [".preferredDuringSchedulingIgnoredDuringExecution[0].weight", "greater than or equal to 1"]),
    ("a node with the wrong apiVersion", NODE.replace("apiVersion: v1", "apiVersion: apps/v1"),
     ["Node/worker-3", ".apiVersion", "'apps/v1' is not supported for Node; expected v1"]),
    ("resources that are not a mapping", NODE + pod_doc().replace("requests: {cpu: 100m}", "requests: [cpu]"),
     [".spec.containers[0].resources.requests", "expected a mapping"]),
    ("an empty topologyKey", NODE + pod_doc(affinity("""\
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: "", labelSelector: {}}
        """)), [".topologyKey"]),
    ("a priority class value out of range", NODE + textwrap.dedent("""\
        ---
        {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: a}, value: 3000000000}
        """), ["PriorityClass/a", ".value"]),
    ("a List without items list", "apiVersion: v1\nkind: List\nitems: 5\n", ["List", ".items"]),
    ("an unknown preemptionPolicy", NODE + pod_doc("preemptionPolicy: Sometimes\n"),
     [".spec.preemptionPolicy", "'Sometimes' is not one of"]),
]




@pytest.mark.parametrize("case,text,fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_reported_clearly(case, text, fragments, tmp_path, capsys):
    f = tmp_path / "cluster.yaml"
    f.write_text(text)
    before = hashlib.sha256(f.read_bytes()).hexdigest()
    code, _, err = run_cli(["inspect", str(f)], capsys)
    assert code == 2
    assert "Traceback" not in err
    line = " ".join(err.split())
    assert "cluster.yaml" in line or "KubeSchedulerConfiguration" in line
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"
    assert hashlib.sha256(f.read_bytes()).hexdigest() == before


def test_a_file_that_does_not_exist(tmp_path, capsys):
    code, _, err = run_cli(["inspect", str(tmp_path / "missing.yaml")], capsys)
    assert code == 2 and "missing.yaml: no such file or folder" in " ".join(err.split())


def test_a_file_that_is_not_text(tmp_path, capsys):
    f = tmp_path / "blob.yaml"
    f.write_bytes(b"\xff\xfe\x00binary")
    code, _, err = run_cli(["inspect", str(f)], capsys)
    assert code == 2 and "blob.yaml: not UTF-8 text" in " ".join(err.split())


def test_a_folder_without_manifests(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    code, _, err = run_cli(["inspect", str(tmp_path)], capsys)
    assert code == 2 and "folder holds no .yaml" in " ".join(err.split())


def test_an_unreadable_file(tmp_path, capsys, monkeypatch):
    """Permission denied (simulated: tests run as root, who can read any file)."""
    import builtins

    f = tmp_path / "secret.yaml"
    f.write_text(NODE)
    real = builtins.open

    def denied(file, *a, **k):
        if str(file).endswith("secret.yaml"):
            raise PermissionError(13, "Permission denied")
        return real(file, *a, **k)

    monkeypatch.setattr(builtins, "open", denied)
    code, _, err = run_cli(["inspect", str(f)], capsys)
    assert code == 2 and "secret.yaml: cannot read: Permission denied" in " ".join(err.split())


def test_bad_input_through_the_installed_command(tmp_path):
    """The real console script: exit status 2, one line on stderr, no traceback."""
    f = tmp_path / "nodes.yaml"
    f.write_text(NODE.replace('cpu: "4"', "cpu: 2x"))
    proc = subprocess.run([sys.executable, "-m", "optisched.cli", "inspect", str(f)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{f}: Node/worker-3 .status.allocatable.cpu: '2x' is not a quantity" in " ".join(proc.stderr.split())


@pytest.mark.parametrize("where,value", [("annotations", "1E+30"), ("labels", "-3")])
@pytest.mark.parametrize("command", [["schedule", "--mode", "optimal", "--time-limit", "5"], ["compare", "--time-limit", "5"],
                                     ["schedule"], ["inspect"]], ids=["schedule optimal", "compare", "schedule", "inspect"])
def test_a_node_cost_out_of_range_names_the_file_the_node_and_the_field(where, value, command, tmp_path, capsys):
    """Checked when the node is loaded, so every command says where it is, not only those that read the cost."""
    f = tmp_path / "cluster.yaml"
    f.write_text(NODE.replace("metadata: {name: worker-3}",
                              f'metadata: {{name: worker-3, {where}: {{optisched.io/hourly-cost: "{value}"}}}}')
                 + pod_doc())
    code, out, err = run_cli([command[0], str(f), *command[1:]], capsys)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: {f}: Node/worker-3 .metadata.{where}[optisched.io/hourly-cost]: '{value}' is not a "
                           "number from 0 to 1000000")


def test_a_node_cost_in_range_loads(tmp_path, capsys):
    f = tmp_path / "cluster.yaml"
    f.write_text(NODE.replace("metadata: {name: worker-3}",
                              'metadata: {name: worker-3, annotations: {optisched.io/hourly-cost: "0.192"}}'))
    assert run_cli(["inspect", str(f)], capsys)[0] == 0


def test_a_profile_that_is_a_directory_is_called_one(tmp_path, capsys):
    f = tmp_path / "cluster.yaml"
    f.write_text(NODE)
    code, _, err = run_cli(["schedule", str(f), "--profile", str(tmp_path)], capsys)
    assert code == 2
    assert err.strip() == f"error: {tmp_path}: is a directory; give a KubeSchedulerConfiguration file"
