"""``Snapshot.shared``: per-snapshot indexes, and per-state listings every snapshot of a run reads."""
from __future__ import annotations

from builders import node, pod, state_of

from optisched.model.snapshot import Snapshot
from optisched.plugins.node_ports import PodHostPorts
from optisched.plugins.volumes.volume_restrictions import PodVolumeKeys


class _PerSnapshot:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot


def test_a_per_state_listing_is_built_once_for_every_snapshot_of_the_state() -> None:
    state = state_of(node("n1"), pod("a").build())
    first, second = Snapshot(state), Snapshot(state)
    for factory in (PodHostPorts, PodVolumeKeys):
        assert first.shared(factory) is second.shared(factory)


def test_a_per_snapshot_index_is_its_snapshots_own() -> None:
    state = state_of(node("n1"), pod("a").build())
    first, second = Snapshot(state), Snapshot(state)
    assert first.shared(_PerSnapshot) is first.shared(_PerSnapshot)
    assert first.shared(_PerSnapshot) is not second.shared(_PerSnapshot)


def test_another_state_gets_its_own_listing() -> None:
    one = Snapshot(state_of(node("n1"), pod("a").build()))
    other = Snapshot(state_of(node("n1"), pod("a").build(), pod("b").build()))
    assert len(one.shared(PodHostPorts).of) == 1
    assert len(other.shared(PodHostPorts).of) == 2
