"""JSON documents read one value at a time, a List's items one by one (see :mod:`optisched.model.stream`).

Each value is decoded by Python's own ``json`` scanner (``raw_decode``) from a buffer refilled chunk by
chunk, so the file's text is never held whole and every value is decoded exactly as ``json.loads`` would
decode it. A value cut at the buffer's end is decoded again once more text is in; an error before the
end is final, so text that only looks like JSON (YAML's flow style) is given up at once.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import InputError
from .bounded import MAX_INT_DIGITS, Input

__all__ = ["DOC", "ITEM", "REITEMS", "RESTART", "Streamed", "json_documents"]

ITEM, DOC, REITEMS, RESTART = "item", "doc", "reitems", "restart"  # what the streams yield (model.stream)

_WS = re.compile(r"[ \t\n\r]*")
_CHUNK = 2**20


class Streamed(list):  # type: ignore[type-arg]
    """A document's ``items``, yielded one by one before the document."""


def _truncated(e: json.JSONDecodeError, end: int) -> bool:
    """Whether more text could mend the error: it is at the buffer's end (a literal, a number, an escape
    of up to 6 characters cut there) or a string runs into it. An error before is final, whatever follows."""
    return e.pos >= end - 6 or e.msg.startswith("Unterminated string")


class _Reader:
    def __init__(self, inp: Input) -> None:
        self.stream = inp.text()
        self.source = inp.name
        self.buf, self.pos, self.eof = "", 0, False

        def bounded_int(digits: str) -> int:
            if len(digits) > MAX_INT_DIGITS:
                raise InputError(f"an integer of more than {MAX_INT_DIGITS} digits", source=inp.name)
            return int(digits)

        self.decoder = json.JSONDecoder(parse_int=bounded_int)

    def _more(self, size: int = 0) -> bool:
        chunk = "" if self.eof else self.stream.read(size or _CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def peek(self) -> str:
        """The next non-blank character (not consumed), ``""`` at the end."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def take(self, expected: str) -> str:
        """Consume the next character, one of ``expected``."""
        c = self.peek()
        if not c or c not in expected:
            raise json.JSONDecodeError(f"Expecting {' or '.join(map(repr, expected))}", self.buf, self.pos)
        self.pos += 1
        return c

    def value(self) -> Any:
        self.peek()
        size = 0
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof:  # (a number at the buffer's end may go on)
                    self.pos = end
                    return obj
            except json.JSONDecodeError as e:
                if self.eof or not _truncated(e, len(self.buf)):
                    raise
            except RecursionError:
                raise InputError("nested too deeply", source=self.source) from None
            self._more(size)
            size = 2 * (size or _CHUNK)

    def elements(self) -> Iterator[Any]:
        """The values of the array that starts here."""
        self.take("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            if self.take(",]") == "]":
                return


def _object(r: _Reader, keep: Callable[[Any], Any]) -> Iterator[tuple]:
    r.take("{")
    doc: dict[str, Any] = {}
    streamed = False
    while r.peek() != "}":
        key = r.value()
        if not isinstance(key, str):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", r.buf, r.pos)
        r.take(":")
        if key == "items" and streamed:
            yield (REITEMS,)  # json.loads keeps the last of a repeated key
            streamed = False
        if key == "items" and r.peek() == "[":
            doc[key], streamed = Streamed(), True
            for i, item in enumerate(r.elements()):
                yield (ITEM, i, keep(item))
        else:
            doc[key] = r.value()
        if r.take(",}") == "}":
            break
    else:
        r.pos += 1
        if doc:  # a trailing comma
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", r.buf, r.pos)
    yield (DOC, 0, keep(doc))


def json_documents(inp: Input, keep: Callable[[Any], Any]) -> Iterator[tuple]:
    """The documents of a JSON input as :func:`optisched.model.stream.documents` yields them; raises
    ``json.JSONDecodeError`` where ``json.loads`` would refuse the text."""
    r = _Reader(inp)
    if r.peek() == "[":
        for i, doc in enumerate(r.elements()):
            yield (DOC, i, keep(doc))
    else:
        yield from _object(r, keep)
    if r.peek():
        raise json.JSONDecodeError("Extra data", r.buf, r.pos)
