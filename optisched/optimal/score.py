"""The score tier: the profile's score plugins as objective terms, each encoded in its own module.

Each enabled score plugin that has a CP-SAT side (``encode_score``, :class:`~optisched.optimal.encoding.
EncodableScore`) adds weighted terms to one objective, maximized after the placement and disruption
tiers. kube-scheduler scores one pod at a time against the cluster as it is at that moment; a batch
objective can only approximate scores that depend on other placements or on normalization over the
feasible nodes of that moment: each plugin declares whether its terms are ``EXACT`` or a ``SURROGATE``,
and the tier is a ``SURROGATE`` when any of its plugins is. Units: :data:`.score_terms.SCORE_SCALE`
objective units per score point (kube's 0–100 per pod, times the plugin's weight).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..framework import Fidelity
from .tiers import Linear

if TYPE_CHECKING:
    from .model import BatchModel

__all__ = ["score_objective"]


def score_objective(model: BatchModel) -> tuple[Linear, dict[str, Fidelity]]:
    """(the score tier's objective, fidelity per plugin that contributed). Raises
    :class:`~.model.BuildTimeout` past the model's deadline (the tier is then left out)."""
    objective = Linear()
    fidelity: dict[str, Fidelity] = {}
    for sched, classes in model.by_profile.items():
        fw = model.frameworks[sched]
        for name in fw.score_names:
            rule = fw.score_rules[name]
            if not hasattr(rule, "encode_score"):
                continue
            model.check_time()
            rule.encode_score(model, classes, int(fw.profile.score_weights.get(name, 1)), objective)
            fidelity[name] = rule.score_fidelity
    if Fidelity.SURROGATE in fidelity.values():
        objective.fidelity = Fidelity.SURROGATE.value
    return objective, fidelity
