"""Pydantic models of the Kubernetes API subset kube-scheduler reads.

Field names and defaults are the API's (camelCase aliases, ``core/v1``,
``policy/v1``, ``scheduling.k8s.io/v1``, ``apps/v1``). Fields the scheduler does
not read are ignored. Validation mirrors what the API server would reject and
what the scheduler would choke on; quantities become integer nano units.
"""
from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from itertools import pairwise
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .hourly_cost import check_cost
from .quantity import INT64_MAX, QuantityError, parse_quantity, to_scheduler_units

__all__ = [
    "Affinity",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "ContainerRestartRule",
    "ContainerRestartRuleOnExitCodes",
    "ContainerStatus",
    "DiskSource",
    "ImageVolumeSource",
    "KubeObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelector",
    "NodeSelectorOperator",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OwnerReference",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodDisruptionBudget",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSchedulingGroup",
    "PreemptionPolicy",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "ReplicaSet",
    "ReplicationController",
    "ResourceRequirements",
    "SelectorOperator",
    "Service",
    "StatefulSet",
    "Taint",
    "TaintEffect",
    "Toleration",
    "TopologySpreadConstraint",
    "Volume",
    "WeightedPodAffinityTerm",
    "WorkloadReference",
]


_PERCENT = re.compile(r"[0-9]+%")


class _M(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


def _resource_list(v: Any) -> dict[str, int]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"expected a mapping of resource name to quantity, got {type(v).__name__}")  # noqa: TRY004 (pydantic reports ValueError)
    out: dict[str, int] = {}
    for k, q in v.items():
        try:
            n = parse_quantity(q)
        except QuantityError as e:
            raise ValueError(f"{k}: {e}") from None
        except TypeError:
            raise ValueError(f"{k}: {q!r} is not a quantity") from None
        if n < 0:
            raise ValueError(f"{k}: {q!r} must not be negative")
        if to_scheduler_units(str(k), n) > INT64_MAX:
            unit = "millicores" if k == "cpu" else "units"
            raise ValueError(f"{k}: {q!r} is beyond the int64 range in {unit}")
        out[str(k)] = n
    return out


ResourceList = Annotated[dict[str, int], BeforeValidator(_resource_list)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
"""An API ``int32`` field."""
Int64 = Annotated[int, Field(ge=-(2**63), le=INT64_MAX)]
"""An API ``int64`` field."""
"""Resource name -> quantity in nano units (see :mod:`optisched.model.quantity`)."""


def _none_as_empty(v: Any) -> Any:
    return [] if v is None else v


def _none_as_empty_map(v: Any) -> Any:
    return {} if v is None else v


List = Annotated[list, BeforeValidator(_none_as_empty)]
Labels = Annotated[dict[str, str], BeforeValidator(_none_as_empty_map)]


class OwnerReference(_M):
    api_version: str = ""
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


class ObjectMeta(_M):
    name: str = Field(min_length=1)
    namespace: str | None = None
    uid: str = ""
    labels: Labels = Field(default_factory=dict)
    annotations: Labels = Field(default_factory=dict)
    owner_references: Annotated[list[OwnerReference], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None


# ---------------------------------------------------------------- selectors
class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class NodeSelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


class LabelSelectorRequirement(_M):
    key: str = Field(min_length=1)
    operator: SelectorOperator
    values: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not self.values:
            raise ValueError(f"operator {self.operator.value} needs at least one value")
        if self.operator in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST) and self.values:
            raise ValueError(f"operator {self.operator.value} takes no values")
        return self


class LabelSelector(_M):
    match_labels: Labels = Field(default_factory=dict)
    match_expressions: Annotated[list[LabelSelectorRequirement], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class NodeSelectorRequirement(_M):
    key: str = Field(min_length=1)
    operator: NodeSelectorOperator
    values: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit_operator(self) -> NodeSelectorRequirement:
        op = self.operator
        if op in (NodeSelectorOperator.IN, NodeSelectorOperator.NOT_IN) and not self.values:
            raise ValueError(f"operator {op.value} needs at least one value")
        if op in (NodeSelectorOperator.EXISTS, NodeSelectorOperator.DOES_NOT_EXIST) and self.values:
            raise ValueError(f"operator {op.value} takes no values")
        if op in (NodeSelectorOperator.GT, NodeSelectorOperator.LT) and len(self.values) != 1:
            # as the API server checks it; a value that is no integer passes, and the term then matches
            # no node (model/selectors.py), as in kube-scheduler
            raise ValueError(f"operator {op.value} needs exactly one value")
        return self


class NodeSelectorTerm(_M):
    match_expressions: Annotated[list[NodeSelectorRequirement], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    match_fields: Annotated[list[NodeSelectorRequirement], BeforeValidator(_none_as_empty)] = Field(default_factory=list)

    @field_validator("match_fields")
    @classmethod
    def _only_metadata_name(cls, v: list[NodeSelectorRequirement]) -> list[NodeSelectorRequirement]:
        for r in v:
            if r.key != "metadata.name":
                raise ValueError(f"matchFields supports only the key metadata.name, got {r.key!r}")
            if r.operator not in (NodeSelectorOperator.IN, NodeSelectorOperator.NOT_IN):
                raise ValueError(f"matchFields supports only In and NotIn, got {r.operator.value}")
        return v


class NodeSelector(_M):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1)


class PreferredSchedulingTerm(_M):
    weight: int = Field(ge=1, le=100)
    preference: NodeSelectorTerm


class NodeAffinity(_M):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: Annotated[
        list[PreferredSchedulingTerm], BeforeValidator(_none_as_empty)
    ] = Field(default_factory=list)


class PodAffinityTerm(_M):
    label_selector: LabelSelector | None = None
    namespaces: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    topology_key: str = Field(min_length=1)
    namespace_selector: LabelSelector | None = None
    match_label_keys: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    mismatch_label_keys: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class WeightedPodAffinityTerm(_M):
    weight: int = Field(ge=1, le=100)
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_M):
    required_during_scheduling_ignored_during_execution: Annotated[
        list[PodAffinityTerm], BeforeValidator(_none_as_empty)
    ] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: Annotated[
        list[WeightedPodAffinityTerm], BeforeValidator(_none_as_empty)
    ] = Field(default_factory=list)


PodAntiAffinity = PodAffinity


class Affinity(_M):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# ---------------------------------------------------------------- taints
class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class TolerationOperator(StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"


class Taint(_M):
    key: str = Field(min_length=1)
    value: str = ""
    effect: TaintEffect


class Toleration(_M):
    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: TaintEffect | None = None
    toleration_seconds: Int64 | None = None

    @field_validator("effect", mode="before")
    @classmethod
    def _empty_effect(cls, v: Any) -> Any:
        return None if v == "" else v

    @model_validator(mode="after")
    def _check(self) -> Toleration:
        if self.operator == TolerationOperator.EXISTS and self.value:
            raise ValueError("operator Exists takes no value")
        if not self.key and self.operator != TolerationOperator.EXISTS:
            raise ValueError("an empty key needs operator Exists")
        return self

    def tolerates(self, taint: Taint) -> bool:
        """``Toleration.ToleratesTaint`` (core/v1 toleration.go)."""
        if self.effect is not None and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == TolerationOperator.EXISTS:
            return True
        return self.value == taint.value


# ---------------------------------------------------------------- spread
class TopologySpreadConstraint(_M):
    max_skew: int = Field(ge=1, le=2**31 - 1)  # int32
    topology_key: str = Field(min_length=1)
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = Field(default=None, ge=1, le=2**31 - 1)  # int32
    match_label_keys: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"

    @field_validator("when_unsatisfiable")
    @classmethod
    def _when(cls, v: str) -> str:
        if v not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ValueError(f"{v!r} is not one of DoNotSchedule, ScheduleAnyway")
        return v

    @field_validator("node_affinity_policy", "node_taints_policy", mode="before")
    @classmethod
    def _policy(cls, v: Any) -> str:
        if v is None:
            return "__default__"
        if v not in ("Honor", "Ignore"):
            raise ValueError(f"{v!r} is not one of Honor, Ignore")
        return v

    @model_validator(mode="after")
    def _defaults(self) -> TopologySpreadConstraint:
        if self.node_affinity_policy == "__default__":
            object.__setattr__(self, "node_affinity_policy", "Honor")
        if self.node_taints_policy == "__default__":
            object.__setattr__(self, "node_taints_policy", "Ignore")
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise ValueError("minDomains may only be set with whenUnsatisfiable DoNotSchedule")
        return self


# ---------------------------------------------------------------- pod
class ResourceRequirements(_M):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)


class ContainerPort(_M):
    container_port: int = Field(default=0, ge=0, le=65535)
    host_port: int = Field(default=0, ge=0, le=65535)
    protocol: str = "TCP"
    host_ip: str = Field(default="", alias="hostIP")

    @field_validator("protocol", mode="before")
    @classmethod
    def _proto(cls, v: Any) -> Any:
        if v is None or v == "":
            return "TCP"
        if v not in ("TCP", "UDP", "SCTP"):
            raise ValueError(f"{v!r} is not one of TCP, UDP, SCTP")
        return v


class ContainerRestartRuleOnExitCodes(_M):
    """``restartPolicyRules[].exitCodes``: ``In`` or ``NotIn`` at most 255 exit codes."""

    operator: str
    values: Annotated[list[Int32], BeforeValidator(_none_as_empty)] = Field(default_factory=list, max_length=255)

    @field_validator("operator")
    @classmethod
    def _op(cls, v: str) -> str:
        if v not in ("In", "NotIn"):
            raise ValueError(f"{v!r} is not one of In, NotIn")
        return v


class ContainerRestartRule(_M):
    """``containers[].restartPolicyRules[]`` (``validateContainerRestartPolicy``, kubernetes v1.36.2
    ``pkg/apis/core/validation/validation.go``): ``RestartAllContainers`` is the action of the
    ``RestartAllContainersOnContainerExits`` gate, on by default from 1.36."""

    action: str
    exit_codes: ContainerRestartRuleOnExitCodes

    @field_validator("action")
    @classmethod
    def _action(cls, v: str) -> str:
        if v not in ("Restart", "RestartAllContainers"):
            raise ValueError(f"{v!r} is not one of Restart, RestartAllContainers")
        return v


class Container(_M):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements = ResourceRequirements()
    ports: Annotated[list[ContainerPort], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    restart_policy: str | None = None
    restart_policy_rules: Annotated[list[ContainerRestartRule], BeforeValidator(_none_as_empty)] = Field(
        default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _rules_need_a_policy(self) -> Container:
        if self.restart_policy_rules and self.restart_policy is None:
            raise ValueError("restartPolicy: must specify restartPolicy when restart rules are used")
        return self


class PreemptionPolicy(StrEnum):
    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
    NEVER = "Never"


class PVCSource(_M):
    claim_name: str = ""
    read_only: bool = False


class DiskSource(_M):
    """The in-tree disk sources VolumeRestrictions compares: GCE PD (``pdName``), AWS EBS (``volumeID``),
    iSCSI (``iqn``) and Ceph RBD (``monitors``, ``pool``, ``image``)."""

    pd_name: str = ""
    volume_id: str = Field("", alias="volumeID")
    iqn: str = ""
    monitors: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    pool: str = "rbd"
    image: str = ""
    read_only: bool = False


class ImageVolumeSource(_M):
    """``volumes[].image``: an OCI image mounted as a volume (``ImageVolumeSource``); ImageLocality
    counts ``reference`` since v1.36."""

    reference: str = ""
    pull_policy: str | None = None


class Volume(_M):
    name: str = ""
    persistent_volume_claim: PVCSource | None = None
    ephemeral: dict | None = None
    empty_dir: dict | None = None  # local storage: a pod with it is protected from eviction by default
    host_path: dict | None = None
    gce_persistent_disk: DiskSource | None = None
    aws_elastic_block_store: DiskSource | None = None
    iscsi: DiskSource | None = Field(None, alias="iscsi")
    rbd: DiskSource | None = Field(None, alias="rbd")
    azure_disk: dict | None = None  # in-tree sources NodeVolumeLimits counts once migrated to CSI
    cinder: dict | None = None
    portworx_volume: dict | None = None
    image: ImageVolumeSource | None = None


class PodResourceClaim(_M):
    """``spec.resourceClaims[]``: exactly one of a claim name and a template name."""

    name: str = Field(min_length=1)
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None

    @model_validator(mode="after")
    def _one(self) -> PodResourceClaim:
        if (self.resource_claim_name is None) == (self.resource_claim_template_name is None):
            raise ValueError("exactly one of resourceClaimName and resourceClaimTemplateName must be set")
        return self


class PodResourceClaimStatus(_M):
    """``status.resourceClaimStatuses[]``: the claim the resourceclaim controller made from a template."""

    name: str
    resource_claim_name: str | None = None


def _get(data: dict, *keys: str) -> Any:
    """The value of the first of ``keys`` (an API name, then the Python one) that ``data`` has."""
    return next((data[k] for k in keys if k in data), None)


def _default_host_ports(container: Any) -> Any:
    """``defaultHostNetworkPorts`` for one container of the raw input (anything else is left to validation)."""
    ports = _get(container, "ports") if isinstance(container, dict) else None
    if not isinstance(ports, list):
        return container
    out = []
    for port in ports:
        if isinstance(port, dict) and not _get(port, "hostPort", "host_port"):
            port = {**{k: v for k, v in port.items() if k not in ("hostPort", "host_port")},
                    "hostPort": _get(port, "containerPort", "container_port") or 0}
        out.append(port)
    return {**container, "ports": out}


class WorkloadReference(_M):
    """``spec.workloadRef`` (1.35, GenericWorkload): the Workload and pod group a pod belongs to."""

    name: str = Field(min_length=1)
    pod_group: str = Field(min_length=1)
    pod_group_replica_key: str | None = None


class PodSchedulingGroup(_M):
    """``spec.schedulingGroup`` (1.36, GenericWorkload): the PodGroup a pod belongs to."""

    pod_group_name: str | None = None


class PodSpec(_M):
    node_name: str | None = None
    scheduler_name: str = "default-scheduler"
    containers: list[Container] = Field(min_length=1)
    init_containers: Annotated[list[Container], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None
    node_selector: Labels = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: Annotated[list[Toleration], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    topology_spread_constraints: Annotated[list[TopologySpreadConstraint], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    priority: Int32 | None = None
    priority_class_name: str | None = None
    preemption_policy: PreemptionPolicy | None = None
    volumes: Annotated[list[Volume], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    resource_claims: Annotated[list[PodResourceClaim], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    scheduling_gates: Annotated[list[dict], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    workload_ref: WorkloadReference | None = None
    scheduling_group: PodSchedulingGroup | None = None
    host_network: bool = False
    host_users: bool | None = None  # unset means true: the pod shares the host's user namespace

    @model_validator(mode="before")
    @classmethod
    def _host_network_ports(cls, data: Any) -> Any:
        """``SetDefaults_Pod`` (kubernetes v1.36.2 ``pkg/apis/core/v1/defaults.go``): a host network pod's
        container ports without a ``hostPort`` take their ``containerPort`` as it."""
        if not isinstance(data, dict) or _get(data, "hostNetwork", "host_network") is not True:
            return data
        out = dict(data)
        for keys in (("containers",), ("initContainers", "init_containers")):
            key = next((k for k in keys if k in data), None)
            if key is not None and isinstance(data[key], list):
                out[key] = [_default_host_ports(c) for c in data[key]]
        return out

    @model_validator(mode="after")
    def _host_ports_match(self) -> PodSpec:
        """``validatePodHostNetworkDeps``: on the host network a container's hostPort is its containerPort."""
        if self.host_network:
            for i, c in enumerate(self.containers):
                for j, port in enumerate(c.ports):
                    if port.host_port != port.container_port:
                        raise ValueError(f"containers[{i}].ports[{j}].hostPort: Invalid value: {port.host_port}: "
                                         "must match `containerPort` when `hostNetwork` is true")
        return self

    @model_validator(mode="after")
    def _sums_fit_int64(self) -> PodSpec:
        """The requests of all containers and the overhead, added up, stay within int64 in scheduler units
        (an upper bound of ``PodRequests``; Go's int64 would wrap where Python's integers do not)."""
        total: dict[str, int] = {}
        for c in (*self.containers, *self.init_containers):
            for k, n in {**c.resources.limits, **c.resources.requests}.items():
                total[k] = total.get(k, 0) + n
        for k, n in self.overhead.items():
            total[k] = total.get(k, 0) + n
        for k, n in total.items():
            if to_scheduler_units(k, n) > INT64_MAX:
                raise ValueError(f"the {k} requests of the containers add up beyond the int64 range")
        return self

    @field_validator("scheduler_name", mode="before")
    @classmethod
    def _sched(cls, v: Any) -> Any:
        return "default-scheduler" if v in (None, "") else v

    @field_validator("node_name", mode="before")
    @classmethod
    def _node(cls, v: Any) -> Any:
        return None if v == "" else v


class ContainerStatus(_M):
    """``status.containerStatuses[]`` / ``initContainerStatuses[]``: what an in-place resize reads, the
    resources the runtime reports (actuated) and those the kubelet allocated."""

    name: str = ""
    resources: ResourceRequirements | None = None
    allocated_resources: ResourceList = Field(default_factory=dict)


class PodCondition(_M):
    type: str = ""
    status: str = ""
    reason: str = ""

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        return "" if v is None else v


class PodStatus(_M):
    phase: str = "Pending"
    nominated_node_name: str | None = None
    start_time: datetime | None = None
    conditions: Annotated[list[PodCondition], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    container_statuses: Annotated[list[ContainerStatus], BeforeValidator(_none_as_empty)] = Field(
        default_factory=list)
    init_container_statuses: Annotated[list[ContainerStatus], BeforeValidator(_none_as_empty)] = Field(
        default_factory=list)
    # pod-level resources: actuated (``status.resources``) and allocated (``status.allocatedResources``)
    resources: ResourceRequirements | None = None
    allocated_resources: ResourceList = Field(default_factory=dict)
    resource_claim_statuses: Annotated[list[PodResourceClaimStatus], BeforeValidator(_none_as_empty)] = Field(
        default_factory=list)

    def without_resize(self) -> PodStatus:
        """This status with no container statuses, pod-level resources or ``PodResizePending``: what a
        pod pending again (re-created by its controller, or taken off its node) reports."""
        return self.model_copy(update={
            "container_statuses": [], "init_container_statuses": [], "resources": None,
            "allocated_resources": {},
            "conditions": [c for c in self.conditions if c.type != "PodResizePending"]})


class KubeObject(_M):
    """Common shape: ``apiVersion``, ``kind``, ``metadata``."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta

    @property
    def ref(self) -> str:
        """``Kind/name`` or ``Kind/namespace/name``: how errors and reports name the object."""
        ns = self.metadata.namespace
        return f"{self.kind}/{ns}/{self.metadata.name}" if ns else f"{self.kind}/{self.metadata.name}"


class Pod(KubeObject):
    kind: str = "Pod"
    spec: PodSpec
    status: PodStatus = PodStatus()

    @property
    def key(self) -> str:
        """``namespace/name``, the key traces and placements use."""
        return f"{self.metadata.namespace or 'default'}/{self.metadata.name}"


# ---------------------------------------------------------------- node
class ContainerImage(_M):
    names: Annotated[list[str], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    size_bytes: int = Field(default=0, ge=0, le=INT64_MAX)  # int64


class NodeSpec(_M):
    unschedulable: bool = False
    taints: Annotated[list[Taint], BeforeValidator(_none_as_empty)] = Field(default_factory=list)


class NodeSystemInfo(_M):
    """``status.nodeInfo``, the one field read: the kubelet's version (``v1.36.2``, ``v1.36.2-eks-...``)."""

    kubelet_version: str = ""


# validation.go nodeDeclaredFeatureRegexp: an UpperCamelCase segment, then '/'-separated segments
_DECLARED_FEATURE = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")


def _declared_feature(v: Any) -> Any:
    """``validateNodeDeclaredFeatureName`` (kubernetes v1.36.2 ``pkg/apis/core/validation/validation.go``)."""
    if not isinstance(v, str):
        return v  # pydantic reports the type
    if len(v) > 253:
        raise ValueError(f"invalid feature name {v!r}: must be no more than 253 characters")
    if not _DECLARED_FEATURE.fullmatch(v):
        raise ValueError(f"invalid feature name {v!r}: must start with an UpperCamelCase segment, with subsequent "
                         "segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only "
                         "alphanumeric characters and slashes")
    return v


class NodeStatus(_M):
    node_info: NodeSystemInfo = NodeSystemInfo()
    capacity: ResourceList = Field(default_factory=dict)
    allocatable: ResourceList = Field(default_factory=dict)
    images: Annotated[list[ContainerImage], BeforeValidator(_none_as_empty)] = Field(default_factory=list)
    # the kubelet's declared features (v1.36: the NodeDeclaredFeatures gate, on by default)
    declared_features: Annotated[list[Annotated[str, BeforeValidator(_declared_feature)]],
                                 BeforeValidator(_none_as_empty)] = Field(default_factory=list)

    @field_validator("declared_features")
    @classmethod
    def _sorted_unique(cls, v: list[str]) -> list[str]:
        """``validateNodeDeclaredFeatures``: the API server keeps the list sorted and without duplicates."""
        for i, (a, b) in enumerate(pairwise(v), start=1):
            if a == b:
                raise ValueError(f"[{i}] {b!r}: Duplicate value")
            if a > b:
                raise ValueError(f"[{i}] {b!r}: list must be sorted alphabetically")
        return v


class Node(KubeObject):
    kind: str = "Node"
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()
    _cost_is_a_price = model_validator(mode="after")(check_cost)

    @property
    def allocatable(self) -> dict[str, int]:
        """``status.allocatable``, falling back per resource to ``status.capacity`` (nano units)."""
        return {**self.status.capacity, **self.status.allocatable}


def cordoned(nodes: list[Node], names: set[str] | frozenset[str]) -> list[Node]:
    """``nodes`` with those named in ``names`` marked unschedulable, as ``kubectl cordon`` leaves them
    (``spec.unschedulable: true``); the others are the same objects."""
    return [n.model_copy(update={"spec": n.spec.model_copy(update={"unschedulable": True})})
            if n.metadata.name in names else n for n in nodes]


# ---------------------------------------------------------------- others
class PriorityClass(KubeObject):
    kind: str = "PriorityClass"
    value: int = Field(ge=-2147483648, le=1000000000 * 2 + 1000)
    global_default: bool = False
    preemption_policy: PreemptionPolicy = PreemptionPolicy.PREEMPT_LOWER_PRIORITY

    @field_validator("preemption_policy", mode="before")
    @classmethod
    def _pp(cls, v: Any) -> Any:
        return PreemptionPolicy.PREEMPT_LOWER_PRIORITY if v is None else v


class PDBSpec(_M):
    min_available: Int32 | str | None = None
    max_unavailable: Int32 | str | None = None
    selector: LabelSelector | None = None

    @field_validator("min_available", "max_unavailable")
    @classmethod
    def _int_or_percent(cls, v: int | str | None) -> int | str | None:
        # policy/validation ValidatePodDisruptionBudgetSpec: ValidatePositiveIntOrPercent, IsNotMoreThan100Percent
        if isinstance(v, str):
            if _PERCENT.fullmatch(v) is None:
                raise ValueError(f"{v!r} is neither an integer nor a percentage like '50%'")
            digits = v[:-1].lstrip("0")
            if len(digits) > 3 or int(digits or "0") > 100:
                raise ValueError(f"{v!r} must not be greater than 100%")
        elif isinstance(v, int) and v < 0:
            raise ValueError(f"{v} must not be negative")
        return v

    @model_validator(mode="after")
    def _one_of(self) -> PDBSpec:
        if self.min_available is not None and self.max_unavailable is not None:
            raise ValueError("minAvailable and maxUnavailable are mutually exclusive")
        return self


class PDBStatus(_M):
    disruptions_allowed: Int32 | None = None
    current_healthy: Int32 | None = None
    desired_healthy: Int32 | None = None
    expected_pods: Int32 | None = None


class PodDisruptionBudget(KubeObject):
    kind: str = "PodDisruptionBudget"
    spec: PDBSpec = PDBSpec()
    status: PDBStatus | None = None


class Namespace(KubeObject):
    kind: str = "Namespace"


class ServiceSpec(_M):
    selector: Labels = Field(default_factory=dict)


class Service(KubeObject):
    kind: str = "Service"
    spec: ServiceSpec = ServiceSpec()


class SelectorSpec(_M):
    selector: LabelSelector | None = None


class ReplicaSet(KubeObject):
    kind: str = "ReplicaSet"
    spec: SelectorSpec = SelectorSpec()


class StatefulSet(ReplicaSet):
    kind: str = "StatefulSet"


class RCSpec(_M):
    selector: Labels = Field(default_factory=dict)


class ReplicationController(KubeObject):
    kind: str = "ReplicationController"
    spec: RCSpec = RCSpec()
