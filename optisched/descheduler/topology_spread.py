"""RemovePodsViolatingTopologySpreadConstraint and its balancing algorithm.

kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint/
topologyspreadconstraint.go``: for each distinct constraint of the pods of a namespace (``constraints``,
default DoNotSchedule only), the matching pods are counted per domain over the eligible nodes (those with the
topology key that the constraint's pod may use: node affinity honoured unless ``nodeAffinityPolicy: Ignore``,
taints only with ``nodeTaintsPolicy: Honor``), empty domains included. When ``max - min > maxSkew``,
``balanceDomains`` moves pods from the largest domain to the smallest: ``min(ceil(above - avg), ceil(avg -
below), ceil((skew - maxSkew) / 2))`` at a time, taken from the end of the larger domain's list, where
evictable pods without a node selector or affinity come last; with ``topologyBalanceNodeFit`` (default true)
a pod is only marked when it fits a node of a domain below the average.
"""
from __future__ import annotations

import math

import numpy as np

from ..model.objects import Pod, TaintEffect, TopologySpreadConstraint
from ..model.selectors import label_selector_matches
from ..plugins.node_affinity import required_mask
from ..plugins.taint_toleration import untolerated
from .args import Args, pod_scope
from .context import Context

__all__ = ["RemovePodsViolatingTopologySpreadConstraint"]


def _has_selector_or_affinity(pod: Pod) -> bool:
    aff = pod.spec.affinity
    return bool(pod.spec.node_selector) or (aff is not None and (aff.node_affinity is not None or
                                                                 aff.pod_affinity is not None or
                                                                 aff.pod_anti_affinity is not None))


class RemovePodsViolatingTopologySpreadConstraint:
    name = "RemovePodsViolatingTopologySpreadConstraint"
    point = "balance"

    def __init__(self, args: Args) -> None:
        args.only("namespaces", "labelSelector", "constraints", "topologyBalanceNodeFit")
        self.whens = set(args.get("constraints", list, ["DoNotSchedule"]))
        bad = self.whens - {"DoNotSchedule", "ScheduleAnyway"}
        if bad:
            raise args.error("constraints", f"{min(bad)!r} is not DoNotSchedule or ScheduleAnyway")
        self.node_fit = bool(args.get("topologyBalanceNodeFit", bool, True))
        self.scope = pod_scope(args)

    def _constraints(self, ctx: Context) -> list[tuple[int, TopologySpreadConstraint]]:
        """Distinct constraints per namespace, each with the first bound pod that declares it."""
        seen: dict[tuple, tuple[int, TopologySpreadConstraint]] = {}
        for p in np.nonzero(ctx.state.pod_node >= 0)[0].tolist():
            pod = ctx.state.pods[p]
            if not self.scope.namespace_ok(pod.metadata.namespace or "default"):
                continue
            for c in pod.spec.topology_spread_constraints:
                if c.when_unsatisfiable in self.whens and c.label_selector is not None:
                    key = (pod.metadata.namespace, c.model_dump_json())
                    seen.setdefault(key, (p, c))
        return list(seen.values())

    def _eligible(self, ctx: Context, owner: int, c: TopologySpreadConstraint) -> np.ndarray:
        s = ctx.state
        ok = s.label(c.topology_key).has()
        pod = s.pods[owner]
        if c.node_affinity_policy != "Ignore":
            ok &= required_mask(s, pod)
        if c.node_taints_policy == "Honor":
            effects = {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE}
            ok &= np.array([not untolerated(pod.spec.tolerations, list(t), effects).any() for t in s.taints], bool)
        return ok

    def _domains(self, ctx: Context, owner: int, c: TopologySpreadConstraint,
                 eligible: np.ndarray) -> dict[int, list[int]]:
        """Domain code -> matching pod rows, sorted as ``sortDomains`` sorts them (eviction takes the end)."""
        s = ctx.state
        codes = s.label(c.topology_key).codes
        ns = s.pods[owner].metadata.namespace
        domains: dict[int, list[int]] = {int(codes[n]): [] for n in np.nonzero(eligible)[0].tolist()}
        for p in np.nonzero(s.pod_node >= 0)[0].tolist():
            pod, n = s.pods[p], int(s.pod_node[p])
            if eligible[n] and pod.metadata.namespace == ns and \
                    label_selector_matches(c.label_selector, pod.metadata.labels):
                domains[int(codes[n])].append(p)
        for rows in domains.values():
            rows.sort(key=lambda p: (ctx.evictor.filter(p), not _has_selector_or_affinity(s.pods[p])))
        return domains

    def _balance(self, ctx: Context, c: TopologySpreadConstraint, domains: dict[int, list[int]],
                 eligible: np.ndarray, marked: list[int]) -> None:
        """``balanceDomains``: mark pods to move from the largest domains to the smallest."""
        s = ctx.state
        ordered = sorted(domains.items(), key=lambda kv: len(kv[1]))
        avg = sum(len(v) for v in domains.values()) / len(domains)
        below = {d for d, rows in domains.items() if len(rows) < avg}
        codes = s.label(c.topology_key).codes
        targets = eligible & np.isin(codes, list(below))
        i, j = 0, len(ordered) - 1
        while i < j:
            lo, hi = ordered[i][1], ordered[j][1]
            skew = len(hi) - len(lo)
            if len(lo) >= avg or len(hi) <= avg or skew <= c.max_skew:
                break
            move = int(min(math.ceil(len(hi) - avg), math.ceil(avg - len(lo)), math.ceil((skew - c.max_skew) / 2)))
            leaving = hi[len(hi) - move:]
            for p in leaving:
                if not self.node_fit or ctx.evictor.fits_on(p, targets):
                    marked.append(p)
            del hi[len(hi) - move:]
            lo.extend(leaving)
            ordered.sort(key=lambda kv: len(kv[1]))

    def run(self, ctx: Context) -> None:
        marked: list[int] = []
        for owner, c in self._constraints(ctx):
            eligible = self._eligible(ctx, owner, c)
            domains = self._domains(ctx, owner, c, eligible)
            if len(domains) < 2:
                continue
            sizes = [len(v) for v in domains.values()]
            if max(sizes) - min(sizes) <= c.max_skew:
                continue
            self._balance(ctx, c, domains, eligible, marked)
        for p in dict.fromkeys(marked):
            if ctx.evictor.filter(p) and self.scope.admits(ctx.state.pods[p]) and ctx.evictor.pre_eviction_filter(p):
                ctx.evictor.evict(p, self.name)
