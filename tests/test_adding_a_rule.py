"""docs/adding-a-rule.md stays true: its plugin, registered as the page says, is checked by what the suite
checks of every rule (facts, the EXACT encoding against the greedy filter) and behaves as described."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from builders import node, pod, state_of
from test_optimal_exact import greedy_allowed, model_allowed, only

from optisched import registry
from optisched.framework import Plugin
from optisched.greedy.scheduler import GreedyOptions, GreedyScheduler
from optisched.optimal.solve import OptimalOptions, solve_optimal

PAGE = Path(__file__).resolve().parents[1] / "docs" / "adding-a-rule.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


@pytest.fixture
def registered(monkeypatch):
    """The page's module under the name it gives, and its registry line, in force for one test."""
    module = types.ModuleType("optisched.plugins.exclusive_pods")
    exec(compile(BLOCKS[0], str(PAGE), "exec"), module.__dict__)  # noqa: S102 - the page's own code
    monkeypatch.setitem(sys.modules, module.__name__, module)
    line = dict(eval("{" + BLOCKS[1].strip().rstrip(",") + "}"))
    monkeypatch.setitem(registry.REGISTRY, "ExclusivePods", line["ExclusivePods"])
    _forget()
    yield module
    monkeypatch.undo()
    _forget()


def _forget() -> None:
    """Drop what is computed once from the registry (each plugin's points, the queue's events)."""
    from optisched.greedy import queue

    registry.plugin_points.cache_clear()
    queue._interest.cache_clear()


def exclusive(name: str, on: str | None = None):  # type: ignore[no-untyped-def]
    p = pod(name).label(**{"example.com/exclusive": "yes"}).req(cpu="100m")
    return p.on(on) if on else p


def test_the_page_has_the_plugin_and_its_registry_line():
    assert len(BLOCKS) == 2 and "class ExclusivePods(Plugin)" in BLOCKS[0]


def test_the_rule_declares_its_facts(registered):
    cls = registry.rule_class(registry.REGISTRY["ExclusivePods"]["filter"])
    assert issubclass(cls, Plugin) and cls.points == {"preFilter", "filter"} and not cls.static


def test_greedy_mode_keeps_a_second_exclusive_pod_off_the_node(registered):
    state = state_of(node("a"), node("b"), exclusive("held", "a"),
                     exclusive("p1"), exclusive("p2"), pod("plain").req(cpu="100m"))
    config = only("ExclusivePods")
    res = GreedyScheduler(state, config, GreedyOptions(requeue=False)).run()
    placed = res.placements()
    assert placed["default/p1"] == "b" and placed["default/p2"] is None and placed["default/plain"] is not None
    assert "node(s) already run an exclusive pod" in res.unschedulable[state.pod_index["default/p2"]]


def test_the_exact_encoding_allows_what_the_filter_allows(registered):
    config = only("ExclusivePods")
    for held in ([], ["a"], ["a", "b"]):
        state = state_of(node("a"), node("b"),
                         *[exclusive(f"h-{n}", n) for n in held], exclusive("p"))
        pod = state.pending[0]
        assert model_allowed(state, config, pod) == greedy_allowed(state, config, pod) == (
            {0, 1} - {state.node_index[n] for n in held})


def test_optimal_mode_puts_one_exclusive_pod_per_node(registered):
    state = state_of(node("a"), node("b"), *[exclusive(f"p{i}") for i in range(3)])
    res = solve_optimal(state, only("ExclusivePods"), OptimalOptions(time_limit=5, seed=1))
    nodes = res.node_of[state.pending]
    assert res.violations == [] and sorted(nodes[nodes >= 0].tolist()) == [0, 1] and np.sum(nodes < 0) == 1
