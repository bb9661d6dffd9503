"""The Kubernetes minor releases whose scheduler optisched reproduces, and what each one's configuration
defaults to (:class:`.defaults.Release`).

* 1.35: kubernetes v1.35.4 (``pkg/scheduler/apis/config/v1/default_plugins.go``), verified against the
  conformance traces of ``cases/``;
* 1.36: kubernetes v1.36.2: the same default plugins with ``NodeDeclaredFeatures`` appended (its gate is
  on by default, ``applyFeatureGates`` appends it before DynamicResources is inserted), which optisched
  does not model yet; rules that changed (``NodeResourcesBalancedAllocation``'s score) keep each
  release's variant in their plugin, verified against the traces of ``cases-v1.36/``.

A release is named by its minor version (``1.36``); ``v1.36.2`` and ``1.36.2`` name the same one.
"""
from __future__ import annotations

import re

from .defaults import DEFAULT_MULTIPOINT, IN_TREE, NOT_MODELLED, UNMODELLED_POINTS, Release

__all__ = ["DEFAULT_VERSION", "RELEASES", "VERSIONS", "at_least", "parse_version", "release"]

NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"

RELEASES: dict[str, Release] = {
    "1.35": Release("1.35", "v1.35.4", DEFAULT_MULTIPOINT, IN_TREE, UNMODELLED_POINTS, NOT_MODELLED),
    "1.36": Release("1.36", "v1.36.2", (*DEFAULT_MULTIPOINT, (NODE_DECLARED_FEATURES, None)), IN_TREE | {NODE_DECLARED_FEATURES},
                    {**UNMODELLED_POINTS, NODE_DECLARED_FEATURES: frozenset({"preFilter", "filter"})},
                    NOT_MODELLED | {NODE_DECLARED_FEATURES}),
}
VERSIONS = tuple(RELEASES)
# the version a run assumes when nothing names one: the newest whose every default rule is modelled
DEFAULT_VERSION = "1.35"

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def parse_version(text: str) -> str:
    """``1.36``, ``v1.36`` or ``v1.36.2`` -> ``1.36``; ValueError naming the versions for anything else."""
    m = _VERSION.fullmatch(text.strip())
    minor = f"{m.group(1)}.{m.group(2)}" if m else None
    if minor not in RELEASES:
        raise ValueError(f"{text!r} is not a Kubernetes version optisched reproduces; versions: {', '.join(VERSIONS)}")
    return minor


def release(version: str) -> Release:
    return RELEASES[version]


def at_least(version: str, minor: str) -> bool:
    """Whether release ``version`` is ``minor`` or later (both ``MAJOR.MINOR``)."""
    return tuple(map(int, version.split("."))) >= tuple(map(int, minor.split(".")))
