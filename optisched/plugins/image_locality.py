"""ImageLocality: favour nodes that already hold the pod's images, scaled by how widely they are spread.

Upstream: ``pkg/scheduler/framework/plugins/imagelocality/image_locality.go`` (``sumImageScores``,
``calculatePriority``): per image of the pod present on the node, ``size * nodesHavingIt / allNodes``
(truncated); the sum is clamped to [23 MiB, 1000 MiB × containers] and mapped to 0..100. Not
normalized. Which images the sum counts is the release's (:data:`POD_IMAGES`):

* v1.35.4: the init and regular containers' images (:func:`container_images`);
* v1.36.2: those and the image volumes' ``spec.volumes[].image.reference`` (:func:`images_with_volumes`,
  no feature gate); the upper threshold still counts the containers only, so an image volume can lift
  a pod's score where 1.35 gives none;
* 1.37 (from kubernetes PR 138951, not verified against the release's code): the same images, and the
  threshold counts the image volumes too (:data:`THRESHOLD_COUNTS_VOLUMES`).

The batch objective is EXACT: the score depends only on the pod and the node (images do not move), so
each arrival earns the plugin's weighted score on its node.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..framework import MAX_NODE_SCORE, CycleState, Fidelity, Plugin, Status
from ..model.snapshot import Snapshot
from ..optimal.score_terms import encode_static
from ..profile.releases import DEFAULT_VERSION
from . import names

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..model.objects import Pod
    from ..optimal.classes import PodClass
    from ..optimal.model import BatchModel
    from ..optimal.tiers import Linear

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "POD_IMAGES",
    "THRESHOLD_COUNTS_VOLUMES",
    "ImageLocality",
    "container_images",
    "images_with_volumes",
    "normalized_image_name",
]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when the image has no tag (``normalizedImageName``)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def container_images(pod: Pod) -> list[str]:
    """v1.35.4's ``sumImageScores``: the init containers' images, then the regular containers'."""
    return [c.image for c in (*pod.spec.init_containers, *pod.spec.containers)]


def images_with_volumes(pod: Pod) -> list[str]:
    """v1.36.2's ``sumImageScores``: the containers' images, then each image volume's reference."""
    return [*container_images(pod), *(v.image.reference for v in pod.spec.volumes if v.image is not None)]


POD_IMAGES: dict[str, Callable[[Pod], list[str]]] = {"1.35": container_images, "1.36": images_with_volumes,
                                                     "1.37": images_with_volumes}
"""The images each release's raw score counts, by minor release."""
THRESHOLD_COUNTS_VOLUMES: frozenset[str] = frozenset({"1.37"})
"""The releases whose ``calculatePriority`` threshold counts every image source (``sumImageScores``
returns the count: init and regular containers, and image volumes)."""


def image_count(pod: Pod, with_volumes: bool) -> int:
    """The number of images the upper threshold counts: the containers', and the image volumes when
    ``with_volumes``."""
    count = len(pod.spec.init_containers) + len(pod.spec.containers)
    return count + (sum(v.image is not None for v in pod.spec.volumes) if with_volumes else 0)


class ImageLocality(Plugin):
    name = names.IMAGE_LOCALITY
    points = frozenset({"score"})

    @staticmethod
    def score_key(pod: Pod) -> tuple:
        # every release's images: a key that tells apart what any variant reads
        return tuple(images_with_volumes(pod)), len(pod.spec.init_containers) + len(pod.spec.containers)

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        version = getattr(profile, "kubernetes_version", DEFAULT_VERSION)
        self.pod_images = POD_IMAGES[version]
        self.count_volumes = version in THRESHOLD_COUNTS_VOLUMES
        state = snapshot.state
        n = state.num_nodes
        sizes: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        for i, node in enumerate(state.nodes):
            for img in node.status.images:
                for name in img.names:
                    sizes.setdefault(name, np.zeros(n, dtype=np.int64))[i] = img.size_bytes
                    present.setdefault(name, np.zeros(n, dtype=bool))[i] = True
        # scaled score per image and node: size * numNodes / totalNodes, as Go's int64(float64 * float64)
        self.scaled = {name: np.where(present[name], (s * (np.count_nonzero(present[name]) / n)).astype(np.int64), 0)
                       for name, s in sizes.items()}
        self.n = n

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        pod = cycle.pod_obj
        total = np.zeros(len(nodes), dtype=np.int64)
        for image in self.pod_images(pod):
            s = self.scaled.get(normalized_image_name(image))
            if s is not None:
                total += s[nodes]
        max_threshold = MAX_CONTAINER_THRESHOLD * image_count(pod, self.count_volumes)
        total = np.clip(total, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores

    # ------------------------------------------------------------------ CP-SAT side
    score_fidelity = Fidelity.EXACT

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """``weight × score(pod, node)`` per arrival."""
        encode_static(self, model, classes, weight, objective)
