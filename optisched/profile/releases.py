"""The Kubernetes minor releases whose scheduler optisched reproduces, and what each one's configuration
defaults to (:class:`.defaults.Release`).

* 1.35: kubernetes v1.35.4 (``pkg/scheduler/apis/config/v1/default_plugins.go``), verified against the
  conformance traces of ``cases/``;
* 1.36: kubernetes v1.36.2: the same default plugins with ``NodeDeclaredFeatures`` appended (its gate is
  on by default, ``applyFeatureGates`` appends it before DynamicResources is inserted; in 1.35 the gate
  is off by default and the plugin, which a profile may still name, does nothing unless the gate is
  turned on: :mod:`optisched.plugins.node_declared_features`, :func:`default_multipoint`); rules that changed
  (``NodeResourcesBalancedAllocation``'s score) keep each release's variant in their plugin, verified
  against the traces of ``cases-v1.36/``. Its configuration
  (``pkg/scheduler/apis/config/v1/defaults.go``, ``kube-scheduler/config/v1/types.go``,
  ``validation/validation_pluginargs.go``) adds the ``placementGenerate`` and ``placementScore``
  plugin sets, empty by default (TopologyAwareWorkloadScheduling, which would enable
  ``TopologyPlacementGenerator`` and ``PodGroupPodsCount`` there, is alpha and off), defaults
  ``DynamicResourcesArgs.bindingTimeout`` to 10m (DRADeviceBindingConditions is beta and on), and
  refuses a ``requestedToCapacityRatio`` given with another scoring type.

* 1.37: from its release notes and KEPs, not verified against the release's code (no vendored copy):
  1.36's configuration and rules, with the changes :data:`UNVERIFIED` lists (its gates,
  :mod:`.gates`; ImageLocality's threshold, :mod:`optisched.plugins.image_locality`); every run says
  so in one line (:func:`notice`), and docs/fidelity.md lists what is and is not done.

A release is named by its minor version (``1.36``); ``v1.36.2`` and ``1.36.2`` name the same one.
"""
from __future__ import annotations

import re

from .defaults import (
    DEFAULT_MULTIPOINT,
    EXTENSION_POINTS,
    IN_TREE,
    NOT_MODELLED,
    PLACEMENT_POINTS,
    UNMODELLED_POINTS,
    Release,
)
from .gates import FeatureGates

__all__ = ["DEFAULT_VERSION", "RELEASES", "UNVERIFIED", "VERSIONS", "at_least", "chosen_version",
           "default_multipoint", "notice", "parse_version", "release"]

NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
# v1.36's pod-group placement plugins (NewInTreeRegistry), off by default
PLACEMENT_PLUGINS = {"TopologyPlacementGenerator": frozenset({"placementGenerate"}),
                     "PodGroupPodsCount": frozenset({"placementScore"})}

RELEASES: dict[str, Release] = {
    "1.35": Release("1.35", "v1.35.4", DEFAULT_MULTIPOINT, IN_TREE, UNMODELLED_POINTS, NOT_MODELLED),
    "1.36": Release("1.36", "v1.36.2", DEFAULT_MULTIPOINT,
                    IN_TREE | {*PLACEMENT_PLUGINS}, {**UNMODELLED_POINTS, **PLACEMENT_PLUGINS},
                    NOT_MODELLED | {*PLACEMENT_PLUGINS},
                    extension_points=(*EXTENSION_POINTS, *PLACEMENT_POINTS), binding_timeout=600.0,
                    strict_ratio_params=True),
    # read from the release notes and KEPs: 1.36's configuration (its defaults.go is not at hand)
    "1.37": Release("1.37", "v1.37.0", DEFAULT_MULTIPOINT,
                    IN_TREE | {*PLACEMENT_PLUGINS}, {**UNMODELLED_POINTS, **PLACEMENT_PLUGINS},
                    NOT_MODELLED | {*PLACEMENT_PLUGINS},
                    extension_points=(*EXTENSION_POINTS, *PLACEMENT_POINTS), binding_timeout=600.0,
                    strict_ratio_params=True),
}
# the releases whose rules come from release notes and KEPs, not from the release's code
UNVERIFIED: frozenset[str] = frozenset({"1.37"})
VERSIONS = tuple(RELEASES)
# the version a run assumes when nothing names one
DEFAULT_VERSION = "1.35"

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def parse_version(text: str) -> str:
    """``1.36``, ``v1.36`` or ``v1.36.2`` -> ``1.36``; ValueError naming the versions for anything else."""
    m = _VERSION.fullmatch(text.strip())
    minor = f"{m.group(1)}.{m.group(2)}" if m else None
    if minor not in RELEASES:
        raise ValueError(f"{text!r} is not a Kubernetes version optisched reproduces; versions: {', '.join(VERSIONS)}")
    return minor


def default_multipoint(release: Release, gates: FeatureGates) -> tuple[tuple[str, int | None], ...]:
    """``getDefaultPlugins`` under ``gates``: ``applyFeatureGates`` appends NodeDeclaredFeatures when its gate
    is on (DynamicResources, whose gate is locked on in both releases, is in the list already)."""
    if gates.enabled(NODE_DECLARED_FEATURES):
        return (*release.multipoint, (NODE_DECLARED_FEATURES, None))
    return release.multipoint


def notice(version: str) -> str | None:
    """The line every run of an :data:`UNVERIFIED` release prints, else None."""
    if version not in UNVERIFIED:
        return None
    return (f"Kubernetes {version}'s rules are from its release notes and KEPs, not verified against the "
            f"release's code (docs/fidelity.md)")


def release(version: str) -> Release:
    return RELEASES[version]


def at_least(version: str, minor: str) -> bool:
    """Whether release ``version`` is ``minor`` or later (both ``MAJOR.MINOR``)."""
    return tuple(map(int, version.split("."))) >= tuple(map(int, minor.split(".")))


def chosen_version(asked: str | None, named: tuple[str, str] | None) -> tuple[str, str | None]:
    """The release a run follows, and a line to tell the user when it is not the one the input names:
    ``asked`` (``--kubernetes-version``, already parsed) first; else ``named``, the input's version and
    where it was read (a List's ``kubernetesVersion``, a live cluster's /version), or the nearest release
    optisched reproduces (the newest not after it); else :data:`DEFAULT_VERSION`."""
    if asked is not None:
        return asked, None
    if named is None:
        return DEFAULT_VERSION, None
    version, where = named
    m = _VERSION.match(version.strip())
    if m and f"{m.group(1)}.{m.group(2)}" in RELEASES:
        return f"{m.group(1)}.{m.group(2)}", None
    given = (int(m.group(1)), int(m.group(2))) if m else None
    earlier = [v for v in VERSIONS if given is not None and tuple(map(int, v.split("."))) <= given]
    minor = earlier[-1] if earlier else VERSIONS[0]
    return minor, (f"{where} names Kubernetes {version}, a release optisched does not reproduce "
                   f"({', '.join(VERSIONS)}): this run follows {minor} (--kubernetes-version chooses)")
