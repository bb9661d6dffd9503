"""Pods kube-scheduler cannot score: a PreScore plugin fails on the pod alone with an Error.

A preferred node-affinity term that ``nodeaffinity.NewPreferredSchedulingTerms`` cannot build (a ``Gt``
value that is no integer, say), or a soft topology spread constraint whose selector
``metav1.LabelSelectorAsSelector`` rejects, fails ``RunPreScorePlugins`` (kubernetes v1.35.4,
``schedule_one.go``): the cycle ends without a node, as any cycle error does. ``schedulePod`` skips
scoring when exactly one node passes the filters, and then the pod lands there.

Optimal mode follows that without turns: such a pod may go only where one node alone passes its static
rules (phase 1: the rules that depend on the pod, the node and the pods that cannot move); with two or
more such nodes it is placed nowhere. It never lands where kube-scheduler's cycle would fail. (Greedy
mode can still place it when, at its turn, the filters leave one node because the others are full: a
batch has no turns, and this module does not model them.)
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from ..greedy.framework_runner import Framework
from ..model.objects import Pod
from .classes import PodClass

__all__ = ["pre_score_error", "unscorable"]


def pre_score_error(fw: Framework, pod: Pod) -> tuple[str, str] | None:
    """(plugin, error) of the first PreScore plugin of ``fw``'s profile that fails on ``pod`` alone (a
    rule's optional ``pre_score_error(pod)``), or None."""
    for name in fw.pre_score_names:
        check = getattr(fw.score_rules[name], "pre_score_error", None)
        if check is not None and (err := check(pod)) is not None:
            return name, err
    return None


def unscorable(classes: Iterable[PodClass], pods: list[Pod], frameworks: Mapping[str, Framework],
               allowed: np.ndarray, cap: np.ndarray) -> Iterator[tuple[PodClass, str]]:
    """Phase 1, after every rule's ``restrict``: (class, plugin) of each class whose PreScore fails and
    that two or more nodes may take (``allowed`` and ``cap``: classes × nodes); the model forbids it every
    node."""
    for c in classes:
        found = pre_score_error(frameworks[c.scheduler_name], pods[c.rep])
        if found is not None and np.count_nonzero(allowed[c.index] & (cap[c.index] > 0)) >= 2:
            yield c, found[0]
