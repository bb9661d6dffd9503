"""Reading and parsing input with bounded memory and time.

A cluster dump is written by many hands, so a load must cost what the file's size suggests, whatever it
holds:

- only regular files and standard input are read, up to ``max_bytes`` (default :data:`DEFAULT_MAX_INPUT`,
  raised with ``--max-input-size``); a FIFO or a device (``/dev/zero``) is refused at once, without
  reading;
- YAML aliases ("billion laughs") and merge keys may expand a document to at most :data:`EXPANSION`
  times its size plus :data:`EXPANSION_SLACK` nodes, and may not refer to themselves;
- documents that use aliases may nest at most :data:`MAX_DEPTH` levels (Kubernetes objects need about 20);
  others are bounded by the parsers (libyaml and Python's json stop near 1,000 levels);
- integers may have at most :data:`MAX_INT_DIGITS` digits (int64 has 19; Python's own limit, 4300,
  would otherwise surface as a garbled message).

Each refusal is an :class:`~optisched.errors.InputError` naming the file.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from typing import Any

import yaml

from ..errors import InputError
from .quantity import QuantityError, parse_quantity, value

__all__ = ["DEFAULT_MAX_INPUT", "EXPANSION", "MAX_DEPTH", "MAX_INT_DIGITS", "check_parsed", "check_tree",
           "parse_json", "parse_size", "parse_yaml", "read_bounded"]

DEFAULT_MAX_INPUT = 256 * 2**20
EXPANSION = 10
EXPANSION_SLACK = 100_000
MAX_DEPTH = 100
MAX_INT_DIGITS = 100
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_size(text: str) -> int:
    """``--max-input-size``: bytes as a quantity (``512Mi``, ``1G``, ``1000000``), at least 1."""
    try:
        size = value(parse_quantity(text.strip()))
    except QuantityError:
        raise InputError(f"{text!r} is not a size (e.g. 512Mi, 1Gi)", source="--max-input-size") from None
    if size < 1:
        raise InputError(f"{text!r} must be at least 1 byte", source="--max-input-size")
    return size


def _too_big(source: str, limit: int) -> InputError:
    return InputError(f"larger than the input limit of {limit} bytes (raise it with --max-input-size)",
                      source=source)


def read_bounded(path: str, limit: int = DEFAULT_MAX_INPUT) -> tuple[str, str]:
    """(name, text) of a regular file or ``-`` (stdin), read up to ``limit`` bytes as UTF-8."""
    if path == "-":
        stream = getattr(sys.stdin, "buffer", None)  # (a text stream without bytes, when embedded)
        name = "<stdin>"
        data = stream.read(limit + 1) if stream is not None else sys.stdin.read(limit + 1).encode("utf-8")
    else:
        name = path
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise InputError("not a regular file (a FIFO, device or socket); give a file, a folder or -",
                                 source=path)
            if st.st_size > limit:
                raise _too_big(path, limit)
            with open(path, "rb") as f:
                data = f.read(limit + 1)
        except FileNotFoundError:
            raise InputError("no such file or folder", source=path) from None
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=path) from None
    if len(data) > limit:
        raise _too_big(name, limit)
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason} at byte {e.start})", source=name) from None


def _children(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [*obj.keys(), *obj.values()]
    return list(obj) if isinstance(obj, list) else []


def _weight(obj: Any) -> int:
    return 1 + len(obj) if isinstance(obj, str) else 1


def check_tree(doc: Any, budget: int, source: str) -> None:
    """Refuse a parsed document whose expanded size (aliases counted each time) exceeds ``budget``, that
    refers to itself or nests deeper than :data:`MAX_DEPTH`. Iterative, and
    linear in the number of distinct nodes (shared nodes are sized once)."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(doc, 1, False)]
    while stack:
        obj, depth, done = stack.pop()
        if not isinstance(obj, (dict, list)):
            size[id(obj)] = _weight(obj)
            continue
        key = id(obj)
        if done:
            open_.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(obj))
            if size[key] > budget:
                raise InputError(f"YAML aliases expand the document beyond {EXPANSION} times its size",
                                 source=source)
            continue
        if key in size:
            continue
        if key in open_:
            raise InputError("a YAML alias refers to the node that contains it", source=source)
        if depth > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep", source=source)
        open_.add(key)
        stack.append((obj, depth, True))
        stack.extend((c, depth + 1, False) for c in _children(obj))


def budget_for(text: str) -> int:
    """The expanded size a document of this text may reach."""
    return EXPANSION * len(text) + EXPANSION_SLACK


def check_parsed(docs: list[Any], text: str, source: str) -> None:
    """:func:`check_tree` on what ``text`` parsed to, when it can hold YAML aliases (``*a``) or merge keys:
    only then can the parsed form be larger than the text (the check costs a pass over every node)."""
    if "*" in text or "<<" in text:
        check_tree(docs, budget_for(text), source)


class _BoundedLoader(_Base):  # type: ignore[misc, valid-type]
    """SafeLoader whose merge keys (``<<: *a``) may not multiply a mapping beyond the budget, and whose
    integers may not be longer than :data:`MAX_INT_DIGITS` (refused with their line, before Python parses
    them)."""

    budget = EXPANSION_SLACK

    def construct_yaml_int(self, node: Any) -> int:
        if sum(c.isdigit() for c in node.value) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(None, None, f"an integer of more than {MAX_INT_DIGITS} digits",
                                                    node.start_mark)
        return super().construct_yaml_int(node)  # type: ignore[no-any-return]


    def flatten_mapping(self, node: Any) -> None:
        super().flatten_mapping(node)
        if len(node.value) > self.budget:
            raise yaml.constructor.ConstructorError(None, None, "merge keys expand a mapping beyond the limit",
                                                    node.start_mark)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def parse_yaml(text: str) -> Iterator[Any]:
    """The documents of a YAML stream, with merge keys bounded (see :func:`check_tree` for aliases)."""
    loader = _BoundedLoader(text)
    loader.budget = budget_for(text)
    try:
        while loader.check_data():
            yield loader.get_data()
    finally:
        loader.dispose()


def parse_json(text: str, source: str) -> Any:
    """``json.loads`` with deep nesting and over-long numbers answered as input errors."""
    def bounded_int(digits: str) -> int:
        if len(digits) > MAX_INT_DIGITS:
            raise InputError(f"an integer of more than {MAX_INT_DIGITS} digits", source=source)
        return int(digits)

    try:
        return json.loads(text, parse_int=bounded_int)
    except RecursionError:
        raise InputError("nested too deeply", source=source) from None
