"""Which tier a value belongs to, as a typed key: what it counts (its kind) and, for a placement tier, the
priority level.

The engine passes keys around; a tier's name (``placed[priority=1000]``, ``disruption``,
``objective:pack``, ``weighted:score``) is only their text at the edges: the certificate's JSON and the
progress lines (:meth:`TierKey.__str__`), and what a user or a JSON document gives back (``--weights``,
a comparison's certificates: :meth:`TierKey.parse`). Other solvers that share :class:`.tiers.TierSolver`
(minimal preemption's ``victims``) name their tiers by a kind of their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["TierKey", "TierKind"]


class TierKind(StrEnum):
    """Optimal mode's tiers, in the order they are solved (:mod:`.tier_loop`)."""

    PLACED = "placed"  # pods on a node after the batch, per priority level
    PDB_VIOLATIONS = "pdb-violations"  # PodDisruptionBudgets preemption breaks
    DISRUPTION = "disruption"  # running pods evicted or moved, by their priority's rank
    OBJECTIVE = "objective"  # a user objective (:mod:`.user_objectives`)
    SCORE = "score"  # the profile's score
    WEIGHTED = "weighted"  # --weights: one weighted objective instead of the tiers


_PLACED = re.compile(r"placed\[priority=(0|-?[1-9][0-9]*)\]")


@dataclass(frozen=True)
class TierKey:
    """A tier: ``kind`` (a :class:`TierKind`, or another solver's own), ``level`` (a placement tier's
    priority; None with ``placed`` in ``--weights``: every level), ``objective`` (a user objective's
    name; None in ``--weights``: every one) and ``part`` (a weighted run's report of the tier ``part``'s
    value in the weighted objective; None: the weighted objective itself)."""

    kind: str
    level: int | None = None
    objective: str | None = None
    part: TierKey | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", str(self.kind))  # (one text, whether a TierKind or another solver's)
        if self.level is not None and self.kind != TierKind.PLACED or \
                self.objective is not None and self.kind != TierKind.OBJECTIVE or \
                self.part is not None and self.kind != TierKind.WEIGHTED:
            raise ValueError(f"{self!r}: a level is a placement tier's, a name an objective's, a part a "
                             "weighted one's")

    @classmethod
    def placed(cls, level: int) -> TierKey:
        return cls(TierKind.PLACED, level=int(level))

    @classmethod
    def user(cls, name: str) -> TierKey:
        """The tier of the user objective ``name`` (``objective:NAME``)."""
        return cls(TierKind.OBJECTIVE, objective=name)

    @classmethod
    def weighted(cls, part: TierKey | None = None) -> TierKey:
        return cls(TierKind.WEIGHTED, part=part)

    @property
    def is_level(self) -> bool:
        """A placement tier of one priority level (``placed[priority=L]``)."""
        return self.kind == TierKind.PLACED and self.level is not None

    @property
    def base(self) -> TierKey:
        """The tier a weighted run's report is about; the key itself otherwise."""
        return self.part if self.part is not None else self

    def __str__(self) -> str:
        if self.level is not None:
            return f"placed[priority={self.level}]"
        if self.objective is not None:
            return f"objective:{self.objective}"
        if self.part is not None:
            return f"weighted:{self.part}"
        return self.kind

    @classmethod
    def parse(cls, name: str) -> TierKey:
        """The key whose text is ``name`` (``str(TierKey.parse(name)) == name``); a name of no optimal-mode
        form is a kind of its own."""
        if (m := _PLACED.fullmatch(name)) is not None:
            return cls.placed(int(m.group(1)))
        head, sep, rest = name.partition(":")
        if sep and head == TierKind.OBJECTIVE:
            return cls.user(rest)
        if sep and head == TierKind.WEIGHTED:
            return cls.weighted(cls.parse(rest))
        return cls(name)
