"""Reading input documents: a file's or stdin's text, parsed as JSON or (multi-document) YAML, and
pydantic errors rewritten as API field paths.

The lowest layer of input handling: both the cluster loader (:mod:`optisched.model.loader`) and the
scheduler configuration (:mod:`optisched.profile`) read their files through it, so neither imports the other.
"""
from __future__ import annotations

import json
from typing import Any

import yaml
from pydantic import ValidationError

from .bounded import DEFAULT_MAX_INPUT, check_parsed, parse_json, parse_yaml, read_bounded
from .stream import yaml_error

__all__ = ["load_documents", "read_source", "validation_message"]

_MAPS = ("labels", "annotations")  # string maps whose keys an error path shows as [key], as kubectl does

def read_source(path: str, limit: int = DEFAULT_MAX_INPUT) -> tuple[str, str]:
    """(name, text) of a regular file or ``-``, at most ``limit`` bytes; unreadable input becomes an
    :class:`InputError` naming it (:func:`optisched.model.bounded.read_bounded`)."""
    return read_bounded(path, limit)


def load_documents(source: str, text: str) -> list[Any]:
    """Parse one file's whole text: JSON when it looks like JSON, else (multi-document) YAML; bounded in
    expansion, depth and number length (:mod:`optisched.model.bounded`). For small files (a scheduler
    configuration); clusters are read as a stream (:mod:`optisched.model.stream`)."""
    stripped = text.lstrip()
    docs: list[Any] | None = None
    try:
        if stripped[:1] in ("{", "["):
            try:
                doc = parse_json(text, source)
                docs = doc if isinstance(doc, list) else [doc]
            except json.JSONDecodeError:
                pass  # YAML flow style also starts with '{'
        if docs is None:
            docs = list(parse_yaml(text))
    except yaml.YAMLError as e:
        raise yaml_error(e, source) from None
    check_parsed(docs, text, source)
    return docs


def validation_message(err: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, in API terms: ``.spec.containers[0].resources``."""
    e = err.errors(include_url=False)[0]
    path = ""
    parent: object = None
    for part in e["loc"]:  # a list index or a key of labels and annotations in brackets
        path += f"[{part}]" if isinstance(part, int) or parent in _MAPS else f".{part}"
        parent = part
    msg = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    kind = e["type"]
    if kind == "missing":
        msg = "required field is missing"
    elif kind in ("enum", "literal_error"):
        msg = f"{e.get('input')!r} is not one of {e.get('ctx', {}).get('expected', '')}"
    elif "input" in e and kind not in ("value_error",) and not isinstance(e["input"], (dict, list)):
        msg = f"{e['input']!r}: {msg}"
    # a resource-list error names the resource inside the message ("cpu: '2x' is not a quantity")
    if kind == "value_error" and ": " in msg and path.endswith(("requests", "limits", "allocatable", "capacity",
                                                                "overhead")):
        name, _, rest = msg.partition(": ")
        path, msg = f"{path}.{name}", rest
    return path, msg
