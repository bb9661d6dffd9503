"""Scheduler profiles: a ``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1) decoded,
defaulted and validated as the release's kube-scheduler does (v1.35.4 or v1.36.2), into frozen objects the
engines read.

* :mod:`.defaults`: v1.35's default plugins and weights, its in-tree names, the points of the plugins
  optisched does not model; :mod:`.releases`: what each supported minor release defaults to;
* :mod:`.plugin_sets`: ``mergePlugins`` then the framework's multiPoint expansion, per extension point;
* :mod:`.args` and :mod:`.plugin_config`: the plugins' argument types, their defaults
  (``pkg/scheduler/apis/config/v1/defaults.go``) and checks (``validation_pluginargs.go``);
* :mod:`.reader`: strict decoding, as kube-scheduler's (``apis/config/scheme``): unknown fields are errors;
* :mod:`.config`: the resolved :class:`Profile` and :class:`SchedulerConfig`;
* :mod:`.decode`: a whole document, checked as ``pkg/scheduler/apis/config/validation/validation.go`` does;
* :mod:`.effective`: the effective configuration a run follows, as a document of its release.

Every error is an :class:`InputError` naming the file, ``KubeSchedulerConfiguration`` and the field path.
"""
from __future__ import annotations

from ..version import KUBE_VERSION
from .args import (
    BalancedAllocationArgs,
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategyType,
    UtilizationShapePoint,
)
from .config import Profile, SchedulerConfig
from .decode import default_config, for_version, load_config, parse_config
from .defaults import NOT_MODELLED, SYSTEM_DEFAULT_CONSTRAINTS
from .effective import effective_document

__all__ = [
    "KUBE_VERSION", "NOT_MODELLED", "SYSTEM_DEFAULT_CONSTRAINTS", "BalancedAllocationArgs",
    "DefaultPreemptionArgs", "InterPodAffinityArgs", "NodeAffinityArgs", "NodeResourcesFitArgs",
    "PodTopologySpreadArgs", "Profile", "ResourceSpec", "SchedulerConfig", "ScoringStrategyType",
    "UtilizationShapePoint", "default_config", "effective_document", "for_version", "load_config", "parse_config",
]
