"""The kubelet's eviction thresholds: ``evictionHard``, ``evictionSoft`` and ``evictionMinimumReclaim`` from a
``KubeletConfiguration`` (kubelet.config.k8s.io/v1beta1), or ``--eviction-hard``-style flag text.

Kubernetes v1.35 defaults (``pkg/kubelet/apis/config/v1beta1/defaults_linux.go``): memory.available<100Mi,
nodefs.available<10% (imagefs and inodes are not modelled); as the kubelet does, the defaults apply only
when no hard threshold is given at all. A soft threshold is taken as met once its grace period has passed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import InputError
from ..model.quantity import QuantityError, parse_quantity, to_scheduler_units

__all__ = ["SIGNALS", "EvictionThresholds", "Threshold", "load_kubelet_config", "parse_thresholds"]

SIGNALS = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}
IGNORED = ("imagefs.available", "imagefs.inodesFree", "nodefs.inodesFree", "pid.available",
           "containerfs.available", "containerfs.inodesFree", "allocatableMemory.available")
DEFAULT_HARD = {"memory.available": "100Mi", "nodefs.available": "10%"}


@dataclass(frozen=True)
class Threshold:
    """An amount in bytes or a percentage of the node's capacity."""

    amount: int | None = None
    percent: float | None = None

    def of(self, capacity: int) -> int:
        return self.amount if self.amount is not None else int(capacity * (self.percent or 0.0) / 100)


@dataclass(frozen=True)
class EvictionThresholds:
    """Per signal: the threshold (hard, else soft) and the minimum reclaim."""

    threshold: dict[str, Threshold]
    reclaim: dict[str, Threshold]
    source: str = "<defaults>"


def _threshold(text: object, source: str, path: str) -> Threshold:
    s = str(text).strip()
    try:
        if s.endswith("%"):
            pct = float(s[:-1])
            if not 0 <= pct <= 100:
                raise ValueError
            return Threshold(percent=pct)
        return Threshold(amount=to_scheduler_units("memory", parse_quantity(s)))
    except (ValueError, QuantityError):
        raise InputError(f"{s!r} is not a quantity or a percentage", source=source, obj="KubeletConfiguration",
                         path=path) from None


def _map(raw: object, source: str, field: str) -> dict[str, Threshold]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError("expected a map of signal: quantity", source=source, obj="KubeletConfiguration",
                         path=f".{field}")
    out = {}
    for sig, v in raw.items():
        if sig not in SIGNALS and sig not in IGNORED:
            raise InputError(f"unknown eviction signal; signals: {', '.join([*SIGNALS, *IGNORED])}",
                             source=source, obj="KubeletConfiguration", path=f".{field}.{sig}")
        t = _threshold(v, source, f".{field}.{sig}")
        if sig in SIGNALS:
            out[sig] = t
    return out


def parse_thresholds(doc: dict, source: str) -> EvictionThresholds:
    """The thresholds of a KubeletConfiguration document."""
    if doc.get("kind") != "KubeletConfiguration":
        raise InputError("expected kind: KubeletConfiguration", source=source, obj="KubeletConfiguration",
                         path=".kind")
    hard = _map(doc.get("evictionHard"), source, "evictionHard")
    soft = _map(doc.get("evictionSoft"), source, "evictionSoft")
    if doc.get("evictionHard") is None:
        hard = {s: _threshold(v, source, ".evictionHard") for s, v in DEFAULT_HARD.items()}
    return EvictionThresholds({**soft, **hard}, _map(doc.get("evictionMinimumReclaim"), source,
                                                    "evictionMinimumReclaim"), source)


def _flags(text: str, source: str) -> dict:
    """``--eviction-hard=memory.available<500Mi,nodefs.available<10%`` lines into a KubeletConfiguration."""
    doc: dict = {"kind": "KubeletConfiguration"}
    for line in text.split():
        name, _, value = line.lstrip("-").partition("=")
        field = {"eviction-hard": "evictionHard", "eviction-soft": "evictionSoft",
                 "eviction-minimum-reclaim": "evictionMinimumReclaim"}.get(name)
        if field is None:
            continue
        sep = "=" if field == "evictionMinimumReclaim" else "<"
        pairs = [p.split(sep, 1) for p in value.split(",") if p]
        if any(len(p) != 2 for p in pairs):
            raise InputError(f"expected signal{sep}quantity pairs", source=source, obj=f"--{name}")
        doc[field] = dict(pairs)
    return doc


def load_kubelet_config(path: str | Path) -> EvictionThresholds:
    """A KubeletConfiguration file, or a file of kubelet flags (``--eviction-hard=...`` ...)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(p)) from None
    if text.lstrip().startswith("--"):
        return parse_thresholds(_flags(text, str(p)), str(p))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"not YAML: {str(e).splitlines()[0]}", source=str(p)) from None
    if not isinstance(doc, dict):
        raise InputError("expected a KubeletConfiguration", source=str(p))
    return parse_thresholds(doc, str(p))
