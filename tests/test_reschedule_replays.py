"""How many kube-scheduler replays a staging runs (``Staging.replays``): each eviction order of a wave is
replayed once, so a wave whose only disagreements were accepted landings, and a cycle's detour leg that
evicts the pod its lone trial evicted, cost no second replay."""
from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from test_reschedule_cycles import _not_on, _swap_by_detour, _swapped, owned

from optisched.greedy.scheduler import GreedyScheduler
from optisched.profile import default_config
from optisched.reschedule import stage

CFG = default_config()


@pytest.fixture
def runs(monkeypatch):  # type: ignore[no-untyped-def]
    """The greedy runs made, counted where they start (whatever Staging.replays says)."""
    count = [0]
    run = GreedyScheduler.run

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        count[0] += 1
        return run(self, *args, **kwargs)

    monkeypatch.setattr(GreedyScheduler, "run", counted)
    return count


def test_an_accepted_landing_is_not_replayed_again(runs):
    """a leaves n1 (cordoned) for n2; kube-scheduler's LeastAllocated puts it on the empty n3, which the
    plan keeps in use: the landing is accepted, on the wave's one replay."""
    state = state_of(node("n1", cpu="4"), node("n2", cpu="4"), node("n3", cpu="4"),
                     owned("a").req(cpu="1").on("n1"), pod("x").req(cpu="2").on("n2"))
    target = state.pod_node.copy()
    target[state.pod_index["default/a"]] = state.node_index["n2"]
    staging = stage(state, CFG, target, {}, emptied=frozenset({"n1"}))
    assert [[(m.key, m.target, m.predicted) for m in w.moves] for w in staging.waves] == [[("default/a", "n3", "n3")]]
    assert any("the landing is accepted" in n for n in staging.notes)
    assert staging.replays == runs[0] == 1 and staging.reused == 0


def test_a_detour_leg_reuses_the_replay_of_its_lone_trial(runs):
    """The detour of tests/test_reschedule_cycles.py: wave 1's replay of a alone (it lands on n3, where the
    accept step refuses it to stay) is also the detour's lone trial and its first leg; then one replay per
    wave."""
    state = state_of(*_swap_by_detour(third_cpu="2"))
    staging = stage(state, CFG, _swapped(state), {}, accept=_not_on(state, "n3"))
    assert [c.outcome for c in staging.cycles] == ["detour"] and len(staging.waves) == 3
    assert staging.replays == runs[0] == 3 and staging.reused == 2


def test_every_wave_is_replayed_at_least_once(runs):
    state = state_of(node("n1", cpu="4"), node("n2", cpu="4"), owned("a").req(cpu="1").on("n1"))
    target = np.array([state.node_index["n2"]])
    staging = stage(state, CFG, target, {}, emptied=frozenset({"n1"}))
    assert len(staging.waves) == 1 and staging.replays == runs[0] == 1
