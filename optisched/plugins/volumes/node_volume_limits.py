"""NodeVolumeLimits (CSI): a node attaches at most ``allocatable.count`` volumes of each CSI driver.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (v1.35). A pod's claims (and its
ephemeral volumes' claims) resolve to ``driver/volumeHandle`` through the bound PV's ``csi`` source, or,
unbound or with a missing PV, to the class's provisioner and a handle unique to the claim. In-tree volumes
(PVs, inline volumes, in-tree provisioners) count as the CSI volumes they were migrated to, on nodes where
migration is on (``volume_migration``). Volumes already attached on the node count once: those any pod
there uses, and those a VolumeAttachment attaches there (its PV's CSI handle under the attacher) that no
pod there uses -- a volume still being detached after its pod left (kubernetes#127757). As upstream, a
new pod's volume that only a VolumeAttachment holds counts both as attached and as new. The pod fails with
``Unschedulable`` where attached + its new volumes exceed the driver's limit from CSINode (or the node's
``attachable-volumes-csi-<driver>`` allocatable). A claim the new pod names but that is missing stops it
(``UnschedulableAndUnresolvable``); a missing claim of a pod already on the node is not counted.
Not modelled: the owner check of ephemeral volumes' claims; an in-tree source whose translation fails
(an ``aws://`` id that is not a volume) is not counted, where upstream reports an error for inline ones.
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from ...framework import Code, CycleState, Fidelity, FilterResult, Plugin, Status
from ...model.objects import Pod
from ...model.snapshot import Snapshot
from ...model.storage import StorageCatalog, pod_claims
from .. import names
from .volume_common import claim_not_found, storage_of
from .volume_migration import inline_volume, migrated_mask, provisioner_driver, pv_volume

if TYPE_CHECKING:
    from ...model.pod_index import PodIndex
    from ...optimal.classes import PodClass
    from ...optimal.model import BatchModel

__all__ = ["REASON", "LimitsWorld", "NodeVolumeLimits", "csi_volumes"]

REASON = "node(s) exceed max volume count"
LIMIT_PREFIX = "attachable-volumes-csi-"
NANO = 10**9
Vol = tuple[str, str, str]  # (driver, volume handle, in-tree plugin it was migrated from or "")


class MissingClaim(Exception):
    pass


def _claim_volume(pod: Pod, name: str, cat: StorageCatalog, new: bool) -> Vol | None:
    """``getCSIDriverInfo`` for one claim (None: not counted)."""
    ns = pod.metadata.namespace or "default"
    pvc = cat.claim(ns, name)
    if pvc is None:
        if new:
            raise MissingClaim(f"looking up PVC {ns}/{name}: {claim_not_found(name)}")
        return None
    pv = cat.volumes.get(pvc.spec.volume_name) if pvc.spec.volume_name else None
    if pv is not None:
        return (pv.spec.csi.driver, pv.spec.csi.volume_handle, "") if pv.spec.csi is not None else pv_volume(pv)
    sc = cat.classes.get(pvc.class_name) if pvc.class_name else None
    driver = provisioner_driver(sc.provisioner) if sc is not None else None
    # getCSIDriverInfoFromSC: a handle no real volume has
    return (driver[0], f"unbound-{ns}/{name}", driver[1]) if driver is not None else None


def csi_volumes(pod: Pod, cat: StorageCatalog, *, new: bool) -> list[Vol]:
    """``filterAttachableVolumes``: the pod's volumes, each once. A missing claim raises
    :class:`MissingClaim` for a new pod and is skipped for a scheduled one."""
    claims = {c.volume: c.name for c in pod_claims(pod)}
    out: dict[tuple[str, str], Vol] = {}
    for vol in pod.spec.volumes:
        v = _claim_volume(pod, claims[vol.name], cat, new) if vol.name in claims else inline_volume(vol)
        # one volume per ``driver/volumeHandle`` (upstream's volumeUniqueName): a CSI source and an in-tree
        # one migrated to it are the same volume, counted wherever the CSI one is (on every node)
        if v is not None and (v[:2] not in out or not v[2]):
            out[v[:2]] = v
    return list(out.values())


def counts_volumes(pod: Pod, cat: StorageCatalog) -> bool:
    """PreFilter's gate: a claim, an ephemeral volume or an inline in-tree volume, and storage objects."""
    if not pod.spec.volumes or not (cat.present or cat.csi_nodes):
        return False
    return bool(pod_claims(pod)) or any(inline_volume(v) is not None for v in pod.spec.volumes)


class NodeVolumeLimits(Plugin):
    name = names.NODE_VOLUME_LIMITS
    points = frozenset({"preFilter", "filter"})

    def __init__(self, snapshot: Snapshot, profile: object) -> None:
        self.state = state = snapshot.state
        self.storage = storage_of(snapshot)
        n = state.num_nodes
        self._vols: dict[int, list[Vol]] = {}
        self.refs: dict[tuple[str, str], np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self.attached: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(n, dtype=np.int32))
        self._limits: dict[str, np.ndarray] = {}
        self._migrated: dict[str, np.ndarray] = {}
        self.va = self._attachments()
        for (driver, _), at in self.va.items():
            self.attached[driver] += at
        snapshot.subscribe(self)

    def dry_run(self, cycle: CycleState, nodes: np.ndarray, index: PodIndex) -> LimitsWorld:
        """Per node, the volumes attached of the drivers the preemptor uses."""
        return LimitsWorld(self, cycle, nodes)

    def _attachments(self) -> dict[tuple[str, str], np.ndarray]:
        """``getNodeVolumeAttachmentInfo``: per ``attacher/volumeHandle``, the nodes a VolumeAttachment
        attaches it to; attachments without an attacher, a PV name, or a CSI PV are skipped."""
        out: dict[tuple[str, str], np.ndarray] = {}
        index = {name: i for i, name in enumerate(self.state.node_names)}
        for va in self.storage.attachments:
            pv = self.storage.volumes.get(va.spec.source.persistent_volume_name or "")
            node = index.get(va.spec.node_name)
            if not va.spec.attacher or pv is None or pv.spec.csi is None or node is None:
                continue
            at = out.setdefault((va.spec.attacher, pv.spec.csi.volume_handle), np.zeros(self.state.num_nodes, bool))
            at[node] = True
        return out

    def va_at(self, key: tuple[str, str], node: int) -> bool:
        at = self.va.get(key)
        return at is not None and bool(at[node])

    def counted(self, plugin: str) -> np.ndarray:
        """Per node: whether a volume migrated from ``plugin`` counts there."""
        m = self._migrated.get(plugin)
        if m is None:
            m = self._migrated[plugin] = migrated_mask(self.state, self.storage, plugin)
        return m

    def limit(self, driver: str) -> np.ndarray:
        """Per node: the driver's attach limit, -1 where none is set (``getVolumeLimits``)."""
        out = self._limits.get(driver)
        if out is None:
            out = np.full(self.state.num_nodes, -1, dtype=np.int64)
            for i, node in enumerate(self.state.nodes):
                v = node.allocatable.get(LIMIT_PREFIX + driver)
                if v is not None:
                    out[i] = v // NANO
                csi = self.storage.csi_nodes.get(node.metadata.name)
                for d in csi.spec.drivers if csi else ():
                    if d.name == driver and d.allocatable is not None and d.allocatable.count is not None:
                        out[i] = d.allocatable.count
            self._limits[driver] = out
        return out

    def volumes_of(self, pod: int) -> list[Vol]:
        vols = self._vols.get(pod)
        if vols is None:
            p = self.state.pods[pod]
            vols = self._vols[pod] = csi_volumes(p, self.storage, new=False) if counts_volumes(p, self.storage) else []
        return vols

    def fresh(self, vol: Vol, nodes: np.ndarray, refs: np.ndarray | None) -> np.ndarray:
        """Per node of ``nodes``: ``vol`` counts as a new volume there (no pod there uses it; migrated)."""
        out = np.ones(len(nodes), dtype=bool) if refs is None else refs == 0
        return out & self.counted(vol[2])[nodes] if vol[2] else out

    def _update(self, pod: int, node: int, d: int) -> None:
        for driver, handle, plugin in self.volumes_of(pod):
            if plugin and not self.counted(plugin)[node]:
                continue
            key = (driver, handle)
            before = self.refs[key][node]
            self.refs[key][node] += d
            if (before == 0) != (before + d == 0) and not self.va_at(key, node):
                self.attached[driver][node] += d

    def on_add(self, pod: int, node: int) -> None:
        self._update(pod, node, 1)

    def on_remove(self, pod: int, node: int) -> None:
        self._update(pod, node, -1)

    def pre_filter(self, cycle: CycleState) -> Status:
        pod = cycle.pod_obj
        if not counts_volumes(pod, self.storage):
            return Status.skip()
        try:
            cycle.data[self.name] = csi_volumes(pod, self.storage, new=True)
        except MissingClaim as e:
            cycle.data[self.name] = str(e)
        return Status()

    def filter(self, cycle: CycleState, nodes: np.ndarray) -> FilterResult:
        vols = cycle.data.get(self.name)
        if isinstance(vols, str):  # Filter reports the missing claim on every node
            return FilterResult.from_mask(np.ones(len(nodes), bool), vols, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        new: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(len(nodes), dtype=np.int64))
        for v in vols or ():
            refs = self.refs.get(v[:2])
            new[v[0]] += self.fresh(v, nodes, None if refs is None else refs[nodes])
        fails = np.zeros(len(nodes), dtype=bool)
        for driver, count in new.items():
            limit = self.limit(driver)[nodes]
            have = self.attached[driver][nodes] if driver in self.attached else 0
            fails |= (limit >= 0) & (have + count > limit)
        return FilterResult.from_mask(fails, REASON)

    # ------------------------------------------------------------------ CP-SAT side
    filter_fidelity = Fidelity.EXACT

    def restrict(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Against the fixed pods' attached volumes: the greedy verdict over every node."""
        model.restrict_by_filter(self, classes)

    def encode_filter(self, model: BatchModel, classes: list[PodClass]) -> None:
        """Per node and driver with a limit, where the batch may place a user: the distinct volumes of the
        classes there, beyond those the fixed pods (and VolumeAttachments) attach, fit in the room left."""
        from .volume_encoding import unique_within_limit

        users: dict[str, dict[tuple[str, str], list[PodClass]]] = defaultdict(lambda: defaultdict(list))
        for c in classes:
            for driver, handle, plugin in self.volumes_of(c.rep):
                users[driver][(handle, plugin)].append(c)
        for driver, handles in users.items():
            limit = self.limit(driver)
            for n in np.flatnonzero(limit >= 0).tolist():
                fresh: dict[str, list[PodClass]] = defaultdict(list)  # a handle may come from a CSI and an in-tree source
                for (h, plugin), g in handles.items():
                    if (not plugin or self.counted(plugin)[n]) and ((driver, h) not in self.refs
                                                                     or self.refs[(driver, h)][n] == 0):
                        fresh[h] += g
                room = int(limit[n]) - int(self.attached[driver][n] if driver in self.attached else 0)
                unique_within_limit(model, n, fresh, room, model.any_arrival(n))


class LimitsWorld:
    """NodeVolumeLimits over candidate nodes with victims taken off and put back (vectorized
    preemption's dry runs): per node, the volumes attached of the drivers the preemptor uses."""

    def __init__(self, rule: NodeVolumeLimits, cycle: CycleState, nodes: np.ndarray) -> None:
        self.rule = rule
        vols = cycle.data.get(rule.name) or []
        self.missing = vols if isinstance(vols, str) else None
        self.mine: list[Vol] = [] if self.missing else list(vols)
        drivers = {v[0] for v in self.mine}
        self.limit = {d: rule.limit(d)[nodes] for d in drivers}
        self.attached = {d: (rule.attached[d][nodes].copy() if d in rule.attached else np.zeros(len(nodes), np.int64))
                         for d in drivers}
        self.nodes = nodes
        self.refs: dict[tuple[str, str], np.ndarray] = {}

    def _refs(self, key: tuple[str, str]) -> np.ndarray:
        r = self.refs.get(key)
        if r is None:
            src = self.rule.refs.get(key)
            r = self.refs[key] = src[self.nodes].copy() if src is not None else np.zeros(len(self.nodes), np.int32)
        return r

    def move(self, pos: np.ndarray, pods: np.ndarray, sign: int) -> None:
        for q, p in zip(pos.tolist(), pods.tolist()):
            node = int(self.nodes[q])
            for driver, handle, plugin in self.rule.volumes_of(p):
                if driver not in self.attached or (plugin and not self.rule.counted(plugin)[node]):
                    continue
                r = self._refs((driver, handle))
                before = int(r[q])
                r[q] += sign
                if (before == 0) != (before + sign == 0) and not self.rule.va_at((driver, handle), node):
                    self.attached[driver][q] += sign

    def check(self, qs: np.ndarray) -> FilterResult:
        if self.missing:
            return FilterResult.from_mask(np.ones(len(qs), bool), self.missing, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        fails = np.zeros(len(qs), dtype=bool)
        for d in self.attached:
            new = np.zeros(len(qs), dtype=np.int64)
            for v in self.mine:
                if v[0] == d:
                    new += self.rule.fresh(v, self.nodes[qs], self._refs(v[:2])[qs])
            lim = self.limit[d][qs]
            fails |= (lim >= 0) & (self.attached[d][qs] + new > lim)
        return FilterResult.from_mask(fails, REASON)
