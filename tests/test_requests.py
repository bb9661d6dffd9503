"""Effective requests as kube-scheduler computes them (resource.PodRequests, CalculateResource), per
release."""
import pytest
from builders import node, pod, state_of
from hypothesis import given, settings
from hypothesis import strategies as st

MI = 2**20

CASES = [
    ("one container", pod("p").req(cpu="500m", memory="1Gi"), {"cpu": 500, "memory": 1024 * MI}, (500, 1024 * MI)),
    ("containers are summed", pod("p").req(cpu="500m").container({"cpu": "250m", "memory": "100Mi"}),
     {"cpu": 750, "memory": 100 * MI}, (750, 300 * MI)),
    ("limits become requests when requests are missing", pod("p").lim(cpu="1", memory="2Gi"),
     {"cpu": 1000, "memory": 2048 * MI}, (1000, 2048 * MI)),
    ("an explicit request wins over the limit", pod("p").req(cpu="200m").lim(cpu="1"), {"cpu": 200}, (200, 200 * MI)),
    ("best-effort pod requests nothing but scores as 100m/200Mi", pod("p"), {}, (100, 200 * MI)),
    ("an init container larger than the sum sets the max", pod("p").req(cpu="500m").init({"cpu": "2"}),
     {"cpu": 2000}, (2000, 200 * MI)),
    ("a smaller init container changes nothing", pod("p").req(cpu="500m", memory="1Gi").init({"cpu": "100m"}),
     {"cpu": 500, "memory": 1024 * MI}, (500, 1024 * MI)),
    ("a sidecar adds to the sum", pod("p").req(cpu="500m", memory="64Mi").init({"cpu": "100m", "memory": "64Mi"},
                                                                                 sidecar=True),
     {"cpu": 600, "memory": 128 * MI}, (600, 128 * MI)),
    ("an init container after a sidecar runs beside it",
     pod("p").req(cpu="100m", memory="1Mi").init({"cpu": "200m", "memory": "1Mi"}, sidecar=True)
     .init({"cpu": "1", "memory": "1Mi"}),
     {"cpu": 1200, "memory": 2 * MI}, (1200, 2 * MI)),
    ("overhead is added", pod("p").req(cpu="500m", memory="1Gi").overhead(cpu="250m", memory="120Mi"),
     {"cpu": 750, "memory": 1144 * MI}, (750, 1144 * MI)),
    ("pod-level requests replace the container sum",
     pod("p").req(cpu="100m", memory="1Gi").container({"cpu": "100m"}).pod_level(cpu="1"),
     {"cpu": 1000, "memory": 1024 * MI}, (1000, 1024 * MI)),
    ("extended resources count", pod("p").req(cpu="1").lim(nvidia_gpu="2"), {"cpu": 1000, "nvidia.com/gpu": 2},
     (1000, 200 * MI)),
    ("fractional millicores round up once, after summing",
     pod("p").req(cpu="0.0004").container({"cpu": "0.0004"}), {"cpu": 1}, (1, 400 * MI)),
    ("an explicit zero is kept for scoring", pod("p").req(cpu="0", memory="0"), {}, (0, 0)),
]


@pytest.mark.parametrize("case,builder,want,nonzero", CASES, ids=[c[0] for c in CASES])
def test_effective_requests(case, builder, want, nonzero):
    state = state_of(node("n1"), builder)
    row = state.pod_index["default/p"]
    got = {r: int(state.pod_requests[row, j]) for j, r in enumerate(state.resources)
           if state.pod_requests[row, j] and r != "pods"}
    assert got == want
    assert tuple(int(x) for x in state.pod_nonzero[row]) == nonzero


# ----------------------------------------------------------------------------- in-place resize, per release
def requests_of(p, release: str) -> dict[str, int]:
    from optisched.model.loader import cluster_from_objects
    from optisched.model.state import compile_cluster

    state = compile_cluster(cluster_from_objects([dict(node("n1")), dict(p)]), release)
    row = state.pod_index["default/p"]
    return {r: int(state.pod_requests[row, j]) for j, r in enumerate(state.resources)
            if state.pod_requests[row, j] and r != "pods"}


def one(name: str = "container-1", **req: str):
    req = {k.replace("_", "-"): v for k, v in req.items()}
    return pod("p").set("spec.containers", [{"name": name, "image": "app:1", "resources": {"requests": req}}])


def sidecar(**req: str):
    return one("container-1", cpu="0").set("spec.initContainers", [
        {"name": "restartable-init-1", "image": "init:1", "restartPolicy": "Always",
         "resources": {"requests": req}}])


G = 10**9
M = 10**6
# v1.36.2 component-helpers/resource/helpers_test.go, TestPodResourceRequests, the rows with
# UseStatusResources true (the scheduler always passes it: InPlacePodVerticalScaling is locked on; v1.35.4's
# helpers.go differs only by the DRA claims, so they hold for both), then rows read from helpers.go:
# (name, pod, requests under 1.35, under 1.36)
RESIZE = [
    ("resized, infeasible",
     one(cpu="4").status_resources("container-1", {"cpu": "2"}).resize_pending(),
     {"cpu": 2000}, {"cpu": 2000}),
    ("resized, infeasible & in-progress",
     one(cpu="6").status_resources("container-1", {"cpu": "2"}, allocated={"cpu": "4"}).resize_pending(),
     {"cpu": 4000}, {"cpu": 4000}),
    ("resized, no resize status",
     one(cpu="4").status_resources("container-1", {"cpu": "2"}), {"cpu": 4000}, {"cpu": 4000}),
    ("resized: per-resource 3-way maximum",
     one(cpu="30m", memory="20M", ephemeral_storage="10G").status_resources(
         "container-1", {"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
         allocated={"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"}),
     {"cpu": 30, "memory": 30 * M, "ephemeral-storage": 30 * G},
     {"cpu": 30, "memory": 30 * M, "ephemeral-storage": 30 * G}),
    ("resized, restartable init container, infeasible",
     sidecar(cpu="4").status_resources("restartable-init-1", {"cpu": "2"}, init=True).resize_pending(),
     {"cpu": 2000}, {"cpu": 2000}),
    ("resized, restartable init container, no resize status",
     sidecar(cpu="4").status_resources("restartable-init-1", {"cpu": "2"}, init=True),
     {"cpu": 4000}, {"cpu": 4000}),
    # from helpers.go
    ("a resize up in progress: the actuated requests count while the spec is lower",
     one(cpu="1").status_resources("container-1", {"cpu": "3"}), {"cpu": 3000}, {"cpu": 3000}),
    ("allocated but not yet actuated counts too",
     one(cpu="1").status_resources("container-1", {"cpu": "1"}, allocated={"cpu": "2"}),
     {"cpu": 2000}, {"cpu": 2000}),
    ("a status without resources leaves the spec alone (allocatedResources alone is not read)",
     one(cpu="1").status_resources("container-1", None, allocated={"cpu": "3"}),
     {"cpu": 1000}, {"cpu": 1000}),
    ("Deferred is not Infeasible: the spec stays in the maximum",
     one(cpu="4").status_resources("container-1", {"cpu": "2"}).resize_pending("Deferred"), {"cpu": 4000},
     {"cpu": 4000}),
    ("a status matches its container by name",
     one(cpu="1").status_resources("other", {"cpu": "3"}), {"cpu": 1000}, {"cpu": 1000}),
    ("a regular init container's status is not read",
     one(cpu="100m").set("spec.initContainers", [{"name": "init-1", "image": "i", "resources": {
         "requests": {"cpu": "1"}}}]).status_resources("init-1", {"cpu": "3"}, init=True),
     {"cpu": 1000}, {"cpu": 1000}),
    ("a resized sidecar is carried into the init containers after it",
     sidecar(cpu="1").status_resources("restartable-init-1", {"cpu": "2"}, init=True).set(
         "spec.initContainers", [{"name": "restartable-init-1", "image": "i", "restartPolicy": "Always",
                                  "resources": {"requests": {"cpu": "1"}}},
                                 {"name": "init-2", "image": "i", "resources": {"requests": {"cpu": "1"}}}]),
     {"cpu": 3000}, {"cpu": 3000}),
    ("pod-level requests: 1.36 takes the maximum with status.resources and allocatedResources",
     one(cpu="100m").pod_level(cpu="1", memory="1Gi").pod_status_resources({"cpu": "2"}, {"memory": "2Gi"}),
     {"cpu": 1000, "memory": 1024 * MI}, {"cpu": 2000, "memory": 2048 * MI}),
    ("pod-level, infeasible: 1.36 leaves the spec out (a resource neither status reports is 0)",
     one(cpu="100m").pod_level(cpu="4", memory="1Gi").pod_status_resources({"cpu": "2"}).resize_pending(),
     {"cpu": 4000, "memory": 1024 * MI}, {"cpu": 2000}),
    ("pod-level: allocatedResources without status.resources is not read",
     one(cpu="100m").pod_level(cpu="1").pod_status_resources(None, {"cpu": "3"}),
     {"cpu": 1000}, {"cpu": 1000}),
    ("pod-level: a status resource the spec does not set at pod level is not added",
     one(cpu="100m", memory="64Mi").pod_level(cpu="1").pod_status_resources({"cpu": "1", "memory": "1Gi"}),
     {"cpu": 1000, "memory": 64 * MI}, {"cpu": 1000, "memory": 64 * MI}),
]


@pytest.mark.parametrize(("builder", "v135", "v136"), [c[1:] for c in RESIZE], ids=[c[0] for c in RESIZE])
def test_requests_of_a_pod_being_resized(builder, v135, v136):
    assert requests_of(builder, "1.35") == v135
    assert requests_of(builder, "1.36") == v136


def test_non_zero_requests_of_a_resized_pod():
    """Scoring's 100m/200Mi defaults fill only what neither the spec nor the status sets."""
    from optisched.model.objects import Pod
    from optisched.model.requests import RELEASE_REQUESTS

    p = Pod.model_validate(dict(pod("p").status_resources("c0", {"memory": "1Gi"})))
    assert RELEASE_REQUESTS["1.35"].non_zero(p) == (100, 1024 * MI)
    lvl = Pod.model_validate(dict(one(cpu="100m").pod_level(memory="1Gi")
                                  .pod_status_resources({"memory": "2Gi"})))
    assert RELEASE_REQUESTS["1.35"].non_zero(lvl) == (100, 1024 * MI)
    assert RELEASE_REQUESTS["1.36"].non_zero(lvl) == (100, 2048 * MI)


def test_every_release_has_its_requests():
    from optisched.model.requests import RELEASE_REQUESTS
    from optisched.profile.releases import VERSIONS

    assert set(RELEASE_REQUESTS) == set(VERSIONS)


def test_pods_of_one_template_share_requests_unless_one_is_resized():
    state = state_of(node("n1"), pod("a").req(cpu="1"),
                     pod("b").req(cpu="1").status_resources("c0", {"cpu": "2"}), pod("c").req(cpu="1"))
    cpu = state.resource_col("cpu")
    got = [int(state.pod_requests[state.pod_index[f"default/{n}"], cpu]) for n in "abc"]
    assert got == [1000, 2000, 1000]


@pytest.mark.parametrize(("release", "lands"), [("1.35", True), ("1.36", False)])
def test_a_pod_level_resize_in_progress_changes_the_fit(release, lands):
    """A running pod whose pod-level cpu is being resized down from 3 to 1 still holds 3 under 1.36, so a
    2-cpu pod no longer fits its 4-cpu node; 1.35 counts the pod-level spec alone."""
    import optisched
    from optisched.model.loader import cluster_from_objects

    objs = [node("n1", cpu="4"), one(cpu="100m").set("metadata.name", "running").on("n1").pod_level(cpu="1")
            .pod_status_resources({"cpu": "3"}, {"cpu": "1"}), pod("p").req(cpu="2")]
    cluster = cluster_from_objects([dict(o) for o in objs])
    placed = optisched.schedule(cluster, kubernetes_version=release).placements()["default/p"]
    assert (placed == "n1") == lands


@pytest.mark.parametrize("release", ["1.35", "1.36"])
def test_a_container_resize_in_progress_changes_the_fit_in_both_releases(release):
    """The greedy scheduler, given a state compiled for another release, follows its profile's."""
    from optisched.greedy.scheduler import GreedyScheduler
    from optisched.profile import default_config

    running = pod("running").req(cpu="1").on("n1")
    resized = pod("running").req(cpu="1").on("n1").status_resources("c0", {"cpu": "3"})
    for before, lands in ((running, True), (resized, False)):
        state = state_of(node("n1", cpu="4"), before, pod("p").req(cpu="2"))
        res = GreedyScheduler(state, default_config(release)).run()
        assert (res.placements()["default/p"] == "n1") == lands


MILLI = st.integers(min_value=0, max_value=8000)


@settings(max_examples=60, deadline=None)
@given(spec=MILLI, actuated=MILLI, allocated=MILLI, infeasible=st.booleans(), restartable=st.booleans())
def test_a_resized_container_requests_the_largest_of_its_three_views(spec, actuated, allocated, infeasible,
                                                                        restartable):
    """In both releases: max(spec, actuated, allocated), the spec left out while the resize is infeasible,
    for a regular container and a restartable init container alike."""
    name = "restartable-init-1" if restartable else "container-1"
    builder = (sidecar(cpu=f"{spec}m") if restartable else one(cpu=f"{spec}m")).status_resources(
        name, {"cpu": f"{actuated}m"}, allocated={"cpu": f"{allocated}m"}, init=restartable)
    if infeasible:
        builder = builder.resize_pending()
    want = max(actuated, allocated) if infeasible else max(spec, actuated, allocated)
    for release in ("1.35", "1.36"):
        assert requests_of(builder, release).get("cpu", 0) == want


@settings(max_examples=60, deadline=None)
@given(spec=MILLI.filter(bool), actuated=MILLI, allocated=MILLI, infeasible=st.booleans())
def test_pod_level_requests_follow_the_status_in_1_36_only(spec, actuated, allocated, infeasible):
    builder = one(cpu="1m").pod_level(cpu=f"{spec}m").pod_status_resources({"cpu": f"{actuated}m"},
                                                                          {"cpu": f"{allocated}m"})
    if infeasible:
        builder = builder.resize_pending()
    assert requests_of(builder, "1.35")["cpu"] == spec
    want = max(actuated, allocated) if infeasible else max(spec, actuated, allocated)
    assert requests_of(builder, "1.36").get("cpu", 0) == want


def test_a_pod_taken_off_its_node_by_a_replay_requests_its_spec_again():
    """compare --replay unbinds running pods: a pod being resized comes back pending without its status,
    as the pod its controller would re-create."""
    from optisched.comparison.replay import prepare_replay

    state = state_of(node("n1", cpu="4"), pod("r").req(cpu="1").on("n1").status_resources("c0", {"cpu": "3"})
                     .resize_pending("Deferred"))
    cpu = state.resource_col("cpu")
    assert int(state.pod_requests[state.pod_index["default/r"], cpu]) == 3000
    replay = prepare_replay(state.cluster, ["default-scheduler"])
    row = replay.state.pod_index["default/r"]
    assert int(replay.state.pod_requests[row, cpu]) == 1000
    assert replay.state.pods[row].status.conditions == []


def test_optimal_mode_keeps_a_pod_being_resized_out_of_its_replica_set_s_class():
    """Pods of one template form one class in the batch model, which counts them with one request: the
    one being resized requests more, so it is a class of its own."""
    from optisched.optimal.classes import build_batch
    from optisched.profile import default_config

    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]
    objs = [node("n1", cpu="8")] + [pod(n).req(cpu="1").set("metadata.ownerReferences", owner).on("n1")
                                    for n in ("a", "b", "c")]
    objs[2] = objs[2].status_resources("c0", {"cpu": "3"})
    state = state_of(*objs)
    batch = build_batch(state, default_config(), movable=True)
    cpu = state.resource_col("cpu")
    groups = sorted(sorted(state.pods[r].metadata.name for rows in c.running.values() for r in rows)
                    for c in batch.classes)
    assert groups == [["a", "c"], ["b"]]
    assert sorted(int(state.pod_requests[c.rep, cpu]) for c in batch.classes) == [1000, 3000]


# 1.37 (kubernetes PR 140047, from its text and issue 140046's example): the spec's, the allocated and the
# actual requests are each summed over the containers, and the pod requests the greatest sum
RESIZE_1_37 = [
    ("the issue's two containers: desired 1+2, allocated 2+1 -> 3 cores, not 2+2",
     lambda: pod("p").req(cpu="1").container({"cpu": "2"})
     .status_resources("c0", requests={"cpu": "2"}, allocated={"cpu": "2"})
     .status_resources("c1", requests={"cpu": "1"}, allocated={"cpu": "1"}),
     4000, 3000),
    # 1.36 reads a status only with its resources (c1's allocated 2 is ignored): 3 + 1; 1.37's actual view
    # is c0's 3 and c1's allocated 2
    ("actual falls back to allocated, allocated to desired, per container",
     lambda: pod("p").req(cpu="1").container({"cpu": "1"})
     .status_resources("c0", requests={"cpu": "3"}).status_resources("c1", allocated={"cpu": "2"}),
     4000, 5000),
    ("an infeasible resize leaves the spec's sum out",
     lambda: pod("p").req(cpu="4").container({"cpu": "4"}).resize_pending("Infeasible")
     .status_resources("c0", requests={"cpu": "1"}, allocated={"cpu": "1"})
     .status_resources("c1", requests={"cpu": "1"}, allocated={"cpu": "1"}),
     2000, 2000),
]


@pytest.mark.parametrize("case,build,cpu_1_36,cpu_1_37", RESIZE_1_37, ids=[c[0] for c in RESIZE_1_37])
def test_1_37_takes_the_greatest_of_each_views_sum(case, build, cpu_1_36, cpu_1_37):
    assert requests_of(build(), "1.36")["cpu"] == cpu_1_36
    assert requests_of(build(), "1.37")["cpu"] == cpu_1_37
