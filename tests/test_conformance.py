"""Greedy mode against the real kube-scheduler: every recorded scenario, cycle for cycle.

Runs greedy mode on each scenario of ``tests/data/conformance/cases`` and scores the
trace with the suite's own ``compare.py`` (kept beside the cases); a disagreement is a bug in greedy mode.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from helpers.replay import CASES, CASES_1_36, CASES_DRA, case_names, load_trace

from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.greedy.select import TieBreak
from optisched.greedy.trace import trace_of
from optisched.model.loader import load_cluster
from optisched.model.state import compile_cluster
from optisched.profile import default_config, for_version

_spec = importlib.util.spec_from_file_location("conformance_compare", CASES.parent / "compare.py")
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


def greedy_trace(name: str, kubernetes_version: str = "1.35", cases=CASES) -> dict:
    cluster = load_cluster([str(cases / f"{name}.yaml")])
    config = for_version(cluster.config or default_config(), kubernetes_version)
    res = GreedyScheduler(compile_cluster(cluster), config, GreedyOptions(tie_break=TieBreak.FIRST, requeue=False)).run()
    return json.loads(json.dumps(trace_of(res, config, TieBreak.FIRST)))


@pytest.mark.parametrize("name", case_names())
def test_greedy_matches_kube_scheduler(name):
    result = compare.compare_traces(load_trace(name), greedy_trace(name))
    assert result["first_divergence"] is None, result["first_divergence"]
    assert result["match"], result


@pytest.mark.parametrize("name", case_names(CASES_1_36))
def test_greedy_matches_kube_scheduler_1_36(name):
    """The same scenarios against v1.36.2's traces, greedy mode following 1.36's rules."""
    result = compare.compare_traces(load_trace(name, CASES_1_36), greedy_trace(name, "1.36"))
    assert result["first_divergence"] is None, result["first_divergence"]
    assert result["match"], result


@pytest.mark.parametrize("name", case_names(CASES_DRA))
def test_greedy_matches_kube_scheduler_with_dra(name):
    """GPU clusters whose pods claim devices through DRA: the devices each pod gets, the DynamicResources
    reasons and scores, PostFilter's deallocation and the messages, as v1.35.4 recorded them."""
    result = compare.compare_traces(load_trace(name, CASES_DRA), greedy_trace(name, cases=CASES_DRA))
    assert result["first_divergence"] is None, result["first_divergence"]
    assert result["match"], result


def test_the_command_follows_the_release_it_is_asked_for(tmp_path):
    """``schedule --kubernetes-version 1.36`` writes a trace of v1.36.2 that matches its recording, and the
    Python API places the pods as that trace does; 1.35's rules do not."""
    import optisched

    name = next(n for n in case_names(CASES_1_36)
                if not compare.compare_traces(load_trace(n, CASES_1_36), greedy_trace(n))["match"])
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "optisched.cli", "schedule", str(CASES / f"{name}.yaml"),
                           "--kubernetes-version", "v1.36.2", "--tie-break", "first", "--no-requeue", "--trace",
                           str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text())
    assert trace["kubernetesVersion"] == "v1.36.2"
    assert compare.compare_traces(load_trace(name, CASES_1_36), trace)["match"]
    cluster = optisched.load([str(CASES / f"{name}.yaml")])
    want = load_trace(name, CASES_1_36)["final"]
    assert optisched.schedule(cluster, kubernetes_version="1.36", requeue=False).placements() == want
    assert optisched.schedule(cluster, requeue=False).placements() != want


def test_compare_py_accepts_the_cli_trace(tmp_path):
    """The documented command line writes a trace compare.py scores as a match."""
    name = "v1-topology-spread"
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-m", "optisched.cli", "schedule", str(CASES / f"{name}.yaml"),
                           "--tie-break", "first", "--no-requeue", "--trace", str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    result = compare.compare_traces(load_trace(name), json.loads(out.read_text()))
    assert result["match"], result
