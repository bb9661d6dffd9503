"""DefaultPreemption's PostFilter with the dry runs of all candidate nodes computed together.

Same decisions, statuses and messages as :meth:`DefaultPreemption.post_filter` (which stays the
reference, one ``SelectVictimsOnNode`` per node), in numpy passes over the candidate nodes:

1. the pods of lower priority on each candidate node (none: "No preemption victims found");
2. every candidate node with all of them taken off, through the profile's filters in order, each
   dynamic filter answering from a per-node world (:mod:`optisched.preemption.worlds`);
3. for the nodes where the pod then fits, as many as the candidate search needs, the reprieve loop
   run for all of them at once, one victim rank per step: rank *k* puts back each node's *k*-th
   pod (PDB-violating ones first, each group from the most important) and takes it off again when
   the pod no longer fits;
4. the candidate search's stopping rule and ``pickOneNodeForPreemption`` over the results.

Nodes holding nominated pods the filters must count go through the reference path, node by node.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from ..framework import Code, CycleState, FilterResult
from ..greedy.fiterror import fit_error_message
from ..greedy.framework_runner import FilterPass
from .default_preemption import (
    MAX_INT32,
    NEVER,
    NO_VICTIMS,
    NOT_HELPFUL,
    DefaultPreemption,
    PreemptionOutcome,
)
from .pod_index import PodIndex
from .reprieve import Reprieved, reprieve
from .worlds import AffinityWorld, PortsWorld, ResourceWorld, SpreadWorld

__all__ = ["VectorPreemption"]

STATIC_FILTERS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})
Check = Callable[[np.ndarray], FilterResult]


def _static_check(res: FilterResult) -> Check:
    return lambda qs: FilterResult(res.code[qs], [(m[qs], t) for m, t in res.reasons])


class VectorPreemption(DefaultPreemption):
    """:class:`DefaultPreemption` (offset 0) with vectorized dry runs; ``post_filter_all`` answers as
    ``post_filter`` does, or None when this pod needs the reference path."""

    def _checks(self, fw, cycle: CycleState, skipped: set[str],  # type: ignore[no-untyped-def]
                nodes: np.ndarray) -> tuple[list[tuple[str, Check]], list] | None:
        """The filters a dry run evaluates, in profile order, and the worlds that move with victims."""
        checks: list[tuple[str, Check]] = []
        worlds: list = []
        index: PodIndex = self.snapshot.shared(PodIndex)
        dynamic_seen = False
        for name in fw.filter_names:
            if name in skipped:
                continue
            rule = fw.filter_rules[name]
            if name in STATIC_FILTERS:
                if dynamic_seen:  # otherwise the node passed it in the cycle's filter pass
                    checks.append((name, _static_check(rule.filter(cycle, nodes))))
                continue
            dynamic_seen = True
            if name == "NodePorts":
                world = PortsWorld(rule, cycle, nodes, index)
            elif name == "NodeResourcesFit":
                world = ResourceWorld(rule, cycle, nodes)
            elif name == "PodTopologySpread":
                world = SpreadWorld(rule, cycle, nodes, index)
            elif name == "InterPodAffinity":
                world = AffinityWorld(rule, cycle, nodes, index)
            else:
                return None
            worlds.append(world)
            checks.append((name, world.check))
        return checks, worlds

    def pick_keys(self, victims: list[int], violations: int) -> tuple:
        """``pickOneNodeForPreemption``'s criteria for one candidate, each to maximize (as :meth:`pick`)."""
        pr = [int(self.state.pod_priority[v]) for v in victims]
        top = max(pr)
        return (-violations, -pr[0], -sum(x + MAX_INT32 + 1 for x in pr), -len(victims),
                min(float(self.start_time[v]) for v, x in zip(victims, pr) if x == top))

    @staticmethod
    def pick_index(table: np.ndarray) -> int:
        """The first candidate best on each criterion in turn (ties go to the earlier candidate)."""
        pool = np.arange(len(table))
        for j in range(table.shape[1]):
            col = table[pool, j]
            pool = pool[col == col.max()]
            if len(pool) == 1:
                break
        return int(pool[0])

    @staticmethod
    def _evaluate(checks: list[tuple[str, Check]], qs: np.ndarray) -> FilterPass:
        """The filters in order over the nodes at positions ``qs``, each stopping at its first failure."""
        n = len(qs)
        fp = FilterPass(qs, np.ones(n, dtype=bool), np.full(n, -1, dtype=np.int16), np.zeros(n, dtype=np.int8),
                        [], [name for name, _ in checks])
        for j, (name, check) in enumerate(checks):
            positions = np.flatnonzero(fp.passed)
            if len(positions) == 0:
                break
            res = check(qs[positions])
            failed = res.code != 0
            if failed.any():
                bad = positions[failed]
                fp.passed[bad] = False
                fp.fail_plugin[bad] = j
                fp.fail_code[bad] = res.code[failed]
                fp.results.append((name, positions, res))
        return fp

    def post_filter_all(self, cycle: CycleState, node_codes: np.ndarray, order: np.ndarray, filter_node,  # type: ignore[no-untyped-def]
                        fw, skipped: set[str], nominated_nodes: set[int], with_table: bool) -> PreemptionOutcome | None:
        """``Evaluator.Preempt``; ``nominated_nodes``: nodes whose filters must count nominated pods."""
        if cycle.pod_obj.spec.preemption_policy == "Never":
            return PreemptionOutcome(None, message=f"preemption: {NEVER}")
        snap, state = self.snapshot, self.state
        potential = order[node_codes[order] == Code.UNSCHEDULABLE]
        prio = int(state.pod_priority[cycle.pod])
        at = np.full(state.num_nodes, -1, dtype=np.int64)
        at[potential] = np.arange(len(potential))
        lower = np.flatnonzero((snap.node_of >= 0) & (state.pod_priority < prio))
        pos = at[snap.node_of[lower]]
        pairs_pos, pairs_pod = pos[pos >= 0], lower[pos >= 0]
        kind = np.where(np.bincount(pairs_pos, minlength=len(potential)) > 0, 1, 0)  # 0 no victims, 1 dry run
        if nominated_nodes:
            kind[np.isin(potential, list(nominated_nodes))] = 3  # reference dry run
        live = np.flatnonzero(kind == 1)
        built = self._checks(fw, cycle, skipped, potential[live]) if len(live) else ([], [])
        if built is None:
            return None
        checks, worlds = built
        wpos = np.full(len(potential), -1, dtype=np.int64)
        wpos[live] = np.arange(len(live))
        keep = wpos[pairs_pos] >= 0
        wpairs_pos, wpairs_pod = wpos[pairs_pos[keep]], pairs_pod[keep]
        for w in worlds:
            w.move(wpairs_pos, wpairs_pod, -1)
        first = self._evaluate(checks, np.arange(len(live)))
        kind[live[first.passed]] = 2
        walk = _Walk(self, cycle, potential, kind, filter_node, first, live, (wpairs_pos, wpairs_pod), checks, worlds)
        return walk.run(with_table)


class _Walk:
    """The candidate search over the nodes in order (``DryRunPreemption``), stopping as upstream does:
    once it holds ``numCandidates`` candidates, one of them violating no PDB."""

    def __init__(self, dp: VectorPreemption, cycle, potential, kind, filter_node, first: FilterPass,  # type: ignore[no-untyped-def]
                 live, pairs, checks, worlds) -> None:
        self.dp, self.cycle, self.potential, self.kind = dp, cycle, potential, kind
        self.filter_node, self.first, self.pairs = filter_node, first, pairs
        self.checks = [c for c in checks if c[0] not in STATIC_FILTERS]
        self.worlds = worlds
        self.want = dp.num_candidates(len(potential))
        self.world_of = np.full(len(potential), -1, dtype=np.int64)
        self.world_of[live] = np.arange(len(live))
        self.batches: list[Reprieved] = []
        self.batch_of = np.full(len(live), -1, dtype=np.int64)  # which batch reprieved a world position
        self.fallback: dict[int, tuple[list[int] | None, int, tuple[Code, list[str]]]] = {}
        self.found: list[int] = []
        self.n_ok = 0

    def _reprieve(self, chunk: np.ndarray) -> Reprieved:
        qs = self.world_of[chunk]
        got = reprieve(self.dp, qs, self.pairs, self.checks, self.worlds, len(self.batch_of))
        self.batch_of[qs] = len(self.batches)
        self.batches.append(got)
        return got

    def _add(self, ps: np.ndarray, violations: np.ndarray) -> int:
        """Take the candidates ``ps`` in order; the index where the search stops, or -1."""
        n_found = len(self.found) + np.arange(1, len(ps) + 1)
        n_ok = self.n_ok + np.cumsum(violations == 0)
        stop = np.flatnonzero((n_ok > 0) & (n_found >= self.want))
        end = int(stop[0]) + 1 if len(stop) else len(ps)
        self.found.extend(ps[:end].tolist())
        self.n_ok = int(n_ok[end - 1]) if end else self.n_ok
        return end - 1 if len(stop) else -1

    def _segment(self, seg: np.ndarray) -> int:
        """Reprieve nodes of ``seg`` (all dry-run in this path) chunk by chunk; the stopping position or -1."""
        i = 0
        while i < len(seg):
            chunk = seg[i:i + max(self.want - len(self.found), 16)]
            got = self._reprieve(chunk)
            qs = self.world_of[chunk]
            has = got.count[qs] > 0
            k = self._add(chunk[has], got.violations[qs][has])
            if k >= 0:
                return int(chunk[has][k])
            i += len(chunk)
        return -1

    def _fallback_one(self, p: int) -> int:
        cand, status = self.dp.select_victims(self.cycle, int(self.potential[p]), self.filter_node)
        victims = cand.victims if cand is not None else None
        violations = cand.pdb_violations if cand is not None else 0
        self.fallback[p] = (victims, violations, status)
        if victims and self._add(np.array([p]), np.array([violations])) >= 0:
            return p
        return -1

    def run(self, with_table: bool) -> PreemptionOutcome:
        interesting = np.flatnonzero(self.kind >= 2)
        breaks = np.flatnonzero(self.kind[interesting] == 3)
        last = -1
        lo = 0
        for b in [*breaks.tolist(), len(interesting)]:
            last = self._segment(interesting[lo:b]) if b > lo else -1
            if last < 0 and b < len(interesting):
                last = self._fallback_one(int(interesting[b]))
            if last >= 0:
                break
            lo = b + 1
        if last < 0:
            last = len(self.potential) - 1
        table = self._table(last) if with_table else {}
        if not self.found:
            return PreemptionOutcome(None, message="preemption: " + self._message(), table=table)
        best = self.found[self.dp.pick_index(self._keys(np.array(self.found)))]
        return PreemptionOutcome(int(self.potential[best]), self._victims(best) or [], "", table)

    def _keys(self, found: np.ndarray) -> np.ndarray:
        """pickOneNodeForPreemption's criteria of the candidates at ``found`` (rows, in order)."""
        qs = self.world_of[found]
        keys = np.zeros((len(found), 5))
        for b, got in enumerate(self.batches):
            mine = (qs >= 0) & (self.batch_of[np.maximum(qs, 0)] == b)
            keys[mine] = got.keys[qs[mine]]
        for i, p in enumerate(found.tolist() if self.fallback else ()):
            if p in self.fallback:
                victims, violations, _ = self.fallback[p]
                keys[i] = self.dp.pick_keys(victims or [], violations)
        return keys

    def _victims(self, p: int) -> list[int] | None:
        if p in self.fallback:
            return self.fallback[p][0]
        q = int(self.world_of[p])
        return self.batches[int(self.batch_of[q])].of(q)

    def _status(self, p: int) -> tuple[Code, list[str]]:
        if self.kind[p] == 0:
            return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [NO_VICTIMS]
        if self.kind[p] == 1:
            q = int(self.world_of[p])
            return Code(int(self.first.fail_code[q])), self.first.reasons_at(q)
        if p in self.fallback:
            return self.fallback[p][2]
        return Code.SUCCESS, []

    def _table(self, last: int) -> dict[int, dict]:
        pods = self.dp.state.pods
        table: dict[int, dict] = {}
        for p in range(last + 1):
            node = int(self.potential[p])
            victims = self._victims(p) if self.kind[p] >= 2 else None
            if victims:
                violations = self.fallback[p][1] if p in self.fallback else \
                    int(self.batches[int(self.batch_of[self.world_of[p]])].violations[self.world_of[p]])
                table[node] = {"victims": [pods[v].key for v in victims], "numPDBViolations": violations}
            else:
                code, reasons = self._status(p)
                table[node] = {"numPDBViolations": 0, "status": f"{code.label}: {', '.join(reasons)}"}
        return table

    def _message(self) -> str:
        """The FitError of the dry runs when no node qualified: every node's reasons, or "not helpful"."""
        n_all = self.dp.state.num_nodes
        hist: Counter = Counter()
        no_victims = int(np.count_nonzero(self.kind == 0))
        if no_victims:
            hist[NO_VICTIMS] += no_victims
        hist.update(self.first.histogram())
        for _, _, status in self.fallback.values():
            for r in status[1]:
                hist[r] += 1
        if n_all > len(self.potential):
            hist[NOT_HELPFUL] += n_all - len(self.potential)
        return fit_error_message(n_all, hist)
