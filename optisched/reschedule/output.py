"""Writing a rescheduling plan: ``plan.json`` (the shape other tools read) or ``plan.yaml`` (a
``ReschedulePlan`` document, then the ``policy/v1`` Evictions wave by wave)."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from ..errors import InputError
from ..outputs import write_text
from .plan import ReschedulePlan

__all__ = ["check_output", "write_plan"]

SUFFIXES = (".json", ".yaml", ".yml")


def check_output(path: Path) -> None:
    """Refuse an output that is not .json/.yaml (where it may be written is :mod:`optisched.outputs`'s rule)."""
    if path.suffix not in SUFFIXES:
        raise InputError(f"--output: {path} must end in .json, .yaml or .yml")


def write_plan(plan: ReschedulePlan, path: Path) -> None:
    body = plan.to_dict()
    if path.suffix == ".json":
        write_text(path, json.dumps(body, indent=1) + "\n")
        return
    doc = {"apiVersion": "optisched.io/v1alpha1", "kind": "ReschedulePlan",
           **{k: v for k, v in body.items() if k != "waves"}}
    write_text(path, yaml.safe_dump_all([doc, *plan.eviction_objects()], sort_keys=False, explicit_start=True))
