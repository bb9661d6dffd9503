"""ImageLocality per release: v1.36.2's TestImageLocalityPriority table (image volumes count in the raw
score, not in the threshold), the same rows under v1.35.4's rule, and the CP-SAT coefficients following
the release's greedy score."""

from __future__ import annotations

import numpy as np
import pytest
from builders import node, pod, state_of
from hypothesis import given, settings
from hypothesis import strategies as st
from test_optimal_score import config, score_model
from test_rules import run_score

from optisched.framework import CycleState
from optisched.greedy.framework_runner import Framework
from optisched.model.snapshot import Snapshot
from optisched.optimal.score_terms import SCORE_SCALE
from optisched.plugins.image_locality import POD_IMAGES, normalized_image_name
from optisched.profile import default_config, parse_config
from optisched.profile.releases import UNVERIFIED
from optisched.profile.releases import VERSIONS as ALL_VERSIONS

MB = 1024 * 1024
# upstream's table is v1.36.2's (and v1.35.4's source): the releases read from their code
VERSIONS = tuple(v for v in ALL_VERSIONS if v not in UNVERIFIED)
PROFILES = {v: default_config(v).profiles[0] for v in ALL_VERSIONS}


def image_node(name: str, *images: tuple[list[str], int]) -> dict:
    n = node(name)
    n["status"]["images"] = [{"names": names, "sizeBytes": size * MB} for names, size in images]
    return n


def spec_pod(images: list[str], init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> dict:
    p = pod("p").set("spec.containers", [{"name": f"c{i}", "image": im} for i, im in enumerate(images)])
    if init:
        p = p.set("spec.initContainers", [{"name": f"i{i}", "image": im} for i, im in enumerate(init)])
    if volumes:
        p = p.set(
            "spec.volumes", [{"name": f"v{i}", "image": {"reference": r}} for i, r in enumerate(volumes)]
        )
    return p


# the nodes of the upstream table (sizes in MiB)
NODE_40_300_2000 = (
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
NODE_250_10 = ((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
NODE_600_40_900 = ((["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900))
NODE_300_600_900 = ((["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900))
NODE_4000_30 = ((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
NODE_20_30_40 = ((["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))

# v1.36.2 pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go, TestImageLocalityPriority:
# (name, pod, nodes, expected scores under 1.36, under 1.35). The rows without an image volume are the
# same in both releases; the image volume row's 1.35 scores follow v1.35.4's sumImageScores, which reads
# the containers only (gcr.io/30 on one node of two: 15 MiB, under the 23 MiB threshold).
UPSTREAM = [
    (
        "two images spread on two nodes, prefer the larger image one",
        spec_pod(["gcr.io/40", "gcr.io/250"]),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        spec_pod(["gcr.io/40", "gcr.io/300"]),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        spec_pod(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10],
        [100, 0],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        spec_pod(["gcr.io/10", "gcr.io/4000"]),
        [NODE_4000_30, NODE_250_10, ()],
        [66, 0, 0],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        spec_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        [NODE_600_40_900, NODE_300_600_900, ()],
        [32, 36, 0],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        spec_pod(["gcr.io/30", "gcr.io/40"]),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
        [1, 0],
    ),
    (
        "pod with ImageVolume",
        spec_pod(["gcr.io/30"], volumes=("gcr.io/300",)),
        [NODE_300_600_900, NODE_4000_30],
        [12, 0],
        [0, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        spec_pod(["gcr.io/30"], init=("gcr.io/300",)),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
        [6, 0],
    ),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("p", "nodes", "v136", "v135"), [c[1:] for c in UPSTREAM], ids=[c[0] for c in UPSTREAM]
)
def test_upstream_image_locality_table(
    version: str, p: dict, nodes: list, v136: list[int], v135: list[int]
) -> None:
    objs = [image_node(f"node{i + 1}", *imgs) for i, imgs in enumerate(nodes)] + [p]
    got = run_score("ImageLocality", objs, profile=PROFILES[version])
    want = v136 if version == "1.36" else v135
    assert got == {f"node{i + 1}": (w, w) for i, w in enumerate(want)}


# 1.37 (kubernetes PR 138951): the threshold counts each image volume too; the rows of upstream's table
# whose pod has no image volume score as in 1.36, and an image volume's pod gets its share of a larger
# threshold: 150 MB of gcr.io/300 (on one node of two) against 1000 MB x 2 images -> 100 * 127 / 1977 = 6
@pytest.mark.parametrize(
    ("p", "nodes", "v136", "v135"), [c[1:] for c in UPSTREAM], ids=[c[0] for c in UPSTREAM]
)
def test_1_37s_threshold_counts_image_volumes(p: dict, nodes: list, v136: list[int], v135: list[int]) -> None:
    objs = [image_node(f"node{i + 1}", *imgs) for i, imgs in enumerate(nodes)] + [p]
    got = run_score("ImageLocality", objs, profile=PROFILES["1.37"])
    volumes = sum("image" in v for v in p["spec"].get("volumes", []))
    want = v136 if not volumes else [6, 0]
    assert volumes <= 1 and got == {f"node{i + 1}": (w, w) for i, w in enumerate(want)}


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        (
            "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2",
            "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2",
        ),
    ],
    ids=["add :latest postfix 1", "add :latest postfix 2", "keep it as is 1", "keep it as is 2"],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_every_release_names_the_images_it_counts() -> None:
    assert set(POD_IMAGES) == set(ALL_VERSIONS)


def test_an_image_volume_counts_once_per_volume_and_not_in_the_threshold() -> None:
    """Two volumes of one image add its scaled size twice (upstream loops over volumes, not a set), and
    the threshold stays 1000 MiB for the one container: 2 × 500 MiB reaches it under 1.36."""
    objs = [image_node("a", (["big:1"], 500)), spec_pod(["small:1"], volumes=("big:1", "big:1"))]
    assert run_score("ImageLocality", objs, profile=PROFILES["1.36"]) == {"a": (100, 100)}
    assert run_score("ImageLocality", objs, profile=PROFILES["1.35"]) == {"a": (0, 0)}


@pytest.mark.parametrize("version", VERSIONS)
def test_cpsat_coefficients_follow_the_release(version: str) -> None:
    """Optimal mode's EXACT encoding gives each node the greedy weighted score of the run's release."""
    objs = [
        image_node("n1", (["vol:1"], 800)),
        image_node("n2", (["app:1"], 800)),
        node("n3"),
        spec_pod(["app:1"], volumes=("vol:1",)),
    ]
    state = state_of(*objs)
    base = config("ImageLocality", weights={"ImageLocality": 2})
    cfg = parse_config(base.document, base.source, version)
    model, objective = score_model(state, cfg)
    fw = Framework(Snapshot(state), cfg.profiles[0])
    greedy = fw.score(CycleState(state.pending[0], fw.snapshot, fw.profile), np.arange(3)).total
    cv = model.vars[0]
    coef = {v.Index(): k for v, k in zip(objective.vars, objective.coefs)}
    got = [coef.get(v.Index(), 0) for v in cv.arr_vars]
    assert got == [SCORE_SCALE * int(greedy[n]) for n in cv.arr_nodes.tolist()]
    # 800 MiB on one node of three is 266 MiB: n1 scores only when the volume counts
    n1 = cv.arr_nodes.tolist().index(0)
    assert (got[n1] > 0) == (version == "1.36")


IMAGES = ["a:1", "b:1", "c:1", "d:1"]


@settings(max_examples=40, deadline=None)
@given(
    held=st.lists(st.sets(st.sampled_from(IMAGES)), min_size=1, max_size=4),
    sizes=st.lists(st.integers(min_value=1, max_value=3000), min_size=len(IMAGES), max_size=len(IMAGES)),
    containers=st.lists(st.sampled_from(IMAGES), min_size=1, max_size=3),
    volumes=st.lists(st.sampled_from(IMAGES), max_size=3),
)
def test_image_volumes_only_add_to_the_score(held, sizes, containers, volumes) -> None:
    """Under 1.36 a node scores at least what it scores under 1.35, and the same when the pod has no image
    volume: the volumes add to the sum, the threshold does not move."""
    size = dict(zip(IMAGES, sizes))
    nodes = [image_node(f"n{i}", *(([im], size[im]) for im in sorted(imgs))) for i, imgs in enumerate(held)]
    objs = [*nodes, spec_pod(containers, volumes=tuple(volumes))]
    old = run_score("ImageLocality", objs, profile=PROFILES["1.35"])
    new = run_score("ImageLocality", objs, profile=PROFILES["1.36"])
    assert all(new[n][0] >= old[n][0] for n in old)
    if not volumes:
        assert new == old
