"""The FGD paper's policies as score plugins of a kube-scheduler profile (``FGD``, ``BestFit``, ``DotProd``,
``GpuPacking``, ``GpuClustering``, ``Random``), on the GPU state of ``Open-Gpu-Share``.

Each plugin wraps the policy of the same name in :mod:`optisched.plugins.gpu.policies` (one rule, one
place) and also chooses the devices the pod takes when it binds, as the simulator's Reserve asks the
highest-weighted score plugin (``gpuSelMethod``). FGD's typical pods are computed from every pod of the
input. Scores are final (BestFit normalizes inside its score), so ``normalize`` returns them unchanged.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ...framework import CycleState, Fidelity, Plugin, Status
from ...model.snapshot import Snapshot
from ...optimal.score_terms import encode_static
from .fgd import FragCache, typical_pods
from .policies import POLICIES, PolicyContext, policy_class
from .share_plugin import GpuShareState

if TYPE_CHECKING:
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel
    from ...optimal.tiers import Linear

__all__ = ["PolicyScore", "score_plugin"]


class PolicyScore(Plugin):
    """Score plugin running the registered policy ``policy``."""

    name: ClassVar[str]
    points = frozenset({"score"})
    policy: ClassVar[str]
    # optimal mode: each arrival earns the score its node has against the fixed pods (the policies' scores
    # change as the batch's own pods land)
    score_fidelity: ClassVar[Fidelity] = Fidelity.SURROGATE

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = snapshot.shared(GpuShareState)
        pods = self.state.pods
        typ = typical_pods([p.cpu for p in pods], [p.gpu_milli for p in pods], [p.num_gpu for p in pods],
                           ["|".join(p.spec) for p in pods])
        self.rule = policy_class(self.policy)(PolicyContext(FragCache(self.state.nodes, typ),
                                                            np.random.default_rng(0)))
        self.state.choose = self.rule.devices

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status:
        return Status()

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return self.rule.score(self.state.nodes, self.state.pods[cycle.pod], np.asarray(nodes, dtype=np.int64))

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None:
        """``weight × score(pod, node)`` against the fixed pods, per arrival."""
        encode_static(self, model, classes, weight, objective)


def score_plugin(policy: str) -> type[PolicyScore]:
    """The score plugin class of a registered policy (the registry names ``score_plugin:<Policy>``)."""
    return type(f"{policy}Score", (PolicyScore,), {"name": policy, "policy": policy})


for _name in POLICIES:
    globals()[_name] = score_plugin(_name)
