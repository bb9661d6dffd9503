"""Writing a rescheduling plan: ``plan.json`` (the shape other tools read) or ``plan.yaml`` (a
``ReschedulePlan`` document, then the ``policy/v1`` Evictions wave by wave)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import yaml

from ..errors import InputError
from .plan import ReschedulePlan

__all__ = ["check_output", "write_plan"]

SUFFIXES = (".json", ".yaml", ".yml")


def check_output(path: Path, inputs: Iterable[str]) -> None:
    """Refuse an output that is not .json/.yaml, is a folder, or is one of the inputs (never overwritten)."""
    if path.suffix not in SUFFIXES:
        raise InputError(f"--output: {path} must end in .json, .yaml or .yml")
    if path.is_dir():
        raise InputError(f"--output: {path} is a folder")
    target = path.resolve()
    for given in inputs:
        if given != "-" and Path(given).exists():
            p = Path(given).resolve()
            if target == p or (p.is_dir() and p in target.parents):
                raise InputError(f"--output: {path} is an input (or inside an input folder); choose another path")


def write_plan(plan: ReschedulePlan, path: Path) -> None:
    body = plan.to_dict()
    if path.suffix == ".json":
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        return
    doc = {"apiVersion": "optisched.io/v1alpha1", "kind": "ReschedulePlan",
           **{k: v for k, v in body.items() if k != "waves"}}
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump_all([doc, *plan.eviction_objects()], f, sort_keys=False, explicit_start=True)
