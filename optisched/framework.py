"""The scheduling framework's vocabulary: status codes, results and the rule protocols.

Engines know these protocols, not the rules. A plugin (``plugins/``) implements them over numpy
vectors: a filter answers for all evaluated nodes at once, a score returns an int64 vector. The CP-SAT side of a
rule is declared with the batch model it writes to, in :mod:`optisched.optimal.encoding`.
Mirrors ``pkg/scheduler/framework/interface.go``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .model.objects import Pod
    from .model.snapshot import Snapshot
    from .profile import Profile

__all__ = [
    "MAX_NODE_SCORE",
    "ClusterEvent",
    "Code",
    "CycleState",
    "Fidelity",
    "FilterAborted",
    "FilterResult",
    "FilterRule",
    "Plugin",
    "PodNotHandled",
    "ScoreRule",
    "Status",
    "World",
    "default_normalize",
]

MAX_NODE_SCORE = 100


class Code(IntEnum):
    """``framework.Code``."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5

    @property
    def label(self) -> str:
        return {2: "Unschedulable", 3: "UnschedulableAndUnresolvable", 1: "Error"}.get(self.value, self.name)


@dataclass(frozen=True)
class Status:
    """Outcome of a PreFilter/PreScore call. ``nodes`` (bool mask) restricts the nodes to evaluate,
    as a ``PreFilterResult.NodeNames`` does."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    nodes: np.ndarray | None = None

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)


SUCCESS = Status()


@dataclass
class FilterResult:
    """A filter's answer for the evaluated nodes: a code per node (0 = passes) and reasons.

    ``reasons`` holds ``(mask, text)`` pairs: the text applies to each node where ``mask`` is true,
    in order, so a node may carry several (``Insufficient cpu``, ``Insufficient memory``).
    """

    code: np.ndarray  # int8 [n]
    reasons: list[tuple[np.ndarray, str]] = field(default_factory=list)

    @classmethod
    def passing(cls, n: int) -> FilterResult:
        return cls(np.zeros(n, dtype=np.int8))

    @classmethod
    def from_mask(cls, fails: np.ndarray, reason: str, code: Code = Code.UNSCHEDULABLE) -> FilterResult:
        """Every failing node gets the same code and reason."""
        return cls(np.where(fails, np.int8(code), np.int8(0)), [(fails, reason)] if fails.any() else [])

    def reasons_of(self, i: int) -> list[str]:
        return [text for mask, text in self.reasons if mask[i]]


@dataclass
class CycleState:
    """One scheduling cycle: the pod (row in ``ClusterState.pods``), the snapshot, and plugin data."""

    pod: int
    snapshot: Snapshot
    profile: Profile
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def pod_obj(self) -> Pod:
        return self.snapshot.state.pods[self.pod]


class ClusterEvent(StrEnum):
    """The cluster events a greedy run generates (``framework.ClusterEvent``): a pod bound to a node, and
    one deleted from it (a preemption victim)."""

    ASSIGNED_POD_ADD = "AssignedPodAdd"
    ASSIGNED_POD_DELETE = "AssignedPodDelete"


class Plugin:
    """What the engines read of a plugin besides its extension points, declared on the rule class once:

    - ``points``: the extension points the plugin implements (the interfaces kube's plugin satisfies;
      a configuration's ``multiPoint`` enables it at these, and naming it at another is refused);
    - ``events``: the cluster events after which a pod it rejected may fit (its ``EventsToRegister``
      whose queueing hint can answer Queue): the scheduling queue moves such a pod back on them;
    - ``static``: its PreFilter and Filter read only the pod's spec and the node's fixed labels, taints
      and flags, never a pod on a node or another object a run changes: greedy mode computes them once
      per pod shape, and a preemption dry run, which only removes pods, never evaluates them again;
    - ``placement_free``: its Filter reads no pod on the node (true of every static filter, and of
      filters that read objects a run changes, such as volumes): a dry run keeps its answer;
    - :meth:`score_key`: for a score that reads only the pod's spec and the nodes, what it reads of the
      pod (greedy mode keeps the raw score per key); None for every other score;
    - :meth:`dry_run`: for a filter that reads the pods on nodes, its :class:`World` over the candidate
      nodes of a preemption, so that the dry runs of all of them are computed together; None, and those
      dry runs go node by node through the filter itself.
    """

    points: ClassVar[frozenset[str]] = frozenset()
    events: ClassVar[frozenset[ClusterEvent]] = frozenset()
    static: ClassVar[bool] = False
    placement_free: ClassVar[bool] = False

    @staticmethod
    def score_key(pod: Pod) -> tuple | None:
        return None

    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: Any) -> World | None:
        """This filter's world over the candidate ``nodes`` (``index``: the snapshot's pod index)."""
        return None


class World(Protocol):
    """A filter answering for many preemption dry runs at once, one per candidate node.

    ``SelectVictimsOnNode`` (``pkg/scheduler/framework/preemption/preemption.go``) runs on a copy of the
    cycle state where only one node's pods change, so the dry runs of different nodes are independent:
    a world keeps, per candidate node, the part of one filter's state that the node's own removals and
    returns can move, and answers the filter for those nodes as the rule would on the modified snapshot.
    ``move(pos, pods, sign)`` takes ``pods[i]`` off (``sign`` -1) or puts it back (+1) on the node at
    position ``pos[i]``; ``check(qs)`` is the filter's answer for the nodes at positions ``qs``. A world
    whose ``local`` is true reads only its own node's pods (its answers for two nodes never interact).
    """

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None: ...

    def check(self, qs: np.ndarray) -> FilterResult: ...


@runtime_checkable
class FilterRule(Protocol):
    """PreFilter + Filter of one plugin. Built once per engine run: ``Rule(snapshot, profile)``."""

    name: ClassVar[str]

    def pre_filter(self, cycle: CycleState) -> Status: ...

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult: ...


@runtime_checkable
class ScoreRule(Protocol):
    """PreScore + Score + NormalizeScore of one plugin, over the feasible nodes (row indices)."""

    name: ClassVar[str]

    def pre_score(self, cycle: CycleState, nodes: np.ndarray) -> Status: ...

    def score(self, cycle: CycleState, nodes: np.ndarray) -> np.ndarray: ...

    def normalize(self, cycle: CycleState, scores: np.ndarray) -> np.ndarray: ...


class FilterAborted(Exception):
    """A plugin's Filter or Score returned Error: the cycle ends with
    ``running "<plugin>" <point> plugin: <message>`` and no PostFilter (``schedulingCycle``'s error path)."""

    def __init__(self, plugin: str, message: str, point: str = "filter") -> None:
        super().__init__(message)
        self.plugin, self.point = plugin, point


class PodNotHandled(Exception):
    """A plugin meets, in a pod's cycle, something optisched does not model (a CEL function not
    implemented, a field of a feature gate that is off by default): the pod is reported as not handled,
    with this reason, and no cycle is recorded for it."""


class Fidelity(StrEnum):
    """How closely a rule's CP-SAT encoding follows its greedy check.

    ``EXACT``: the same feasible set (a filter) or the same value (a score) as the greedy rule;
    ``RELAXED``: a superset of the feasible set (the checker catches the difference);
    ``SURROGATE``: an objective that approximates a score depending on the order of placement.
    """

    EXACT = "EXACT"
    RELAXED = "RELAXED"
    SURROGATE = "SURROGATE"


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """``helper.DefaultNormalizeScore``: scale to 0..MaxNodeScore by the max, integer division; reverse flips."""
    scores = scores.astype(np.int64)
    max_count = int(scores.max()) if len(scores) else 0
    if max_count == 0:
        if reverse:
            return np.full_like(scores, MAX_NODE_SCORE)
        return scores
    out = MAX_NODE_SCORE * scores // max_count
    if reverse:
        out = MAX_NODE_SCORE - out
    return out
