"""Reading input documents: a file's or stdin's text, parsed as JSON or (multi-document) YAML, and
pydantic errors rewritten as API field paths.

The lowest layer of input handling: both the cluster loader (:mod:`optisched.model.loader`) and the
scheduler configuration (:mod:`optisched.profile`) read their files through it, so neither imports the other.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import InputError

__all__ = ["load_documents", "read_source", "validation_message"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_source(path: str) -> tuple[str, str]:
    """(name, text) of a file or ``-``; unreadable input becomes an :class:`InputError` naming it."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    p = Path(path)
    try:
        return path, p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such file or folder", source=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", source=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=path) from None


def load_documents(source: str, text: str) -> list[Any]:
    """Parse one file's text: JSON when it looks like JSON, else (multi-document) YAML."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            doc = json.loads(text)
            return doc if isinstance(doc, list) else [doc]
        except json.JSONDecodeError:
            pass  # YAML flow style also starts with '{'
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", source=source) from None


def validation_message(err: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, in API terms: ``.spec.containers[0].resources``."""
    e = err.errors(include_url=False)[0]
    path = ""
    for part in e["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
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
