"""Runs a profile's plugins over all nodes at once: PreFilter, Filter, PreScore, Score, NormalizeScore.

Mirrors ``pkg/scheduler/framework/runtime/framework.go``: filters run in the
profile's order and a node stops at its first failure; a PreFilter that skips
turns its Filter off for the cycle; PreScore skips turn Score off; scores are
normalized per plugin and multiplied by the plugin's weight.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..framework import Code, CycleState, FilterResult, Status
from ..model.snapshot import Snapshot
from ..profile import Profile
from ..registry import instantiate

__all__ = ["FilterPass", "Framework", "ScorePass"]


@dataclass
class FilterPass:
    """Filter outcome for the nodes evaluated in one cycle (rows in evaluation order)."""

    evaluated: np.ndarray  # node rows, in evaluation order
    passed: np.ndarray  # bool, aligned with evaluated
    fail_plugin: np.ndarray  # int index into plugin names, -1 when passed
    fail_code: np.ndarray  # int8 Code, 0 when passed
    results: list[tuple[str, np.ndarray, FilterResult]] = field(default_factory=list)  # (plugin, positions, result)
    plugin_names: list[str] = field(default_factory=list)

    @property
    def feasible(self) -> np.ndarray:
        return self.evaluated[self.passed]

    def reasons_at(self, pos: int) -> list[str]:
        """Reasons of the node at evaluation position ``pos`` from the plugin that rejected it."""
        plugin = self.fail_plugin[pos]
        if plugin < 0:
            return []
        for name, positions, res in self.results:
            if name == self.plugin_names[plugin]:
                k = np.searchsorted(positions, pos)
                if k < len(positions) and positions[k] == pos:
                    return res.reasons_of(int(k))
        return []

    def histogram(self, upto: int | None = None, only: np.ndarray | None = None) -> Counter:
        """Count of each reason over rejected nodes (all reasons of a node count), as FitError does;
        over the first ``upto`` positions, or the positions ``only`` (a bool mask) marks."""
        hist: Counter = Counter()
        limit = len(self.evaluated) if upto is None else upto
        for name, positions, res in self.results:
            mine = self.fail_plugin[positions] == self.plugin_names.index(name)
            mine &= positions < limit
            if only is not None:
                mine &= only[positions]
            for mask, text in res.reasons:
                n = int(np.count_nonzero(mask & mine))
                if n:
                    hist[text] += n
        return hist

    def extend(self, tail: FilterPass) -> FilterPass:
        """This pass followed by ``tail``, a pass over the nodes evaluated next (filters answer per node)."""
        off = len(self.evaluated)
        return FilterPass(np.concatenate([self.evaluated, tail.evaluated]), np.concatenate([self.passed, tail.passed]),
                          np.concatenate([self.fail_plugin, tail.fail_plugin]),
                          np.concatenate([self.fail_code, tail.fail_code]),
                          self.results + [(name, positions + off, res) for name, positions, res in tail.results],
                          self.plugin_names)

    def truncate(self, upto: int) -> FilterPass:
        """Keep only the first ``upto`` evaluated positions (the scheduler stopped there)."""
        return FilterPass(self.evaluated[:upto], self.passed[:upto], self.fail_plugin[:upto], self.fail_code[:upto],
                          self.results, self.plugin_names)


@dataclass
class ScorePass:
    nodes: np.ndarray
    total: np.ndarray
    weighted: dict[str, np.ndarray]
    normalized: dict[str, np.ndarray]
    raw: dict[str, np.ndarray]
    skipped: list[str]
    error: str = ""  # a PreScore plugin's Error: the cycle ends without a node


class Framework:
    """The profile's plugins bound to one snapshot."""

    def __init__(self, snapshot: Snapshot, profile: Profile) -> None:
        self.snapshot = snapshot
        self.profile = profile
        self.filter_rules, self.score_rules = instantiate(snapshot, profile)
        self.filter_names = [n for n in profile.plugins.get("filter", ()) if n in self.filter_rules]
        self.pre_filter_names = [n for n in profile.plugins.get("preFilter", ()) if n in self.filter_rules]
        self.score_names = [n for n in profile.plugins.get("score", ()) if n in self.score_rules]
        self.pre_score_names = [n for n in profile.plugins.get("preScore", ()) if n in self.score_rules]
        rules = {**self.score_rules, **self.filter_rules}
        self.pre_enqueue_rules = [rules[n] for n in profile.plugins.get("preEnqueue", ())
                                  if n in rules and hasattr(rules[n], "pre_enqueue")]
        self.reserve_rules = [rules[n] for n in profile.plugins.get("reserve", ())
                              if n in rules and hasattr(rules[n], "reserve")]
        self.post_filter_rules = [rules[n] for n in profile.plugins.get("postFilter", ())
                                  if n in rules and hasattr(rules[n], "post_filter")]

    def pre_enqueue(self, pod: int) -> str | None:
        """``RunPreEnqueuePlugins``: why a plugin keeps the pod out of the queue, or None."""
        for rule in self.pre_enqueue_rules:
            reason = rule.pre_enqueue(pod)
            if reason is not None:
                return reason
        return None

    def reserve(self, cycle: CycleState, node: int) -> dict[str, dict]:
        """Reserve and PreBind on the chosen node (what the pod's claims got, by claim key)."""
        out: dict[str, dict] = {}
        for rule in self.reserve_rules:
            out.update(rule.reserve(cycle, node))
        return out

    def deleted(self, pod: int) -> list[str]:
        """A bound pod was deleted: what the plugins that keep objects for it released (claims freed)."""
        return [key for rule in self.reserve_rules if hasattr(rule, "deleted") for key in rule.deleted(pod)]

    def pre_filter(self, cycle: CycleState, *, refresh: bool = False) -> tuple[Status, str, set[str]]:
        """Run PreFilter plugins; returns (status, rejecting plugin, plugins that skipped).

        With ``refresh``, only the plugins whose state depends on placed pods run again (the pod's
        PreFilter already ran this cycle and nothing else about the pod changed), as upstream's
        AddPod/RemovePod extensions update that state during preemption.
        """
        skipped: set[str] = set()
        restrict: np.ndarray | None = None
        narrowed: list[str] = []
        previous: dict[str, Status] = cycle.data.setdefault("__prefilter__", {})
        for name in self.pre_filter_names:
            rule = self.filter_rules[name]
            if refresh and name in previous and not getattr(rule, "depends_on_placement", False):
                st = previous[name]
            else:
                st = previous[name] = self._pre_filter_one(name, cycle)
            if st.code == Code.SKIP:
                skipped.add(name)
                continue
            if st.code != Code.SUCCESS:
                return st, name, skipped
            if st.nodes is not None:
                restrict = st.nodes if restrict is None else (restrict & st.nodes)
                narrowed.append(name)
        # a success's reasons name the plugins that narrowed the nodes (kube's absent-node message)
        return Status(reasons=tuple(narrowed), nodes=restrict), "", skipped

    def filter(self, cycle: CycleState, nodes: np.ndarray, skipped: set[str]) -> FilterPass:
        """Run every Filter plugin over ``nodes``; each node stops at its first failing plugin."""
        n = len(nodes)
        fp = FilterPass(nodes, np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int16), np.zeros(n, dtype=np.int8),
                        [], self.filter_names)
        return self._filter_from(cycle, fp, 0, skipped)

    def _filter_from(self, cycle: CycleState, fp: FilterPass, first: int, skipped: set[str]) -> FilterPass:
        """Run the Filter plugins from index ``first`` on over the nodes of ``fp`` still passing."""
        nodes, alive = fp.evaluated, fp.passed
        for j in range(first, len(self.filter_names)):
            name = self.filter_names[j]
            if name in skipped:
                continue
            positions = alive.nonzero()[0]
            if len(positions) == 0:
                break
            res = self.filter_rules[name].filter(cycle, nodes[positions])
            failed = res.code.nonzero()[0]
            if len(failed):
                bad = positions[failed]
                alive[bad] = False
                fp.fail_plugin[bad] = j
                fp.fail_code[bad] = res.code[failed]
                fp.results.append((name, positions, res))
        return fp

    def filter_one(self, cycle: CycleState, node: int) -> tuple[bool, str, Code, list[str]]:
        """Filter a single node against the current snapshot: (passes, failing plugin, code, reasons)."""
        _, _, skipped = self.pre_filter(cycle, refresh=True)
        fp = self.filter(cycle, np.array([node], dtype=np.int64), skipped)
        if fp.passed[0]:
            return True, "", Code.SUCCESS, []
        return False, self.filter_names[fp.fail_plugin[0]], Code(int(fp.fail_code[0])), fp.reasons_at(0)

    def score(self, cycle: CycleState, nodes: np.ndarray) -> ScorePass:
        """PreScore, Score, NormalizeScore and weights over the feasible ``nodes``; PreScore stops at the
        first Error (``RunPreScorePlugins``)."""
        skipped: list[str] = []
        total = np.zeros(len(nodes), dtype=np.int64)
        for name in self.pre_score_names:
            st = self.score_rules[name].pre_score(cycle, nodes)
            if st.code == Code.ERROR:
                return ScorePass(nodes, total, {}, {}, {}, skipped, f'running PreScore plugin "{name}": '
                                 + "; ".join(st.reasons))
            if st.code == Code.SKIP:
                skipped.append(name)
        weighted, normalized, raw = {}, {}, {}
        for name in self.score_names:
            if name in skipped:
                continue
            rule = self.score_rules[name]
            r = np.asarray(self._raw_score(name, cycle, nodes), dtype=np.int64)
            s = np.asarray(rule.normalize(cycle, r), dtype=np.int64)
            w = s * int(self.profile.score_weights.get(name, 1))
            raw[name], normalized[name], weighted[name] = r, s, w
            total += w
        return ScorePass(nodes, total, weighted, normalized, raw, skipped)

    def _raw_score(self, name: str, cycle: CycleState, nodes: np.ndarray) -> np.ndarray:
        return self.score_rules[name].score(cycle, nodes)

    def _pre_filter_one(self, name: str, cycle: CycleState) -> Status:
        return self.filter_rules[name].pre_filter(cycle)
