"""Pods' actual usage: a ``kubectl top pods -A`` dump, a CSV, or ``optisched.io/usage-*`` annotations.

Units are the scheduler's: millicores for cpu, bytes for memory and ephemeral-storage. A row naming a pod
the cluster does not have is an error (file, line, pod); a pod without a row uses nothing.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..model.quantity import QuantityError, parse_quantity, to_scheduler_units
from ..model.state import ClusterState

__all__ = ["RESOURCES", "Usage", "load_usage", "usage_from_annotations"]

RESOURCES = ("cpu", "memory", "ephemeral-storage")
ANNOTATION = "optisched.io/usage-"


@dataclass(frozen=True)
class Usage:
    """Per pod key: resource -> amount in scheduler units."""

    by_pod: dict[str, dict[str, int]] = field(default_factory=dict)
    source: str = "<annotations>"

    def of(self, key: str, resource: str) -> int:
        return self.by_pod.get(key, {}).get(resource, 0)


def _amount(text: str, resource: str, where: str, source: str) -> int:
    try:
        return to_scheduler_units(resource, parse_quantity(text.strip()))
    except QuantityError as e:
        raise InputError(str(e), source=source, obj=where, path=resource) from None


def _rows(text: str, source: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, {namespace, name, cpu, memory, ...}) from a CSV or a ``kubectl top pods -A`` dump."""
    lines = [ln for ln in text.splitlines()]
    if not lines:
        raise InputError("no usage rows", source=source)
    if "," in lines[0]:
        reader = csv.DictReader(io.StringIO(text))
        need = {"namespace", "name"}
        if not need <= set(reader.fieldnames or []):
            raise InputError("the CSV header needs namespace,name and cpu, memory or ephemeral-storage columns",
                             source=source, obj="line 1")
        return [(i + 2, {k.strip(): (v or "") for k, v in row.items() if k}) for i, row in enumerate(reader)]
    head = lines[0].split()
    if head[:2] != ["NAMESPACE", "NAME"] or len(head) < 4:
        raise InputError("expected `kubectl top pods -A` output (NAMESPACE NAME CPU(cores) MEMORY(bytes)) or a CSV",
                         source=source, obj="line 1")
    out = []
    for i, ln in enumerate(lines[1:], start=2):
        cells = ln.split()
        if not cells:
            continue
        if len(cells) < 4:
            raise InputError(f"expected 4 columns, found {len(cells)}", source=source, obj=f"line {i}")
        out.append((i, {"namespace": cells[0], "name": cells[1], "cpu": cells[2], "memory": cells[3]}))
    return out


def load_usage(path: str | Path, state: ClusterState) -> Usage:
    """Read a usage file; every row must name a pod of ``state``."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(p)) from None
    by_pod: dict[str, dict[str, int]] = {}
    for line, row in _rows(text, str(p)):
        key = f"{row['namespace']}/{row['name']}"
        if key not in state.pod_index:
            raise InputError(f"pod {key!r} is not in the cluster", source=str(p), obj=f"line {line}")
        by_pod[key] = {r: _amount(row[r], r, f"line {line} Pod/{key}", str(p)) for r in RESOURCES if row.get(r)}
    return Usage(by_pod, str(p))


def usage_from_annotations(state: ClusterState) -> Usage:
    """``optisched.io/usage-cpu``, ``-memory``, ``-ephemeral-storage`` on the pods themselves."""
    by_pod: dict[str, dict[str, int]] = {}
    for pod in state.pods:
        got = {r: _amount(v, r, f"Pod/{pod.key}", "<cluster>")
               for r in RESOURCES if (v := pod.metadata.annotations.get(ANNOTATION + r)) is not None}
        if got:
            by_pod[pod.key] = got
    return Usage(by_pod)
