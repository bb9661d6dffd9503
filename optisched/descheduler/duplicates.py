"""RemoveDuplicates: spread the pods of one owner (same images) evenly over the nodes they could use.

kubernetes-sigs/descheduler v0.34.0 ``pkg/framework/plugins/removeduplicates/removeduplicates.go``: on each
node, a pod whose (namespace, owner kind, owner name, image) keys equal an earlier pod's on that node is a
duplicate. For each owner, ``upperAvg = ceil(pods of the owner / feasible nodes)`` over the nodes the
owner's first duplicate could use (node selector, affinity, NoSchedule taints, schedulable; at least two);
a node holding more than ``upperAvg`` keeps ``upperAvg`` and its later duplicates are evicted.
"""
from __future__ import annotations

import math

import numpy as np

from ..constraints.node_affinity import required_mask
from ..constraints.taint_toleration import untolerated
from ..model.objects import TaintEffect
from .args import Args, pod_scope
from .context import Context

__all__ = ["RemoveDuplicates"]


class RemoveDuplicates:
    name = "RemoveDuplicates"
    point = "balance"

    def __init__(self, args: Args) -> None:
        args.only("excludeOwnerKinds", "namespaces")
        self.scope = pod_scope(args, with_selector=False)
        self.exclude = set(args.get("excludeOwnerKinds", list, []))

    def _keys(self, ctx: Context, p: int) -> tuple[list[tuple], tuple] | None:
        pod = ctx.state.pods[p]
        owners = pod.metadata.owner_references
        if not owners or any(o.kind in self.exclude for o in owners):
            return None
        images = "#".join(sorted(c.image or "" for c in pod.spec.containers))
        ns = pod.metadata.namespace
        keys = sorted(f"{ns}/{o.kind}/{o.name}/{c.image}" for o in owners for c in pod.spec.containers)
        return [(ns, o.kind, o.name, images) for o in owners], tuple(keys)

    def _targets(self, ctx: Context, p: int) -> int:
        """Nodes the pod could use (``getTargetNodes``)."""
        s = ctx.state
        ok = required_mask(s, s.pods[p]) & ~s.unschedulable
        effects = {TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE}
        tol = s.pods[p].spec.tolerations
        return int(sum(1 for n in np.nonzero(ok)[0].tolist() if not untolerated(tol, list(s.taints[n]), effects).any()))

    def run(self, ctx: Context) -> None:
        s = ctx.state
        dups: dict[tuple, dict[int, list[int]]] = {}
        count: dict[tuple, int] = {}
        for n in range(s.num_nodes):
            seen: set[tuple] = set()
            for p in np.nonzero(s.pod_node == n)[0].tolist():
                if not ctx.evictor.filter(p) or not self.scope.admits(s.pods[p]) or (k := self._keys(ctx, p)) is None:
                    continue
                owners, keys = k
                for o in owners:
                    count[o] = count.get(o, 0) + 1
                if keys in seen:
                    for o in owners:
                        dups.setdefault(o, {}).setdefault(n, []).append(p)
                seen.add(keys)
        for owner, per_node in dups.items():
            first = next(iter(per_node.values()))[0]
            targets = self._targets(ctx, first)
            if targets < 2:
                continue
            upper = math.ceil(count[owner] / targets)
            for pods in per_node.values():
                if len(pods) + 1 > upper:
                    for p in pods[upper - 1:]:
                        if ctx.evictor.pre_eviction_filter(p):
                            ctx.evictor.evict(p, self.name)
