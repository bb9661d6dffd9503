"""Optimal mode a user can rely on: the same answer twice, never below greedy, inside the time limit."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from builders import run_cli

from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.optimal import clock, solve


def _cluster(tmp_path: Path, spec: GenerateSpec) -> Path:
    path = tmp_path / "cluster.json"
    with path.open("w") as f:
        dump(generate(spec), f, "json")
    return path


def _timeless(doc: object) -> object:
    """``doc`` without its ``seconds`` fields (wall time taken, the one thing that may differ)."""
    if isinstance(doc, dict):
        return {k: _timeless(v) for k, v in doc.items() if k != "seconds"}
    if isinstance(doc, list):
        return [_timeless(x) for x in doc]
    return doc


@pytest.mark.parametrize("spec,lns", [
    (GenerateSpec(nodes=12, seed=5, load=1.0), False),
    (GenerateSpec(nodes=25, seed=2, load=1.1, gpu_fraction=0.2), False),
    (GenerateSpec(nodes=30, seed=7, load=1.0), True),
], ids=["a small cluster solved whole repeats exactly",
        "an overloaded cluster with gpus repeats exactly",
        "a cluster searched by node neighbourhoods repeats exactly"])
def test_two_runs_with_the_same_seed_write_the_same_json(spec, lns, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the wall-clock safety net is what a loaded machine may trip; the deterministic budget alone decides here
    monkeypatch.setattr(clock.Clock, "wall_left", lambda self: 1e9)
    if lns:  # candidate nodes and no presolve: the large-model path (CP-SAT's LNS and node neighbourhoods)
        monkeypatch.setattr(solve, "OptimalOptions",
                            functools.partial(solve.OptimalOptions, max_variables=600, presolve_limit=600))
    path = _cluster(tmp_path, spec)
    docs = []
    for run in (1, 2):
        out = tmp_path / f"o{run}.json"
        code, _, _ = run_cli(["schedule", str(path), "--mode", "optimal", "--time-limit", "2", "--seed", "3",
                              "--output", str(out)], capsys)
        assert code == 0
        docs.append(json.loads(out.read_text()))
    assert _timeless(docs[0]) == _timeless(docs[1])
    assert not any("wall-clock" in n for n in docs[0]["certificate"]["notes"])
