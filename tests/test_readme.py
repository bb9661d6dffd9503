"""The README stays true: its Python snippets run, its kubectl dump lists every kind optisched reads,
and its loop that applies a plan's Evictions sends each one to the pod's eviction subresource."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from builders import run_cli

from optisched.model.live import LISTS
from optisched.model.loader import _MODELS

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
BASH_BLOCKS = re.findall(r"```bash\n(.*?)```", README, re.DOTALL)
# kubectl's resource names (and short names) for the kinds optisched reads or may read
RESOURCE_KINDS = {
    "nodes": "Node", "pods": "Pod", "pdb": "PodDisruptionBudget", "priorityclasses": "PriorityClass",
    "namespaces": "Namespace", "services": "Service", "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet", "daemonsets": "DaemonSet", "replicationcontrollers": "ReplicationController",
    "pv": "PersistentVolume", "pvc": "PersistentVolumeClaim", "storageclasses": "StorageClass",
    "csinodes": "CSINode", "csidrivers": "CSIDriver", "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment", "deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice",
    "resourceclaims": "ResourceClaim", "resourceclaimtemplates": "ResourceClaimTemplate",
    "workloads.scheduling.k8s.io": "Workload", "podgroups.scheduling.k8s.io": "PodGroup",
    "podgroups.scheduling.x-k8s.io": "PodGroup", "topologies.kueue.x-k8s.io": "Topology",
}


@pytest.fixture
def in_a_clone_like_folder(tmp_path, monkeypatch):
    """A working folder holding the examples at the README's relative paths, so snippets write nothing
    into the repository."""
    shutil.copytree(REPO / "datasets" / "examples", tmp_path / "datasets" / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_has_python_snippets():
    assert len(PYTHON_BLOCKS) >= 2


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"python snippet {i + 1}" for i in range(len(PYTHON_BLOCKS))])
def test_python_snippet_runs(block, in_a_clone_like_folder, capsys):
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102 - running the README is the test
    assert capsys.readouterr().out.strip()  # every snippet shows something


def test_own_placements_snippet_measures_mine_beside_greedy_and_optimal(in_a_clone_like_folder):
    block = next(b for b in PYTHON_BLOCKS if "placements=" in b)
    scope: dict = {"__name__": "readme"}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - running the README is the test
    summary = scope["cmp"].summary
    assert list(summary.columns) == ["greedy", "optimal", "mine"]
    assert summary.loc["placed (of 6 pending)", "mine"] == 6 and summary.loc["placed (of 6 pending)", "greedy"] == 4
    assert (in_a_clone_like_folder / "out" / "report.html").is_file()


def kubectl_dump_kinds() -> set[str]:
    """The kinds the README's kubectl dumps name (the main one, and the one for pod groups' objects)."""
    lines = [line for b in BASH_BLOCKS for line in b.splitlines() if line.startswith("kubectl get ")]
    resources = [r for line in lines for r in line.split()[2].split(",")]
    unknown = [r for r in resources if r not in RESOURCE_KINDS]
    assert not unknown, f"README's kubectl dump names resources this test cannot map to kinds: {unknown}"
    return {RESOURCE_KINDS[r] for r in resources}


def test_the_kubectl_dump_lists_every_kind_optisched_reads():
    read = set(_MODELS) | {kind for kind, *_ in LISTS}
    assert read <= kubectl_dump_kinds(), f"missing from the README's kubectl command: {read - kubectl_dump_kinds()}"


@pytest.mark.parametrize("one", [["--pod", "default/preemptor"], []],
                         ids=["a one-pod plan", "a batch plan, whose PreemptionPlan document is skipped"])
def test_the_eviction_loop_posts_each_eviction_to_its_pod(one, tmp_path, capsys):
    """Runs the README's loop on a real plan, with a stand-in ``kubectl`` that records its calls."""
    code, _, err = run_cli(["preempt", str(REPO / "datasets" / "examples" / "preemption.yaml"), "--mode", "optimal",
                            *one, "--time-limit", "5", "--output", str(tmp_path / "plan.yaml")], capsys)
    assert code == 0, err
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    "args = sys.argv[1:]\nbody = json.load(open(args[args.index('-f') + 1]))\n"
                    "open('calls.jsonl', 'a').write(json.dumps({'args': args, 'body': body}) + '\\n')\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    loop = next(b for b in BASH_BLOCKS if "eviction" in b and "<<'EOF'" in b)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", loop], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert sorted(c["args"][:3] for c in calls) == [
        ["create", "--raw", "/api/v1/namespaces/default/pods/low-a/eviction"],
        ["create", "--raw", "/api/v1/namespaces/default/pods/low-b/eviction"]]
    assert all(c["body"]["kind"] == "Eviction" and c["body"]["apiVersion"] == "policy/v1" for c in calls)
