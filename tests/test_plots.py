"""The comparison's plots draw the numbers of the tables (read back from the bars)."""
from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.figure import Figure

import optisched
from optisched.comparison import PlacementRun, build_comparison, run_greedy
from optisched.model.state import compile_cluster
from optisched.profile import default_config

EXAMPLES = Path(__file__).resolve().parents[1] / "datasets" / "examples"


def compare(example: str, better: dict[str, str]):
    state = compile_cluster(optisched.load([str(EXAMPLES / example)]))
    node_of = state.pod_node.copy()
    for name, n in better.items():
        node_of[state.pod_index[f"default/{name}"]] = state.node_index[n]
    runs = [run_greedy(state, default_config()), PlacementRun("optimal", "optimal", node_of, 0.0)]
    return build_comparison(state, default_config(), runs)


@pytest.fixture(scope="module")
def strand():
    return compare("strand-large-pod.yaml", {"api-0": "node-1", "api-1": "node-1", "api-2": "node-2",
                                             "api-3": "node-2", "report-0": "node-3", "report-1": "node-4"})


@pytest.fixture(scope="module")
def spread():
    return compare("spread-anti-affinity.yaml", {"cache-0": "a-1", "cache-1": "b-1", "web-0": "a-2", "web-1": "b-2",
                                                 "web-2": "c-1"})


def heights(container) -> list[float]:
    return [round(p.get_height(), 6) for p in container.patches]


def test_placed_by_priority_bars(strand):
    fig = strand.plot_placed_by_priority()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    pending, greedy, optimal = ax.containers
    assert heights(pending) == [4, 2]  # priority 1000, then 0
    assert heights(greedy) == [4, 0]
    assert heights(optimal) == [4, 2]


def test_utilization_bars_are_sorted_per_resource(strand):
    fig = strand.plot_utilization()
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["cpu", "memory"]
    greedy, optimal = fig.axes[0].containers
    assert heights(greedy) == [50, 50, 50, 50]
    assert heights(optimal) == [100, 100, 100, 100]


def test_fragmentation_bars_split_usable_and_fragmented(strand):
    fig = strand.plot_fragmentation()
    mem = fig.axes[1]
    g_usable, g_frag, o_usable, o_frag = mem.containers
    assert heights(g_usable) == [12, 12, 12, 12] and heights(g_frag) == [0, 0, 0, 0]  # GiB
    assert heights(o_usable) == [0, 0, 0, 0] and heights(o_frag) == [8, 8, 8, 8]


def test_spread_bars_count_matching_pods_per_domain(spread):
    fig = spread.plot_spread()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["zone-a", "zone-b", "zone-c"]
    greedy, optimal = ax.containers
    assert heights(greedy) == [1, 1, 0] and heights(optimal) == [1, 1, 1]
    assert "skew: greedy 1, optimal 0" in ax.get_title()


def test_spread_plot_says_so_when_there_is_no_constraint(strand):
    fig = strand.plot_spread()
    assert [t.get_text() for t in fig.axes[0].texts] == ["no topology spread constraints in the input"]


@pytest.mark.parametrize("plot", ["plot_utilization", "plot_fragmentation"],
                         ids=["utilization says so when no schedulable node offers a resource",
                              "fragmentation says so when no schedulable node offers a resource"])
def test_per_resource_plots_say_so_when_nothing_is_offered(plot, tmp_path):
    path = tmp_path / "cordoned.yaml"
    path.write_text(
        '{apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {unschedulable: true},\n'
        ' status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}}\n---\n'
        "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: default},\n"
        ' spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}\n')
    state = compile_cluster(optisched.load([str(path)]))
    c = build_comparison(state, default_config(), [run_greedy(state, default_config())])
    fig = getattr(c, plot)()
    assert len(fig.axes) == 1
    assert [t.get_text() for t in fig.axes[0].texts] == ["no schedulable node offers any resource"]
