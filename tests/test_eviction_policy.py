"""The eviction policy: which running pods may leave their node, and why the others stay."""
from __future__ import annotations

import pytest
from builders import node, pod, state_of

from optisched.policy.eviction import EvictionPolicy, Keep

OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}]


def _owned(name: str):  # type: ignore[no-untyped-def]
    return pod(name).set("metadata.ownerReferences", OWNER).on("n")


def _ann(name: str, value: str = "true"):  # type: ignore[no-untyped-def]
    return _owned(name).set("metadata.annotations", {"karpenter.sh/do-not-disrupt": value})


CASES = [
    ("a ReplicaSet pod may leave", _owned("p"), EvictionPolicy(), None),
    ("a terminating pod never leaves", _owned("p").set("metadata.deletionTimestamp", "2024-01-01T00:00:00Z"),
     EvictionPolicy(evict_protected=True, evict_bare_pods=True, evict_local_storage=True), Keep.TERMINATING),
    ("a mirror pod never leaves", _owned("p").set("metadata.annotations", {"kubernetes.io/config.mirror": "x"}),
     EvictionPolicy(evict_bare_pods=True), Keep.STATIC),
    ("a static pod from a file never leaves", _owned("p").set("metadata.annotations", {"kubernetes.io/config.source": "file"}),
     EvictionPolicy(), Keep.STATIC),
    ("a pod owned by its Node never leaves",
     pod("p").set("metadata.ownerReferences", [{"kind": "Node", "name": "n", "controller": True}]).on("n"),
     EvictionPolicy(), Keep.STATIC),
    ("a DaemonSet pod never leaves", pod("p").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "ds"}]).on("n"),
     EvictionPolicy(evict_protected=True), Keep.DAEMONSET),
    ("the evict annotation does not move a DaemonSet pod",
     pod("p").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "ds"}])
     .set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": ""}).on("n"), EvictionPolicy(), Keep.DAEMONSET),
    ("a pod with a PersistentVolumeClaim never leaves",
     _owned("p").set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "data-0"}}]),
     EvictionPolicy(evict_local_storage=True), Keep.PVC),
    ("karpenter do-not-disrupt stays by default", _ann("p"), EvictionPolicy(),
     Keep.PROTECTED),
    ("do-not-disrupt leaves with --evict-protected", _ann("p"),
     EvictionPolicy(evict_protected=True), None),
    ("do-not-disrupt false is no protection", _ann("p", "false"), EvictionPolicy(), None),
    ("safe-to-evict false stays by default",
     _owned("p").set("metadata.annotations", {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}),
     EvictionPolicy(), Keep.PROTECTED),
    ("an emptyDir pod stays by default", _owned("p").set("spec.volumes", [{"name": "t", "emptyDir": {}}]),
     EvictionPolicy(), Keep.LOCAL_STORAGE),
    ("a hostPath pod stays by default", _owned("p").set("spec.volumes", [{"name": "t", "hostPath": {"path": "/x"}}]),
     EvictionPolicy(), Keep.LOCAL_STORAGE),
    ("an emptyDir pod leaves with --evict-local-storage", _owned("p").set("spec.volumes", [{"name": "t", "emptyDir": {}}]),
     EvictionPolicy(evict_local_storage=True), None),
    ("a bare pod stays by default", pod("p").on("n"), EvictionPolicy(), Keep.BARE),
    ("a bare pod leaves with --evict-bare-pods", pod("p").on("n"), EvictionPolicy(evict_bare_pods=True), None),
    ("a system-critical pod stays by default", _owned("p").priority(2_000_000_000), EvictionPolicy(), Keep.CRITICAL),
    ("a system-critical pod leaves when allowed", _owned("p").priority(2_000_001_000),
     EvictionPolicy(evict_system_critical=True), None),
    ("priority just below system-critical may leave", _owned("p").priority(1_999_999_999), EvictionPolicy(), None),
    ("the evict annotation lets a bare emptyDir pod leave",
     pod("p").set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": "true"})
     .set("spec.volumes", [{"name": "t", "emptyDir": {}}]).on("n"), EvictionPolicy(), None),
    ("the evict annotation does not move a PVC pod",
     _owned("p").set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": "true"})
     .set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]), EvictionPolicy(), Keep.PVC),
    ("the first reason is reported: a bare emptyDir pod is kept for its storage",
     pod("p").set("spec.volumes", [{"name": "t", "emptyDir": {}}]).on("n"), EvictionPolicy(), Keep.LOCAL_STORAGE),
]


@pytest.mark.parametrize("obj,policy,reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_who_may_leave(obj, policy, reason):
    verdicts = _judged(obj, policy, reason)
    assert verdicts.kept([0]) == ({} if reason is None else {"default/p": reason})


def _judged(obj, policy, reason):  # type: ignore[no-untyped-def]
    """The verdicts on a one-pod cluster, checked for the pod's reason and mask."""
    verdicts = policy.verdicts(state_of(node("n"), obj))
    assert verdicts.why(0) == reason
    assert bool(verdicts.may_leave[0]) == (reason is None)
    return verdicts


def test_verdicts_are_vectorized_over_pods():
    """One call judges every pod row; the mask lines up with the rows."""
    state = state_of(node("n"), _owned("a"), pod("b").on("n"), _ann("c"))
    v = EvictionPolicy().verdicts(state)
    assert v.may_leave.tolist() == [True, False, False]
    assert v.kept([0, 1, 2]) == {"default/b": Keep.BARE, "default/c": Keep.PROTECTED}


def test_the_summary_names_pods_with_a_claim_and_counts_the_others():
    """--movable on a cluster with a claimed pod, a DaemonSet pod and a bare pod: the certificate's notes
    name the claimed pod and count the others, per reason; none of them moves."""
    from optisched.optimal.solve import OptimalOptions, solve_optimal
    from optisched.profile import default_config

    objs = [node("n", cpu="1"), node("n2", cpu="2"),
            _owned("db-0").req(cpu="1").set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}]),
            pod("ds").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "ds"}]).on("n2"),
            pod("bare").on("n2"), pod("p").req(cpu="1")]
    state = state_of(*objs)
    r = solve_optimal(state, default_config(), OptimalOptions(time_limit=3, movable=True))
    notes = r.certificate.notes
    assert any(n.startswith("warning: 1 pod(s) with a PersistentVolumeClaim stay on their node") and "default/db-0" in n
               for n in notes)
    assert "1 running pod(s) stay on their node: DaemonSet pod" in notes
    assert any(n.startswith("1 running pod(s) stay on their node: has no controller") for n in notes)
    assert (r.node_of[state.pod_node >= 0] == state.pod_node[state.pod_node >= 0]).all()


def _in(ns: str, name: str, **labels: str):  # type: ignore[no-untyped-def]
    b = _owned(name).set("metadata.namespace", ns)
    return b.set("metadata.labels", labels) if labels else b


SCOPE = [
    ("a pod outside --namespaces stays", _in("kube-system", "p"), EvictionPolicy(namespaces=("team",)), Keep.NAMESPACE),
    ("a pod inside --namespaces may leave", _in("team", "p"), EvictionPolicy(namespaces=("team",)), None),
    ("a pod of an excluded namespace stays", _in("team", "p"), EvictionPolicy(exclude_namespaces=("team",)),
     Keep.NAMESPACE),
    ("the evict annotation does not lift the namespace narrowing",
     _in("x", "p").set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": ""}),
     EvictionPolicy(namespaces=("team",)), Keep.NAMESPACE),
    ("a pod the label selector does not match stays", _in("team", "p", app="db"), EvictionPolicy(selector="app=web"),
     Keep.UNSELECTED),
    ("a pod the label selector matches may leave", _in("team", "p", app="web"), EvictionPolicy(selector="app=web"), None),
    ("the evict annotation lifts the label selector, as upstream's Filter returns early",
     _in("team", "p", app="db").set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": ""}),
     EvictionPolicy(selector="app=web"), None),
    ("a pod a re-plan pins stays", _in("team", "p"), EvictionPolicy(stay=frozenset({"team/p"})), Keep.STAGED),
    ("the evict annotation does not lift a re-plan's pin",
     _in("team", "p").set("metadata.annotations", {"descheduler.alpha.kubernetes.io/evict": ""}),
     EvictionPolicy(stay=frozenset({"team/p"})), Keep.STAGED),
    ("a pod another pin names may leave", _in("team", "p"), EvictionPolicy(stay=frozenset({"team/q"})), None),
]


@pytest.mark.parametrize("obj,policy,reason", [c[1:] for c in SCOPE], ids=[c[0] for c in SCOPE])
def test_namespaces_and_selector_narrow_who_may_leave(obj, policy, reason):
    _judged(obj, policy, reason)


def test_node_bound_kinds_are_one_rule_for_replays_and_policies():
    """The replay's kept pods and the policy's never-leaving kinds come from the same helper."""
    from optisched.comparison.replay import stays_reason
    from optisched.policy.eviction import node_bound

    ds = pod("p").set("metadata.ownerReferences", [{"kind": "DaemonSet", "name": "ds"}]).on("n")
    st = state_of(node("n"), ds)
    assert node_bound(st.pods[0]) == Keep.DAEMONSET == EvictionPolicy(evict_bare_pods=True).verdicts(st).why(0)
    assert stays_reason(st.pods[0], {"default-scheduler"}) == Keep.DAEMONSET.value


def test_a_pod_with_a_claim_may_leave_when_the_input_describes_its_volume():
    """With PersistentVolumes, claims or classes in the input the volume rules hold a moved pod to its
    volume's nodes, so the claim no longer keeps it in place; without them it stays (the rules skip)."""
    from storage_builders import pv, pvc

    claimed = _owned("p").set("spec.volumes", [{"name": "d", "persistentVolumeClaim": {"claimName": "data-0"}}])
    assert EvictionPolicy().verdicts(state_of(node("n"), claimed)).why(0) == Keep.PVC
    described = state_of(node("n"), claimed, pv("vol-1").claimed("data-0"), pvc("data-0").bound("vol-1"))
    v = EvictionPolicy().verdicts(described)
    assert v.why(described.pod_index["default/p"]) is None
