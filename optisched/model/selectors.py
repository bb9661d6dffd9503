"""Node and label selector matching, shared by every rule that selects nodes or pods.

Node selectors are evaluated over all nodes at once (a bool mask), as
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity`` defines them; label
selectors over one pod's labels, as ``metav1.LabelSelectorAsSelector`` does
(a nil selector matches nothing, an empty one everything).

Requirements are checked as ``labels.NewRequirement`` checks them (:mod:`.label_syntax`): the key must
be a qualified name, every value a valid label value, In/NotIn need values, Exists/DoesNotExist none,
Gt/Lt exactly one integer. kube-scheduler v1.35 cannot build a selector
from a requirement that fails, and a node selector term it cannot build matches no node
(``nodeSelectorTerm.match`` returns its parse errors; ``NodeAffinity.Filter`` ignores them, so the
node is rejected with the usual reason). ``matchFields`` requirements take exactly one value.
A label selector with such a requirement (``metav1.LabelSelectorAsSelector`` fails) matches nothing
here, as preemption's PDB check and the default spreading selector treat it; the rules that read a
pod's own selectors say more (InterPodAffinity and PodTopologySpread reject the pod).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .label_syntax import requirement_error, term_error, term_errors
from .objects import (
    LabelSelector,
    NodeSelector,
    NodeSelectorOperator,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    SelectorOperator,
)
from .state import ClusterState

__all__ = ["NOTHING", "Selector", "label_selector_matches", "labels_mask", "node_selector_mask",
           "parse_label_selector", "requirement_error", "requirement_mask", "selector_error", "selector_of",
           "term_error", "term_errors", "term_mask"]

_Op = NodeSelectorOperator


def requirement_mask(state: ClusterState, req: NodeSelectorRequirement, *, field: bool = False) -> np.ndarray:
    """Nodes satisfying one ``matchExpressions`` (or, with ``field``, ``matchFields``) requirement."""
    if field:  # only metadata.name, only In / NotIn (validated by the model)
        names = set(req.values)
        hit = np.fromiter((n in names for n in state.node_names), dtype=bool, count=state.num_nodes)
        return hit if req.operator == _Op.IN else ~hit
    col = state.label(req.key)
    op = req.operator
    if op == _Op.IN:
        return col.isin(req.values)
    if op == _Op.NOT_IN:
        return ~col.isin(req.values)
    if op == _Op.EXISTS:
        return col.has()
    if op == _Op.DOES_NOT_EXIST:
        return ~col.has()
    bound = int(req.values[0])
    vals = col.as_int
    with np.errstate(invalid="ignore"):
        return (vals > bound) if op == _Op.GT else (vals < bound)


def term_mask(state: ClusterState, term: NodeSelectorTerm) -> np.ndarray:
    """ANDed requirements of one term; a term with no requirements, or one kube-scheduler cannot
    build (``term_error``), matches no node."""
    if (not term.match_expressions and not term.match_fields) or term_error(term) is not None:
        return np.zeros(state.num_nodes, dtype=bool)
    mask = np.ones(state.num_nodes, dtype=bool)
    for r in term.match_expressions:
        mask &= requirement_mask(state, r)
    for r in term.match_fields:
        mask &= requirement_mask(state, r, field=True)
    return mask


def node_selector_mask(state: ClusterState, selector: NodeSelector) -> np.ndarray:
    """ORed terms of a required node selector."""
    mask = np.zeros(state.num_nodes, dtype=bool)
    for term in selector.node_selector_terms:
        mask |= term_mask(state, term)
    return mask


def labels_mask(state: ClusterState, labels: Mapping[str, str]) -> np.ndarray:
    """Nodes whose labels include every pair of ``labels`` (a pod's ``nodeSelector``)."""
    mask = np.ones(state.num_nodes, dtype=bool)
    for k, v in labels.items():
        mask &= state.label(k).isin([v])
    return mask


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``."""
    return selector_of(selector).matches(labels)


@dataclass(frozen=True)
class Selector:
    """A hashable label selector: required label pairs and expressions (``None`` = matches nothing)."""

    labels: frozenset[tuple[str, str]] | None
    exprs: tuple[tuple[str, str, frozenset[str]], ...] = ()

    @property
    def nothing(self) -> bool:
        return self.labels is None

    @property
    def empty(self) -> bool:
        """``labels.Selector.Empty()``: no requirement at all (matches every pod)."""
        return self.labels is not None and not self.labels and not self.exprs

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.labels is None:
            return False
        for k, v in self.labels:
            if labels.get(k) != v:
                return False
        for key, op, values in self.exprs:
            present = key in labels
            if op == "In" and not (present and labels[key] in values):
                return False
            if op == "NotIn" and present and labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True

    def with_labels(self, extra: Mapping[str, str]) -> Selector:
        """Add ``key=value`` requirements (``mergeLabelSetWithSelector``); nothing stays nothing."""
        if self.labels is None or not extra:
            return self
        return Selector(self.labels | frozenset(extra.items()), self.exprs)

    def with_exprs(self, exprs: tuple[tuple[str, str, frozenset[str]], ...]) -> Selector:
        if self.labels is None or not exprs:
            return self
        return Selector(self.labels, self.exprs + exprs)


NOTHING = Selector(None)


def selector_error(sel: LabelSelector | None) -> str | None:
    """Why ``metav1.LabelSelectorAsSelector(sel)`` fails (every ``matchLabels`` pair is an Equals
    requirement, every expression a requirement), or None; nil and empty selectors build."""
    if sel is None:
        return None
    for key, value in sel.match_labels.items():
        if (err := requirement_error(key, "In", [value])) is not None:
            return err
    for r in sel.match_expressions:
        if (err := requirement_error(r.key, SelectorOperator(r.operator).value, r.values)) is not None:
            return err
    return None


def selector_of(sel: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil matches nothing, empty matches everything; one that
    cannot be built (``selector_error``) matches nothing."""
    if sel is None or selector_error(sel) is not None:
        return NOTHING
    exprs = tuple((r.key, SelectorOperator(r.operator).value, frozenset(r.values)) for r in sel.match_expressions)
    return Selector(frozenset(sel.match_labels.items()), exprs)


_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_TERMS = (
    (re.compile(rf"!\s*({_KEY})"), "DoesNotExist"),
    (re.compile(rf"({_KEY})\s+(in|notin)\s*\(([^()]*)\)"), "set"),
    (re.compile(rf"({_KEY})\s*(==|!=|=)\s*([-A-Za-z0-9_.]*)"), "equality"),
    (re.compile(rf"({_KEY})"), "Exists"),
)


def _split_terms(text: str) -> list[str]:
    """Split at the commas outside parentheses (``a in (x,y),b`` is two terms)."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms]


def parse_label_selector(text: str, option: str = "--selector") -> Selector:
    """``labels.Parse`` (k8s.io/apimachinery v0.35, ``pkg/labels/selector.go``): the string form of
    ``kubectl get -l``. Terms joined by commas must all hold: ``k=v`` (or ``k==v``), ``k!=v`` (true
    when ``k`` is absent too), ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists), ``!k`` (absent).
    An empty string selects everything. The numeric ``>``/``<`` of labels.Parse are not taken."""
    if not text.strip():
        return Selector(frozenset())
    labels: set[tuple[str, str]] = set()
    exprs: list[tuple[str, str, frozenset[str]]] = []
    for term in _split_terms(text):
        kind, m = next(((k, m) for rx, k in _TERMS if (m := rx.fullmatch(term))), ("", None))
        if m is None:
            raise InputError(f"{option}: cannot parse {term!r} in {text!r} (expected k=v, k!=v, k in (a,b), "
                             "k notin (a,b), k or !k, joined by commas)")
        if kind == "equality":
            if m[2] == "!=":
                exprs.append((m[1], "NotIn", frozenset({m[3]})))
            else:
                labels.add((m[1], m[3]))
        elif kind == "set":
            values = frozenset(v.strip() for v in m[3].split(","))
            exprs.append((m[1], "In" if m[2] == "in" else "NotIn", values))
        else:
            exprs.append((m[1], kind, frozenset()))
    return Selector(frozenset(labels), tuple(exprs))
