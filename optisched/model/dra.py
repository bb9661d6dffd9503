"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``), the fields kube-scheduler's
DynamicResources plugin and its structured allocator read.

Upstream: ``staging/src/k8s.io/api/resource/v1/types.go`` of v1.35.4. A device's attributes keep their
one-of value (``int``, ``bool``, ``string``, ``version``); capacities keep their quantity string (CEL's
``quantity()`` compares them, :mod:`optisched.plugins.dynamicresources.cel`). Fields of alpha features
that the default gates of 1.35 turn off (consumable capacity, device taints, binding conditions,
partitionable devices' counters) are read but not modelled: a slice or claim that uses them is named by
:func:`unmodelled_fields`.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from .objects import _M, Int64, KubeObject, List, NodeSelector, _none_as_empty, _none_as_empty_map

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "AllocationResult",
    "CELSelector",
    "ConsumerRef",
    "Device",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceClaim",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceSelector",
    "DeviceSubRequest",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimSpec",
    "ResourceClaimTemplate",
    "ResourcePool",
    "ResourceSlice",
    "device_id",
    "qualify",
]

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def qualify(name: str, driver: str) -> str:
    """A ``QualifiedName``: ``domain/id``, or ``id`` of the driver's own domain (``driver/id``)."""
    return name if "/" in name else f"{driver}/{name}"


def device_id(driver: str, pool: str, device: str) -> str:
    """``structured.DeviceID``'s string form, ``driver/pool/device``, as traces write it."""
    return f"{driver}/{pool}/{device}"


# ---------------------------------------------------------------- DeviceClass
class CELSelector(_M):
    expression: str = Field(min_length=1)


class DeviceSelector(_M):
    cel: CELSelector | None = None


class DeviceClassSpec(_M):
    selectors: Annotated[list[DeviceSelector], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    config: List = Field(default_factory=list)
    extended_resource_name: str | None = None


class DeviceClass(KubeObject):
    kind: str = "DeviceClass"
    spec: DeviceClassSpec = DeviceClassSpec()


# ---------------------------------------------------------------- ResourceSlice
class DeviceAttribute(_M):
    """Exactly one of ``int``, ``bool``, ``string``, ``version`` (a semantic version string)."""

    int_: Int64 | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None

    @model_validator(mode="after")
    def _one(self) -> DeviceAttribute:
        if sum(v is not None for v in (self.int_, self.bool_, self.string, self.version)) != 1:
            raise ValueError("exactly one of int, bool, string and version must be set")
        return self

    @property
    def value(self) -> int | bool | str:
        for v in (self.int_, self.bool_, self.string, self.version):
            if v is not None:
                return v
        raise AssertionError  # _one makes one set

    @property
    def type(self) -> str:
        return ("int" if self.int_ is not None else "bool" if self.bool_ is not None
                else "string" if self.string is not None else "version")


class DeviceCapacity(_M):
    value: str  # a resource.Quantity, kept as written
    request_policy: dict | None = None

    @model_validator(mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> Any:
        if isinstance(v, dict) and isinstance(v.get("value"), int | float):
            return {**v, "value": str(v["value"])}
        return v


class Device(_M):
    name: str = Field(min_length=1)
    attributes: Annotated[dict[str, DeviceAttribute], BeforeValidator(_none_as_empty_map)] = Field(default_factory=dict)
    capacity: Annotated[dict[str, DeviceCapacity], BeforeValidator(_none_as_empty_map)] = Field(default_factory=dict)
    # per-device node selection (spec.perDeviceNodeSelection slices), alpha fields kept to be refused
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    consumes_counters: List = Field(default_factory=list)
    taints: List = Field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: List = Field(default_factory=list)
    binding_failure_conditions: List = Field(default_factory=list)
    allow_multiple_allocations: bool | None = None


class ResourcePool(_M):
    name: str = Field(min_length=1)
    generation: Int64 = 0
    resource_slice_count: Int64 = Field(default=1, ge=1)


class ResourceSliceSpec(_M):
    driver: str = Field(min_length=1)
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: Annotated[list[Device], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    shared_counters: List = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_node_selection(self) -> ResourceSliceSpec:
        chosen = [self.node_name is not None and self.node_name != "", self.node_selector is not None,
                  bool(self.all_nodes), bool(self.per_device_node_selection)]
        if sum(chosen) != 1:
            raise ValueError("exactly one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection "
                             "must be set")
        return self


class ResourceSlice(KubeObject):
    kind: str = "ResourceSlice"
    spec: ResourceSliceSpec


# ---------------------------------------------------------------- ResourceClaim
class DeviceSubRequest(_M):
    name: str = Field(min_length=1)
    device_class_name: str = Field(min_length=1)
    selectors: Annotated[list[DeviceSelector], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: Int64 = 1
    tolerations: List = Field(default_factory=list)
    capacity: dict | None = None

    @model_validator(mode="after")
    def _mode(self) -> DeviceSubRequest:
        if self.allocation_mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
            raise ValueError(f"allocationMode must be ExactCount or All, not {self.allocation_mode!r}")
        if self.allocation_mode == ALLOCATION_MODE_EXACT_COUNT and self.count < 1:
            raise ValueError("count must be at least 1")
        return self


class ExactDeviceRequest(DeviceSubRequest):
    """``exactly``: a sub-request without a name of its own, with ``adminAccess``."""

    name: str = ""
    admin_access: bool | None = None


class DeviceRequest(_M):
    name: str = Field(min_length=1)
    exactly: ExactDeviceRequest | None = None
    first_available: Annotated[list[DeviceSubRequest], BeforeValidator(_none_as_empty)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one(self) -> DeviceRequest:
        if (self.exactly is None) == (not self.first_available):
            raise ValueError("exactly one of exactly and firstAvailable must be set")
        return self


class DeviceConstraint(_M):
    requests: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaim(_M):
    requests: Annotated[list[DeviceRequest], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    constraints: Annotated[list[DeviceConstraint], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    config: List = Field(default_factory=list)


class ResourceClaimSpec(_M):
    devices: DeviceClaim = DeviceClaim()


class DeviceAllocationResult(_M):
    request: str  # "request" or "request/subrequest"
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    share_id: str | None = None
    consumed_capacity: dict | None = None

    @property
    def id(self) -> str:
        return device_id(self.driver, self.pool, self.device)


class DeviceAllocation(_M):
    results: Annotated[list[DeviceAllocationResult], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    config: List = Field(default_factory=list)


class AllocationResult(_M):
    devices: DeviceAllocation = DeviceAllocation()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ConsumerRef(_M):
    api_group: str = ""
    resource: str
    name: str
    uid: str = ""


class ResourceClaimStatus(_M):
    allocation: AllocationResult | None = None
    reserved_for: Annotated[list[ConsumerRef], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    devices: List = Field(default_factory=list)


class ResourceClaim(KubeObject):
    kind: str = "ResourceClaim"
    spec: ResourceClaimSpec = ResourceClaimSpec()
    status: ResourceClaimStatus = ResourceClaimStatus()

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"


class ResourceClaimTemplateSpec(_M):
    metadata: dict = Field(default_factory=dict)
    spec: ResourceClaimSpec = ResourceClaimSpec()


class ResourceClaimTemplate(KubeObject):
    kind: str = "ResourceClaimTemplate"
    spec: ResourceClaimTemplateSpec = ResourceClaimTemplateSpec()
