"""Each bundled example's comment says what the commands print; these tests hold it to that.

An example's header carries ``#   outcome: ...`` lines in a small fixed grammar (one claim per line;
a pod without a namespace is in ``default``):

- ``greedy places 4 of 6 pending pods; report-0, report-1 stay pending`` (``optimal`` likewise)
- ``greedy puts api-0, api-1 on node-1``
- ``greedy evicts low-a, low-b``
- ``greedy scores newpod on node1 with NodeResourcesFit 60`` (the weighted score ``explain`` shows)
- ``greedy rejects mypod on node1, node2 by PodTopologySpread``

Greedy mode runs as ``optisched schedule`` does (default tie-break ``first``); optimal mode as
``schedule --mode optimal``. A line outside the grammar fails, so a claim cannot silently go unchecked.
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import optisched
from optisched.greedy.scheduler import GreedyResult

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"
LINE = re.compile(r"^#\s+outcome:\s*(.+?)\s*$", re.MULTILINE)
NAMES = r"([\w./-]+(?:, [\w./-]+)*)"
PLACES = re.compile(r"(greedy|optimal) places (\d+) of (\d+) pending pods(?:; " + NAMES + r" stays? pending)?")
PUTS = re.compile(r"greedy puts " + NAMES + r" on ([\w.-]+)")
EVICTS = re.compile(r"greedy evicts " + NAMES)
SCORES = re.compile(r"greedy scores ([\w./-]+) on ([\w.-]+) with (\w+) (-?\d+)")
REJECTS = re.compile(r"greedy rejects ([\w./-]+) on " + NAMES + r" by (\w+)")


def pods(names: str) -> list[str]:
    return [n if "/" in n else f"default/{n}" for n in names.split(", ")]


def claims() -> list[tuple[str, str]]:
    return [(p.name, c) for p in sorted(EXAMPLES.glob("*.yaml")) for c in LINE.findall(p.read_text())]


@cache
def greedy(example: str) -> GreedyResult:
    return optisched.schedule(optisched.load([str(EXAMPLES / example)]))


@cache
def optimal_placements(example: str) -> dict[str, str | None]:
    return optisched.solve(optisched.load([str(EXAMPLES / example)]), time_limit=20, seed=0).placements()


def last_cycle(res: GreedyResult, pod: str):
    row = res.state.pod_index[pod]
    return [c for c in res.cycles if c.pod == row][-1]


def check(example: str, claim: str) -> None:
    res = greedy(example)
    pending = [p.key for i, p in enumerate(res.state.pods) if res.state.pod_node[i] < 0]
    if m := PLACES.fullmatch(claim):
        placed = res.placements() if m[1] == "greedy" else optimal_placements(example)
        assert len(pending) == int(m[3]), f"{len(pending)} pending pods in the input"
        assert sum(placed[p] is not None for p in pending) == int(m[2])
        if m[4]:
            assert sorted(p for p in pending if placed[p] is None) == sorted(pods(m[4]))
    elif m := PUTS.fullmatch(claim):
        placed = res.placements()
        assert {p: placed[p] for p in pods(m[1])} == {p: m[2] for p in pods(m[1])}
    elif m := EVICTS.fullmatch(claim):
        assert sorted(res.state.pods[v].key for v in res.preempted) == sorted(pods(m[1]))
    elif m := SCORES.fullmatch(claim):
        scores = last_cycle(res, pods(m[1])[0]).scores
        at = int(np.flatnonzero(scores.nodes == res.state.node_index[m[2]])[0])
        assert int(scores.weighted[m[3]][at]) == int(m[4])
    elif m := REJECTS.fullmatch(claim):
        f = last_cycle(res, pods(m[1])[0]).filters
        by = {res.state.node_names[n]: f.plugin_names[k] for n, k, ok in zip(f.evaluated, f.fail_plugin, f.passed)
              if not ok}
        assert by == {n: m[3] for n in m[2].split(", ")}
    else:
        pytest.fail(f"{example}: 'outcome: {claim}' is not a claim this test knows how to check")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_states_its_outcome(example):
    assert any(e == example for e, _ in claims()), f"{example} has no '#   outcome:' line"


@pytest.mark.parametrize(("example", "claim"), claims(), ids=[f"{e}: {c}" for e, c in claims()])
def test_example_outcome(example, claim):
    check(example, claim)


@pytest.mark.parametrize("claim", [
    "greedy places 6 of 8 pending pods; report-0, report-1 stay pending",
    "greedy puts api-0 on node-2",
    "optimal places 4 of 6 pending pods",
    "greedy evicts report-0",
    "greedy scores api-3 on node-4 with NodeResourcesFit 1",
], ids=["the old miscount of pending pods", "a wrong node", "an optimal count greedy gets",
        "an eviction that does not happen", "a wrong score"])
def test_a_false_claim_fails(claim):
    with pytest.raises(AssertionError):
        check("strand-large-pod.yaml", claim)


def test_an_unknown_claim_fails():
    with pytest.raises(pytest.fail.Exception, match="not a claim"):
        check("strand-large-pod.yaml", "greedy is fast")
