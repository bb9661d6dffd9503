"""Reading and parsing input with bounded memory and time.

A cluster dump is written by many hands, so a load must cost what the file's size suggests, whatever it
holds:

- only regular files and standard input are read, up to ``max_bytes`` (default :data:`DEFAULT_MAX_INPUT`,
  raised or lowered with ``--max-input-size``); a FIFO or a device (``/dev/zero``) is refused at once,
  without reading. The size is checked, and the text checked as UTF-8, in a first pass that holds one
  chunk (:func:`open_input`); standard input is kept in a temporary file for the second;
- YAML aliases ("billion laughs") and merge keys may expand an input to at most :data:`EXPANSION`
  times its size plus :data:`EXPANSION_SLACK` nodes, and may not refer to themselves;
- values that use aliases may nest at most :data:`MAX_DEPTH` levels (Kubernetes objects need about 20);
  others are bounded by the parsers (libyaml and Python's json stop near 1,000 levels);
- integers may have at most :data:`MAX_INT_DIGITS` digits (int64 has 19; Python's own limit, 4300,
  would otherwise surface as a garbled message).

Each refusal is an :class:`~optisched.errors.InputError` naming the file.
"""
from __future__ import annotations

import codecs
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

import yaml

from ..errors import InputError
from .quantity import QuantityError, parse_quantity, value

__all__ = ["DEFAULT_MAX_INPUT", "EXPANSION", "MAX_DEPTH", "MAX_INT_DIGITS", "Input", "check_parsed", "check_tree",
           "open_input", "parse_json", "parse_size", "parse_yaml", "read_bounded"]

DEFAULT_MAX_INPUT = 4 * 2**30
"""4 GiB: a 5,000-node dump of 100,000 pods with their managedFields, as JSON (about 2 GB; YAML about 1 GB).
Memory follows what is kept, not the file (docs/input.md), so the limit bounds time, and absurd input."""
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


def _regular(path: str, limit: int) -> IO[bytes]:
    """``path`` opened for reading, when it is a regular file of at most ``limit`` bytes."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("not a regular file (a FIFO, device or socket); give a file, a folder or -", source=path)
        if st.st_size > limit:
            raise _too_big(path, limit)
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file or folder", source=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=path) from None


def read_bounded(path: str, limit: int = DEFAULT_MAX_INPUT) -> tuple[str, str]:
    """(name, text) of a regular file or ``-`` (stdin), read up to ``limit`` bytes as UTF-8."""
    with open_input(path, limit) as inp:
        inp.file.seek(0)
        return inp.name, inp.file.read().decode("utf-8")


_CHUNK = 2**20
_SPOOL = 64 * 2**20


@dataclass(frozen=True)
class Input:
    """One input read through once already: at most the limit, valid UTF-8, ``chars`` characters long, its
    first non-blank character ``first`` (``""`` when blank). :meth:`text` reads it again from the start."""

    name: str
    file: IO[bytes]
    chars: int
    first: str

    def text(self) -> _Text:
        self.file.seek(0)
        return _Text(self.file, self.name)


class _Text:
    """A binary file read as UTF-8 text, chunk by chunk (the parsers call ``read(size)``)."""

    def __init__(self, file: IO[bytes], name: str) -> None:
        self.file, self.name = file, name
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def read(self, size: int = _CHUNK) -> str:
        try:
            data = self.file.read(size if size > 0 else _CHUNK)
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=self.name) from None
        return self.decoder.decode(data, final=not data)


def _spool_stdin(limit: int) -> IO[bytes]:
    """Standard input copied, up to ``limit`` bytes, where it can be read twice (memory, then disk)."""
    stream = getattr(sys.stdin, "buffer", None)  # (a text stream without bytes, when embedded)
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL)  # noqa: SIM115 (open_input closes it)
    total = 0
    while total <= limit:
        data = stream.read(_CHUNK) if stream is not None else sys.stdin.read(_CHUNK).encode("utf-8")
        if not data:
            break
        spool.write(data[: limit + 1 - total])
        total += len(data)
    if total > limit:
        spool.close()
        raise _too_big("<stdin>", limit)
    return spool  # type: ignore[return-value]


def _scan(f: IO[bytes], name: str, limit: int) -> tuple[int, str]:
    """(characters, first non-blank character) of ``f``, refusing more than ``limit`` bytes or bad UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    total = chars = 0
    first = ""
    while True:
        try:
            data = f.read(_CHUNK)
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=name) from None
        start = total - len(decoder.getstate()[0])
        total += len(data)
        if total > limit:
            raise _too_big(name, limit)
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as e:
            raise InputError(f"not UTF-8 text ({e.reason} at byte {start + e.start})", source=name) from None
        chars += len(text)
        if not first and (stripped := text.lstrip()):
            first = stripped[0]
        if not data:
            return chars, first


@contextmanager
def open_input(path: str, limit: int = DEFAULT_MAX_INPUT) -> Iterator[Input]:
    """A regular file or ``-`` (stdin) as an :class:`Input`, checked in one pass that holds only a chunk:
    the same refusals as :func:`read_bounded`, without keeping the text."""
    name = "<stdin>" if path == "-" else path
    with _spool_stdin(limit) if path == "-" else _regular(path, limit) as f:
        f.seek(0)
        chars, first = _scan(f, name, limit)
        yield Input(name, f, chars, first)


def _children(obj: Any) -> list[Any]:
    if isinstance(obj, dict):
        return [*obj.keys(), *obj.values()]
    return list(obj) if isinstance(obj, list) else []


def _weight(obj: Any) -> int:
    return 1 + len(obj) if isinstance(obj, str) else 1


def check_tree(doc: Any, budget: int, source: str) -> int:
    """Refuse a parsed document whose expanded size (aliases counted each time) exceeds ``budget``, that
    refers to itself or nests deeper than :data:`MAX_DEPTH`; else its expanded size. Iterative, and
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
    return size[id(doc)]


def budget_for(text: str | int) -> int:
    """The expanded size a document of this text (or this many characters) may reach."""
    return EXPANSION * (text if isinstance(text, int) else len(text)) + EXPANSION_SLACK


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
