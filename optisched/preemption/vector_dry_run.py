"""DefaultPreemption's PostFilter with the dry runs of all candidate nodes computed together.

Same decisions, statuses and messages as :meth:`DefaultPreemption.post_filter` (which stays the
reference, one ``SelectVictimsOnNode`` per node), in numpy passes over the candidate nodes:

1. the pods of lower priority on each candidate node (none: "No preemption victims found");
2. every candidate node with all of them taken off, through the profile's filters in order, each
   dynamic filter answering from its per-node world (:class:`optisched.framework.World`, the rule's
   ``dry_run``);
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
from ..model.pod_index import PodIndex
from .default_preemption import (
    MAX_INT32,
    NEVER,
    NO_VICTIMS,
    NOT_HELPFUL,
    DefaultPreemption,
    PreemptionOutcome,
)
from .reprieve import Reprieved, reprieve

__all__ = ["DryRuns", "VectorPreemption"]

FEW_NODES = 8  # dry runs set up for at most this many nodes find their pods through the nodes' pod lists
SPARE = 16  # kept runs: nodes reprieved beyond what the search needs, for the next pods of the shape
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
            if rule.static:
                if dynamic_seen:  # otherwise the node passed it in the cycle's filter pass
                    checks.append((name, _static_check(rule.filter(cycle, nodes))))
                continue
            if rule.placement_free:
                checks.append((name, _static_check(rule.filter(cycle, nodes))))
                continue
            dynamic_seen = True
            world = rule.dry_run(cycle, nodes, index)
            if world is None:
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
            positions = fp.passed.nonzero()[0]
            if len(positions) == 0:
                break
            res = check(qs[positions])
            failed = res.code.nonzero()[0]
            if len(failed):
                bad = positions[failed]
                fp.passed[bad] = False
                fp.fail_plugin[bad] = j
                fp.fail_code[bad] = res.code[failed]
                fp.results.append((name, positions, res))
        return fp

    def post_filter_all(self, cycle: CycleState, node_codes: np.ndarray, order: np.ndarray, filter_node,  # type: ignore[no-untyped-def]
                        fw, skipped: set[str], nominated_nodes: set[int], with_table: bool,
                        runs: DryRuns | None = None) -> PreemptionOutcome | None:
        """``Evaluator.Preempt``; ``nominated_nodes``: nodes whose filters must count nominated pods;
        ``runs``: the dry runs an earlier pod of the same shape left (touched nodes dropped), or None."""
        if cycle.pod_obj.spec.preemption_policy == "Never":
            return PreemptionOutcome(None, message=f"preemption: {NEVER}")
        if runs is None:
            runs = DryRuns(self.state.num_nodes)
        potential = order[node_codes[order] == Code.UNSCHEDULABLE]
        reference = np.isin(potential, list(nominated_nodes)) if nominated_nodes else None
        unknown = ~runs.known[potential]
        if reference is not None:
            unknown &= ~reference
        fresh = potential[unknown]
        if len(fresh) and not self._dry_run(cycle, fw, skipped, fresh, runs):
            return None
        kind = runs.kind[potential]
        if reference is not None:
            kind[reference] = 3  # reference dry run
        walk = _Walk(self, cycle, potential, kind, filter_node, runs)
        return walk.run(with_table)

    def _dry_run(self, cycle: CycleState, fw, skipped: set[str], nodes: np.ndarray,  # type: ignore[no-untyped-def]
                 runs: DryRuns) -> bool:
        """Set up the dry runs of ``nodes``: the pods of lower priority on each (none: "No preemption
        victims found"), every such node with all of them taken off through the filters in order.
        False when a filter has no vectorized dry run (the reference path answers)."""
        snap, state = self.snapshot, self.state
        prio = int(state.pod_priority[cycle.pod])
        at = np.full(state.num_nodes, -1, dtype=np.int64)
        at[nodes] = np.arange(len(nodes))
        if len(nodes) <= FEW_NODES:  # the nodes an earlier pod's runs lost: read their own pod lists
            lower = np.array([p for n in nodes.tolist() for p in snap.pods_on[n]], dtype=np.int64)
            lower = lower[state.pod_priority[lower] < prio]
        else:
            lower = np.flatnonzero((snap.node_of >= 0) & (state.pod_priority < prio))
        pos = at[snap.node_of[lower]]
        pairs_pos, pairs_pod = pos[pos >= 0], lower[pos >= 0]
        has = np.bincount(pairs_pos, minlength=len(nodes)) > 0
        live = np.flatnonzero(has)
        runs.kind[nodes] = 0
        runs.done[nodes] = False
        if len(live):
            built = self._checks(fw, cycle, skipped, nodes[live])
            if built is None:
                runs.local = False  # nothing here may be kept
                return False
            static = frozenset(n for n in fw.filter_names if fw.filter_rules[n].static)
            self._first_pass(nodes, live, pairs_pos, pairs_pod, *built, static, runs)
        runs.known[nodes] = True
        return True

    def _first_pass(self, nodes: np.ndarray, live: np.ndarray, pairs_pos: np.ndarray, pairs_pod: np.ndarray,
                    checks: list[tuple[str, Check]], worlds: list, static: frozenset[str], runs: DryRuns) -> None:
        """Take the pairs' pods off the ``live`` nodes' worlds and run the filters once (later passes
        leave out the ``static`` filters: removing pods cannot change them)."""
        runs.local &= all(getattr(w, "local", False) for w in worlds)
        wpos = np.full(len(nodes), -1, dtype=np.int64)
        wpos[live] = np.arange(len(live))
        wpairs_pos, wpairs_pod = wpos[pairs_pos], pairs_pod
        for w in worlds:
            w.move(wpairs_pos, wpairs_pod, -1)
        first = self._evaluate(checks, np.arange(len(live)))
        rows = nodes[live]
        runs.kind[rows] = 1 + first.passed
        runs.batch[rows] = len(runs.batches)
        runs.wq[rows] = np.arange(len(live))
        runs.batches.append(_Batch(rows, (wpairs_pos, wpairs_pod), [c for c in checks if c[0] not in static],
                                   worlds, first))




class _Batch:
    """Dry runs set up together: world positions' nodes, (world position, pod) of the pods taken off,
    the dynamic filters and worlds the reprieve moves, and the first filter pass over the positions."""

    def __init__(self, nodes: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], checks: list, worlds: list,
                 first: FilterPass) -> None:
        self.nodes, self.pairs, self.checks, self.worlds, self.first = nodes, pairs, checks, worlds, first


class DryRuns:
    """Per node row: what one pod's dry run found there.

    When every dynamic filter answers from the node's own state (NodeResourcesFit, NodePorts), a node's
    dry run reads only that node's pods, so a pod of the same shape (everything but name, uid and
    creation time) gets the same answer on every node no add or remove touched since: the scheduler
    keeps the runs for the next pod of that shape and drops the touched nodes (``invalidate``).
    ``kind``: 0 no lower-priority pods, 1 the pod does not fit with all of them off, 2 it does (victims
    after the reprieve once ``done``)."""

    def __init__(self, num_nodes: int) -> None:
        self.known = np.zeros(num_nodes, dtype=bool)
        self.kind = np.zeros(num_nodes, dtype=np.int8)
        self.batch = np.full(num_nodes, -1, dtype=np.int64)  # which _Batch holds the node's world
        self.wq = np.full(num_nodes, -1, dtype=np.int64)  # the node's world position in it
        self.done = np.zeros(num_nodes, dtype=bool)  # reprieve run
        self.count = np.zeros(num_nodes, dtype=np.int64)
        self.violations = np.zeros(num_nodes, dtype=np.int64)
        self.keys = np.zeros((num_nodes, 5))
        self.rep = np.full(num_nodes, -1, dtype=np.int64)  # which Reprieved holds the node's victims
        self.batches: list[_Batch] = []
        self.reprieved: list[Reprieved] = []
        self.local = True  # every world so far reads only its node: the runs may be kept
        self.seen = 0  # changes (the scheduler's log) already dropped

    def invalidate(self, nodes: np.ndarray) -> None:
        self.known[nodes] = False
        self.done[nodes] = False

    def reprieve(self, dp: VectorPreemption, nodes: np.ndarray) -> None:
        """Run the reprieve loop for ``nodes`` (kind 2, not ``done``), batch by batch."""
        b_of = self.batch[nodes]
        for b in np.unique(b_of).tolist():
            mine = nodes[b_of == b]
            batch = self.batches[b]
            qs = self.wq[mine]
            got = reprieve(dp, qs, batch.pairs, batch.checks, batch.worlds, len(batch.nodes))
            self.count[mine] = got.count[qs]
            self.violations[mine] = got.violations[qs]
            self.keys[mine] = got.keys[qs]
            self.rep[mine] = len(self.reprieved)
            self.reprieved.append(got)
        self.done[nodes] = True

    def victims(self, node: int) -> list[int]:
        return self.reprieved[int(self.rep[node])].of(int(self.wq[node]))

    def first_status(self, node: int) -> tuple[Code, list[str]]:
        first, q = self.batches[int(self.batch[node])].first, int(self.wq[node])
        return Code(int(first.fail_code[q])), first.reasons_at(q)

    def histogram(self, nodes: np.ndarray) -> Counter:
        """FitError reasons of the first filter pass over ``nodes`` (kind 1)."""
        hist: Counter = Counter()
        b_of = self.batch[nodes]
        for b in np.unique(b_of).tolist():
            first = self.batches[b].first
            mask = np.zeros(len(first.evaluated), dtype=bool)
            mask[self.wq[nodes[b_of == b]]] = True
            hist.update(first.histogram(only=mask))
        return hist


class _Walk:
    """The candidate search over the nodes in order (``DryRunPreemption``), stopping as upstream does:
    once it holds ``numCandidates`` candidates, one of them violating no PDB."""

    def __init__(self, dp: VectorPreemption, cycle, potential, kind, filter_node, runs: DryRuns) -> None:  # type: ignore[no-untyped-def]
        self.dp, self.cycle, self.potential, self.kind = dp, cycle, potential, kind
        self.filter_node, self.runs = filter_node, runs
        self.want = dp.num_candidates(len(potential))
        self.fallback: dict[int, tuple[list[int] | None, int, tuple[Code, list[str]]]] = {}
        self.found: list[int] = []
        self.n_ok = 0

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
        runs = self.runs
        i = 0
        while i < len(seg):
            size = max(self.want - len(self.found), 16)
            chunk = seg[i:i + size]
            nodes = self.potential[chunk]
            todo = nodes[~runs.done[nodes]]
            if len(todo):
                if runs.local:  # the next pod of this shape needs a few more when one of these changes
                    ahead = self.potential[seg[i + size:i + size + SPARE]]
                    todo = np.concatenate((todo, ahead[~runs.done[ahead]]))
                runs.reprieve(self.dp, todo)
            has = runs.count[nodes] > 0
            k = self._add(chunk[has], runs.violations[nodes][has])
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
        """pickOneNodeForPreemption's criteria of the candidates at ``found`` (positions, in order)."""
        keys = self.runs.keys[self.potential[found]]
        for i, p in enumerate(found.tolist() if self.fallback else ()):
            if p in self.fallback:
                victims, violations, _ = self.fallback[p]
                keys[i] = self.dp.pick_keys(victims or [], violations)
        return keys

    def _victims(self, p: int) -> list[int] | None:
        if p in self.fallback:
            return self.fallback[p][0]
        return self.runs.victims(int(self.potential[p]))

    def _status(self, p: int) -> tuple[Code, list[str]]:
        if self.kind[p] == 0:
            return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [NO_VICTIMS]
        if self.kind[p] == 1:
            return self.runs.first_status(int(self.potential[p]))
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
                violations = self.fallback[p][1] if p in self.fallback else int(self.runs.violations[node])
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
        failed = self.potential[self.kind == 1]
        if len(failed):
            hist.update(self.runs.histogram(failed))
        for _, _, status in self.fallback.values():
            for r in status[1]:
                hist[r] += 1
        if n_all > len(self.potential):
            hist[NOT_HELPFUL] += n_all - len(self.potential)
        return fit_error_message(n_all, hist)
