"""Versions: optisched's own (from the installed package's metadata, whose one source is pyproject.toml) and
the Kubernetes release whose scheduler semantics optisched reproduces."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["KUBE_VERSION", "__version__"]

KUBE_VERSION = "v1.35.4"

try:
    __version__ = version("optisched")
except PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"
