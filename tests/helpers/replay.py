"""Replay a recorded conformance trace against one rule at a time.

For each cycle of a real kube-scheduler trace, the snapshot holds exactly what
the real scheduler had (earlier choices assumed, victims removed), so a rule's
filter and score can be checked in isolation against the recorded numbers.
"""
from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optisched.framework import CycleState
from optisched.model.loader import load_cluster
from optisched.model.snapshot import Snapshot
from optisched.model.state import ClusterState, compile_cluster

CASES = Path(__file__).resolve().parents[1] / "data" / "conformance" / "cases"
CASES_1_36 = CASES.parent / "cases-v1.36"  # the same scenarios, traced by kube-scheduler v1.36.2
CASES_DRA = CASES.parent / "cases-dra"  # GPU clusters with DRA objects, traced by kube-scheduler v1.35.4
FILTER_ORDER = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
                "PodTopologySpread", "InterPodAffinity"]


def case_names(cases: Path = CASES) -> list[str]:
    return sorted(p.name.split(".trace.json")[0] for p in cases.glob("*.trace.json.gz"))


def load_trace(name: str, cases: Path = CASES) -> dict:
    with gzip.open(cases / f"{name}.trace.json.gz", "rt") as f:
        return json.load(f)


@dataclass
class Step:
    """One recorded cycle, with a cycle state positioned as the real scheduler saw it."""

    case: str
    index: int
    cycle: dict
    state: ClusterState
    cycle_state: CycleState
    node_order: list[str]

    def rows(self, names: list[str]) -> np.ndarray:
        """Node rows for node names, in the trace's node order."""
        order = {n: i for i, n in enumerate(self.node_order)}
        return np.array([self.state.node_index[n] for n in sorted(names, key=order.__getitem__)], dtype=np.int64)

    @property
    def feasible(self) -> np.ndarray:
        return self.rows(self.cycle.get("feasible") or [])

    def filter_expectation(self, plugin: str) -> tuple[np.ndarray, dict[str, dict]]:
        """(nodes where ``plugin`` ran and passed, {node: failure} where ``plugin`` was the first to fail).

        A node failing an earlier plugin in the profile's filter order tells nothing about ``plugin``.
        """
        failures = self.cycle.get("filterFailures") or {}
        order = self.cycle_state.profile.plugins.get("filter", tuple(FILTER_ORDER))
        pos = order.index(plugin)
        passed = list(self.cycle.get("feasible") or [])
        for node, f in failures.items():
            if f["plugin"] in order and order.index(f["plugin"]) > pos:
                passed.append(node)
        mine = {n: f for n, f in failures.items() if f["plugin"] == plugin}
        return self.rows(passed), mine


def replay(name: str) -> Iterator[Step]:
    """Yield each cycle of case ``name`` with the snapshot as it was when that cycle ran."""
    from optisched.profile import default_config

    trace = load_trace(name)
    cluster = load_cluster([str(CASES / f"{name}.yaml")])
    state = compile_cluster(cluster)
    config = cluster.config or default_config()
    profile = config.profiles[0]
    snap = Snapshot(state)
    for i, cycle in enumerate(trace["cycles"]):
        pod = state.pod_index[cycle["pod"]]
        yield Step(name, i, cycle, state, CycleState(pod, snap, profile), trace["nodeOrder"])
        pre = cycle.get("preemption") or {}
        for victim in pre.get("victims") or []:
            v = state.pod_index[victim]
            if snap.node_of[v] >= 0:
                snap.remove(v)
        if cycle.get("chosen"):
            snap.add(pod, state.node_index[cycle["chosen"]])
