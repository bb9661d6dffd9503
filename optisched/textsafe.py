"""Text from the input, made safe for where it lands: the terminal, an HTML page, a spreadsheet.

Object names, labels, annotations and taints are written by every user of a cluster, and optisched prints
them in an administrator's terminal. Every string that comes from the input goes through this module at the
rendering boundary:

- :func:`plain` shows control characters escaped (``\\x1b``, ``\\n``, ``\\u202e``), so a name cannot move the
  cursor, retitle the window, ring the bell, break a one-line error in two, or reverse the text around it
  (bidirectional overrides, as in "Trojan Source").
- :func:`safe_text` is a rich ``Text`` of :func:`plain`; :func:`safe` is :func:`plain` with rich markup escaped, so ``[red]`` in a pod name is shown as typed,
  never interpreted (and a malformed tag cannot raise ``MarkupError``).
- :func:`safe_console` is a rich ``Console`` that, as a second line of defence, replaces any control
  character still present in text it renders (other than the newlines and tabs the renderer writes) with
  its visible Unicode "control picture".
- :func:`html_text` escapes for HTML and shows control characters as :func:`plain` does.
- :func:`csv_cell` neutralizes spreadsheet formulas: a cell starting with ``=``, ``+``, ``-``, ``@``, tab or
  carriage return gets a leading ``'`` (OWASP, "CSV Injection"); CSV files are also written with every
  field quoted.
"""
from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape as _markup_escape
from rich.segment import Segment
from rich.text import Text

__all__ = ["CSV_FORMULA_START", "csv_cell", "html_text", "plain", "safe", "safe_console", "safe_text", "unsafe_chars"]

# C0 and C1 controls and DEL; bidirectional embeddings, overrides and isolates; line/paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape_char(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def unsafe_chars(text: str) -> list[str]:
    """The characters of ``text`` a terminal could act on (for tests and checks)."""
    return _UNSAFE.findall(text)


def plain(value: Any) -> str:
    """``value`` as text with control characters shown escaped; no markup handling."""
    return _UNSAFE.sub(_escape_char, str(value))


def safe(value: Any) -> str:
    """``value`` ready to embed in rich markup: control characters escaped, ``[`` tags escaped."""
    return _markup_escape(plain(value))


def safe_text(value: Any, style: str = "") -> Text:
    """A rich ``Text`` (never markup) of ``value`` with control characters shown escaped."""
    return Text(plain(value), style=style)


def html_text(value: Any) -> str:
    """``value`` escaped for HTML text and attributes, control characters shown as :func:`plain` does."""
    return html.escape(plain(value), quote=True)


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet will not run as a formula; non-strings pass through unchanged."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value


_PICTURES = {c: chr(0x2400 + c) for c in range(0x20)} | {0x7F: "\u2421"}
_PICTURES |= {c: "\ufffd" for c in range(0x80, 0xA0)}
_PICTURES |= {ord(c): "\ufffd" for c in "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
              "\u2028\u2029"}
for _kept in ("\n", "\t"):
    _PICTURES.pop(ord(_kept))


PIPED_WIDTH = 10_000  # columns of a console writing to a pipe or a file: rows are printed whole


class _SafeConsole(Console):
    """A Console whose rendered text keeps no control character but the renderer's newlines and tabs.

    Applied to every segment the renderer produces (its own control sequences, such as colours and cursor
    moves, are separate segments and kept); the replacement is one character for one. Writing to a pipe or
    a file (no terminal, no width given, no ``COLUMNS``), it is :data:`PIPED_WIDTH` columns wide, so a
    table's rows are never wrapped and a name is never cut, as ``kubectl get`` prints them.
    """

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(PIPED_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            if seg.control is None and _UNSAFE.search(seg.text):
                yield Segment(seg.text.translate(_PICTURES), seg.style)
            else:
                yield seg


def safe_console(**kwargs: Any) -> Console:
    """A rich ``Console`` (same arguments) that never writes a control character it was given as text."""
    return _SafeConsole(**kwargs)
