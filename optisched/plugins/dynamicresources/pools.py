"""The resource pools a node can allocate from, as the structured allocator gathers them.

Upstream: ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/
pools_incubating.go`` of v1.35.4 (``GatherPools``, ``addSlice``, ``buildPool``, ``checkSlicesInPool``,
``NodeMatches``) and ``createNodeSelector`` of ``allocator_incubating.go``. The slices are indexed once by
node name, with the ``allNodes`` and ``nodeSelector`` slices apart, so gathering one node's pools reads only
that node's slices and the node-independent ones; a node's pools are kept for later calls.

Order: 1.35 walks the pools of a Go map (random order). Here pools are sorted by (driver, pool name) and a
pool's slices by name, devices staying in their slice's order: the order that v1.36.2 sorts into
(``sortPoolsByID`` and ``sortSlicesByName`` in the same file of v1.36.2), one of the orders 1.35 may walk.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...model.dra import Device, ResourceSlice
from ...model.label_syntax import term_error
from ...model.objects import (
    Node,
    NodeSelector,
    NodeSelectorOperator,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)

__all__ = ["Pool", "SliceIndex", "create_node_selector", "node_matches", "unmodelled_device_field"]

_Op = NodeSelectorOperator
_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class Pool:
    """One (driver, pool) of the newest generation seen for the node: its slices targeting the node, or
    why it cannot be used (``IsIncomplete``, ``IsInvalid`` upstream)."""

    driver: str
    name: str
    slices: tuple[ResourceSlice, ...] = ()
    incomplete: bool = False
    invalid_reason: str | None = None

    @property
    def id(self) -> str:
        """``PoolID.String()``: ``driver/pool``."""
        return f"{self.driver}/{self.name}"

    @property
    def invalid(self) -> bool:
        return self.invalid_reason is not None


def _go_int(s: str) -> int | None:
    """``strconv.ParseInt(s, 10, 64)``, None when it fails."""
    t = s[1:] if s[:1] in "+-" else s
    if not t or not t.isdigit() or not t.isascii():
        return None
    v = int(s)
    return v if _INT64[0] <= v <= _INT64[1] else None


def _requirement_matches(node: Node, req: NodeSelectorRequirement, *, field_: bool) -> bool:
    if field_:  # metadata.name, In or NotIn with one value (the model and term_error check it)
        hit = node.metadata.name in req.values
        return hit if req.operator == _Op.IN else not hit
    labels = node.metadata.labels
    present = req.key in labels
    op = req.operator
    if op == _Op.IN:
        return present and labels[req.key] in req.values
    if op == _Op.NOT_IN:
        return not present or labels[req.key] not in req.values
    if op == _Op.EXISTS:
        return present
    if op == _Op.DOES_NOT_EXIST:
        return not present
    have = _go_int(labels[req.key]) if present else None
    bound = _go_int(req.values[0])
    if have is None or bound is None:
        return False
    return have > bound if op == _Op.GT else have < bound


def _term_matches(node: Node, term: NodeSelectorTerm) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    return (all(_requirement_matches(node, r, field_=False) for r in term.match_expressions)
            and all(_requirement_matches(node, r, field_=True) for r in term.match_fields))


def node_matches(node: Node, node_name: str | None, all_nodes: bool | None,
                 selector: NodeSelector | None) -> bool:
    """``NodeMatches``: the node name, all nodes, or a node selector (ORed terms). A selector that
    ``nodeaffinity.NewNodeSelector`` cannot build raises ``ValueError`` with the parse error."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        errs = [e for e in (term_error(t) for t in selector.node_selector_terms) if e is not None]
        if errs:
            raise ValueError(f"failed to parse node selector: {errs[0] if len(errs) == 1 else errs}")
        return any(_term_matches(node, t) for t in selector.node_selector_terms)
    return False


def unmodelled_device_field(device: Device) -> str | None:
    """The first field of ``device`` that only a feature off by default in 1.35 reads, or None. Device
    taints are not among them: with DRADeviceTaints off (the only value ``--feature-gates`` accepts for
    it) the allocator ignores them, as upstream's does."""
    checks = (
        ("consumesCounters", bool(device.consumes_counters), "DRAPartitionableDevices"),
        ("nodeName", device.node_name is not None, "DRAPartitionableDevices"),
        ("nodeSelector", device.node_selector is not None, "DRAPartitionableDevices"),
        ("allNodes", device.all_nodes is not None, "DRAPartitionableDevices"),
        ("bindsToNode", device.binds_to_node is not None, "DRADeviceBindingConditions"),
        ("bindingConditions", bool(device.binding_conditions), "DRADeviceBindingConditions"),
        ("bindingFailureConditions", bool(device.binding_failure_conditions), "DRADeviceBindingConditions"),
        ("allowMultipleAllocations", device.allow_multiple_allocations is not None, "DRAConsumableCapacity"),
    )
    for name, used, gate in checks:
        if used:
            return f"{name} ({gate})"
    for cap_name, cap in device.capacity.items():
        if cap.request_policy is not None:
            return f"capacity[{cap_name}].requestPolicy (DRAConsumableCapacity)"
    return None


def _slice_unmodelled(s: ResourceSlice) -> str | None:
    name = s.metadata.name
    if s.spec.per_device_node_selection is not None:
        return f"ResourceSlice {name}: spec.perDeviceNodeSelection (DRAPartitionableDevices) is not modelled"
    if s.spec.shared_counters:
        return f"ResourceSlice {name}: spec.sharedCounters (DRAPartitionableDevices) is not modelled"
    for i, d in enumerate(s.spec.devices):
        f = unmodelled_device_field(d)
        if f is not None:
            return f"ResourceSlice {name}: spec.devices[{i}].{f} is not modelled"
    return None


@dataclass
class SliceIndex:
    """The cluster's slices sorted by name and indexed by how they select nodes."""

    slices: list[ResourceSlice]
    by_node: dict[str, list[int]] = field(default_factory=dict)
    all_nodes: list[int] = field(default_factory=list)
    by_selector: list[int] = field(default_factory=list)
    by_pool: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    unmodelled: dict[int, str] = field(default_factory=dict)
    node_independent_unmodelled: str | None = None
    _cache: dict[str, list[Pool]] = field(default_factory=dict)

    @classmethod
    def build(cls, slices: Sequence[ResourceSlice]) -> SliceIndex:
        ordered = sorted(slices, key=lambda s: s.metadata.name)  # stable: equal names keep input order
        index = cls(ordered)
        by_node: dict[str, list[int]] = defaultdict(list)
        by_pool: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, s in enumerate(ordered):
            spec = s.spec
            by_pool[(spec.driver, spec.pool.name)].append(i)
            reason = _slice_unmodelled(s)
            if spec.per_device_node_selection is not None or spec.shared_counters:
                # 1.35's default gates skip these slices whatever the node; their presence means the
                # cluster runs DRAPartitionableDevices, whose allocation is not modelled.
                index.node_independent_unmodelled = index.node_independent_unmodelled or reason
                continue
            if reason is not None:
                index.unmodelled[i] = reason
            if spec.node_name:
                by_node[spec.node_name].append(i)
            elif spec.all_nodes:
                index.all_nodes.append(i)
            elif spec.node_selector is not None:
                index.by_selector.append(i)
        index.by_node, index.by_pool = dict(by_node), dict(by_pool)
        return index

    def pools(self, node: Node) -> list[Pool]:
        """``GatherPools`` for ``node``, in (driver, pool name) order. Raises ``NotImplementedError`` for
        a slice using a feature the default gates turn off, ``ValueError`` for a node selector that
        cannot be built (upstream's "failed to perform node selection for slice ...")."""
        if self.node_independent_unmodelled is not None:
            raise NotImplementedError(self.node_independent_unmodelled)
        name = node.metadata.name
        cached = self._cache.get(name)
        if cached is None:
            cached = self._cache[name] = self._gather(node)
        return cached

    def _gather(self, node: Node) -> list[Pool]:
        chosen = list(self.by_node.get(node.metadata.name, ())) + self.all_nodes
        for i in self.by_selector:
            s = self.slices[i]
            try:
                if node_matches(node, None, None, s.spec.node_selector):
                    chosen.append(i)
            except ValueError as e:
                raise ValueError(f"failed to perform node selection for slice {s.metadata.name}: "
                                 f"{e}") from None
        chosen.sort()
        for i in chosen:
            if i in self.unmodelled:
                raise NotImplementedError(self.unmodelled[i])
        pools: dict[tuple[str, str], list[int]] = {}
        for i in chosen:  # addSlice: the newest generation replaces older ones, older ones are dropped
            spec = self.slices[i].spec
            key = (spec.driver, spec.pool.name)
            have = pools.get(key)
            if have is None or spec.pool.generation > self.slices[have[0]].spec.pool.generation:
                pools[key] = [i]
            elif spec.pool.generation == self.slices[have[0]].spec.pool.generation:
                have.append(i)
        result = []
        for key in sorted(pools):
            pool = self._pool(key, pools[key])
            if pool is not None:
                result.append(pool)
        return result

    def _pool(self, key: tuple[str, str], members: list[int]) -> Pool | None:
        first = self.slices[members[0]].spec.pool
        if len(members) != first.resource_slice_count:
            # checkSlicesInPool: slices of the pool that target other nodes count too
            same = 0
            for j in self.by_pool[key]:
                gen = self.slices[j].spec.pool.generation
                if gen > first.generation:
                    return None  # the driver is replacing this generation: the pool is ignored
                same += gen == first.generation
            if same != first.resource_slice_count:
                return Pool(key[0], key[1], incomplete=True)
        slices = tuple(self.slices[i] for i in members)
        seen: set[str] = set()
        for s in slices:  # validateDeviceNames
            for d in s.spec.devices:
                if d.name in seen:
                    return Pool(key[0], key[1], invalid_reason=f"duplicate device name {d.name}")
                seen.add(d.name)
        return Pool(key[0], key[1], slices)


def _add_new(src: list[NodeSelectorRequirement], dst: list[NodeSelectorRequirement]) -> None:
    for r in src:  # addNewNodeSelectorRequirements: same key, operator and set of values
        if not any(e.key == r.key and e.operator == r.operator and set(e.values) == set(r.values)
                   for e in dst):
            dst.append(r)


def create_node_selector(slices: Sequence[ResourceSlice]) -> NodeSelector | None:
    """``createNodeSelector`` over the slices of a claim's allocated devices, in result order: the first
    node-local slice gives ``matchFields metadata.name In [node]``; otherwise the one-term selectors of the
    slices merged into one term; None when every slice is for all nodes. Raises ``ValueError`` for a
    slice selector of several terms."""
    fields_: list[NodeSelectorRequirement] = []
    exprs: list[NodeSelectorRequirement] = []
    for s in slices:
        if s.spec.node_name:
            req = NodeSelectorRequirement(key="metadata.name", operator=_Op.IN, values=[s.spec.node_name])
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[req])])
        sel = s.spec.node_selector
        if sel is not None:
            if len(sel.node_selector_terms) > 1:
                raise ValueError("unsupported ResourceSlice.NodeSelector with "
                                 f"{len(sel.node_selector_terms)} terms")
            if sel.node_selector_terms:
                _add_new(sel.node_selector_terms[0].match_fields, fields_)
                _add_new(sel.node_selector_terms[0].match_expressions, exprs)
    if fields_ or exprs:
        term = NodeSelectorTerm(match_fields=fields_, match_expressions=exprs)
        return NodeSelector(node_selector_terms=[term])
    return None
