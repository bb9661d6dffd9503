"""The facts engines read of a plugin (:class:`optisched.framework.Plugin`) are true of it."""
from __future__ import annotations

import pytest
from builders import node, pod
from test_rules import FILTER_CASES, PROFILE, run_filter

from optisched.framework import ClusterEvent, Plugin
from optisched.greedy.queue import event_interest
from optisched.profile import default_config
from optisched.profile.defaults import EXTENSION_POINTS
from optisched.registry import REGISTRY, rule_class

CLASSES = sorted({(name, side, path) for name, sides in REGISTRY.items() for side, path in sides.items()})
ADD, DELETE = ClusterEvent.ASSIGNED_POD_ADD, ClusterEvent.ASSIGNED_POD_DELETE

# the assigned-pod events of each filter's EventsToRegister, kubernetes v1.35.4
# pkg/scheduler/framework/plugins/<plugin>/*.go (a plugin absent here registers none)
UPSTREAM_EVENTS = {
    "NodeResourcesFit": {DELETE},  # noderesources/fit.go: Pod Delete (and scale-down updates, not generated)
    "NodePorts": {DELETE},  # nodeports/node_ports.go
    "PodTopologySpread": {ADD, DELETE},  # podtopologyspread/plugin.go: Pod Add|UpdatePodLabel|Delete
    "InterPodAffinity": {ADD, DELETE},  # interpodaffinity/plugin.go: Pod Add|UpdatePodLabel|Delete
    # dynamicresources.go registers ResourceClaim Add|Update: a deleted pod's claim reserved for nobody is
    # deallocated, an update its hint queues on
    "DynamicResources": {DELETE},
    # v1.36.2 nodedeclaredfeatures/nodedeclaredfeatures.go: Node Add|UpdateNodeDeclaredFeature and an update
    # of the pod itself, no assigned-pod event: NodeDeclaredFeatures is absent here
}


@pytest.mark.parametrize("name,side,path", CLASSES, ids=[f"{n} {s}" for n, s, _ in CLASSES])
def test_every_registered_rule_declares_its_facts(name, side, path):
    cls = rule_class(path)
    assert issubclass(cls, Plugin)
    assert cls.name == name
    assert cls.points and cls.points <= set(EXTENSION_POINTS)
    assert ({"preFilter", "filter"} if side == "filter" else {"score"}) & cls.points
    if cls.static:
        assert cls.placement_free, "a static filter reads no pod on the node either"


@pytest.mark.parametrize("event", list(ClusterEvent))
def test_the_queue_requeues_on_the_events_upstream_registers(event):
    assert event_interest(event) == {name for name, events in UPSTREAM_EVENTS.items() if event in events}


PROFILE_1_36 = default_config("1.36").profiles[0]
_RESTART_ALL = {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [
    {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]}
# static filters of later releases, with the release's default profile
LATER_CASES = [
    ("NodeDeclaredFeatures rejects a node lacking a feature the pod requires", "NodeDeclaredFeatures",
     [node("a").declare("RestartAllContainersOnContainerExits"), node("b"),
      pod("p").set("spec.containers", [_RESTART_ALL])], PROFILE_1_36),
]
STATIC_CASES = [(*c[:3], PROFILE) for c in FILTER_CASES
                if rule_class(REGISTRY[c[1]]["filter"]).static] + LATER_CASES


@pytest.mark.parametrize("case,plugin,objs,profile", STATIC_CASES, ids=[c[0] for c in STATIC_CASES])
def test_a_static_filter_answers_the_same_whatever_runs_on_the_nodes(case, plugin, objs, profile):
    """Greedy mode caches a static filter per pod shape and preemption never re-runs it: pods bound to
    every node (labelled, with requests, ports and anti-affinity) must not change its answer."""
    nodes = [o["metadata"]["name"] for o in objs if o.get("kind") == "Node"]
    crowd = [pod(f"crowd-{n}").label(app="crowd").apart("crowd").on(n).set("spec.containers", [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
         "ports": [{"containerPort": 80, "hostPort": 80}]}]) for n in nodes]
    assert run_filter(plugin, [*objs, *crowd], profile=profile) == run_filter(plugin, objs, profile=profile)
