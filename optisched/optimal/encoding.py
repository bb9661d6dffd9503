"""The CP-SAT side of a rule: what optimal mode calls on a rule module, next to its greedy side.

Declared here, with the batch model the encodings write to, rather than in :mod:`optisched.framework`:
the framework is the vocabulary every layer shares, and must not depend on the optimal engine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from ..framework import Fidelity

if TYPE_CHECKING:
    from .classes import PodClass
    from .model import BatchModel
    from .tiers import Linear

__all__ = ["EncodableFilter", "EncodableScore"]


@runtime_checkable
class EncodableFilter(Protocol):
    """The CP-SAT side of a filter, next to its greedy side in the same module.

    ``restrict`` narrows each pod class's nodes before the model's variables exist (what the rule decides
    from the pod, the node and the pods that cannot move); ``encode_filter`` adds the constraints that
    depend on where the batch's pods go."""

    name: ClassVar[str]
    filter_fidelity: ClassVar[Fidelity]

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None: ...

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None: ...


@runtime_checkable
class EncodableScore(Protocol):
    """The CP-SAT side of a score: ``encode_score`` adds the plugin's terms, times its profile weight, to
    the score tier's objective (maximized) for ``classes``."""

    name: ClassVar[str]
    score_fidelity: ClassVar[Fidelity]

    def encode_score(self, model: BatchModel, classes: list[PodClass], weight: int, objective: Linear) -> None: ...
