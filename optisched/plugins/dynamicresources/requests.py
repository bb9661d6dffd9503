"""A claim's requests as the structured allocator reads them: one entry per request or subrequest, the
``matchAttribute`` constraint, the fields of features off by default, and the configuration an allocation
carries.

Upstream: ``requestData``, ``matchAttributeConstraint``, ``lookupAttribute`` and the configuration part of
``Allocate`` in ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/
allocator_incubating.go`` of v1.35.4.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...model.dra import (
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceRequest,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)

__all__ = ["Candidate", "MatchAttribute", "RequestData", "allocation_config", "kobj", "unmodelled_request"]


def kobj(claim: ResourceClaim) -> str:
    """``klog.KObj``: ``namespace/name``, or ``name`` without a namespace."""
    ns = claim.metadata.namespace
    return f"{ns}/{claim.metadata.name}" if ns else claim.metadata.name


@dataclass
class RequestData:
    """``requestData``: a request without subrequests, or one subrequest (``parent`` set)."""

    name: str
    parent: str | None
    device_class: DeviceClass
    spec: DeviceSubRequest
    admin_access: bool
    num_devices: int = 0
    all_devices: list[Candidate] = field(default_factory=list)
    selected: int = 0  # on subrequest 0's entry: the subrequest chosen

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent is not None else self.name


@dataclass(frozen=True)
class Candidate:
    id: str
    pool: str
    device: Device
    slice: ResourceSlice
    slice_key: int  # position in the allocator's sorted slices: keys the selector cache


class MatchAttribute:
    """``matchAttributeConstraint``: every device of the named requests (all requests when none is
    named) has the attribute, with one value. Only how many devices are in the set is tracked."""

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: DeviceAttribute | None = None
        self.count = 0

    def _applies(self, request: str, sub: str | None) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (sub is not None and f"{request}/{sub}" in self.requests)

    def _lookup(self, device: Device, driver: str) -> DeviceAttribute | None:
        attrs = device.attributes
        if self.attribute in attrs:
            return attrs[self.attribute]
        domain, sep, ident = self.attribute.partition("/")
        if not sep or domain != driver:
            return None
        return attrs.get(ident)

    def add(self, request: str, sub: str | None, device: Device, driver: str) -> bool:
        if not self._applies(request, sub):
            return True
        attr = self._lookup(device, driver)
        if attr is None:
            return False
        if self.count == 0:
            self.value, self.count = attr, 1
            return True
        assert self.value is not None
        if attr.type != self.value.type or attr.value != self.value.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub: str | None) -> None:
        if self._applies(request, sub):
            self.count -= 1


def unmodelled_request(claim: ResourceClaim, r: DeviceRequest) -> str | None:
    subs: list[tuple[str, DeviceSubRequest]] = [(f"spec.devices.requests[{r.name}].exactly", r.exactly)] \
        if r.exactly is not None else \
        [(f"spec.devices.requests[{r.name}].firstAvailable[{s.name}]", s) for s in r.first_available]
    for path, s in subs:
        if s.tolerations:
            return f"ResourceClaim {kobj(claim)}: {path}.tolerations (DRADeviceTaints) is not modelled"
        if s.capacity is not None:
            return f"ResourceClaim {kobj(claim)}: {path}.capacity (DRAConsumableCapacity) is not modelled"
    return None


def allocation_config(claim: ResourceClaim, chosen: Callable[[int], RequestData]) -> list[dict]:
    """``Devices.Config``: each class's configs once, naming every request that uses the class, then the
    claim's configs for the requests (or chosen subrequests) they name, as upstream appends them."""
    out: list[dict] = []
    spans: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.spec.devices.requests)):
        rd = chosen(ri)
        cls_name = rd.device_class.metadata.name
        if cls_name in spans:
            for i in range(*spans[cls_name]):
                out[i]["requests"].append(rd.full_name)
            continue
        start = len(out)
        for cfg in rd.device_class.spec.config:
            out.append({"source": "FromClass", "requests": [rd.full_name],
                        **{k: v for k, v in dict(cfg).items() if k != "requests"}})
        spans[cls_name] = (start, len(out))
    for cfg in claim.spec.devices.config:
        named = list(cfg.get("requests") or [])
        entry = {"source": "FromClaim", "requests": named,
                 **{k: v for k, v in dict(cfg).items() if k != "requests"}}
        if not named:
            out.append(entry)
            continue
        for ri, request in enumerate(claim.spec.devices.requests):
            if request.name in named:
                out.append(dict(entry))
                continue
            rd = chosen(ri)
            if rd.parent is not None and rd.full_name in named:
                out.append(dict(entry))
    return out
