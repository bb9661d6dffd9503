"""The building blocks of optisched's HTML reports (``compare --report``, ``reschedule --report``):
inline CSS, tables, embedded figures and the page around them. Self-contained: no scripts and no
external references, so a page opens from disk and can be mailed as a single file. Every text from the
input goes through :func:`optisched.textsafe.html_text`."""
from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..textsafe import html_text

__all__ = ["CSS", "e", "figure", "is_number", "page", "table"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;margin:0 0 16px}.lead{font-size:16px;margin:12px 0 4px}
.runs{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.run{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:180px}
.run b{font-size:15px}.run span{display:block;color:#555;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #e1e4e8;padding:3px 8px;text-align:left;vertical-align:top;max-width:380px}
th{background:#f0f2f5;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.diff{background:#fff4d6;font-weight:600}tr:nth-child(even) td{background-color:#fafbfc}
tr:nth-child(even) td.diff{background:#fff0c8}
.wide{overflow-x:auto}.tall{max-height:640px;overflow-y:auto}
figure{margin:12px 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#555;font-size:13px}.note{color:#666;font-size:13px}
dl.defs dt{font-weight:600;margin-top:8px}dl.defs dd{margin:2px 0 0 16px;color:#333}
"""


def e(v: Any) -> str:
    return html_text(v)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def table(headers: list[str], rows: Iterable[list[tuple[str, bool, bool]]], tall: bool = False) -> str:
    """Rows of (text, numeric, differs-from-first-run) cells; ``tall`` tables scroll inside the page."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for text, num, diff in row:
            cls = " ".join(c for c, on in (("num", num), ("diff", diff)) if on)
            cells.append(f'<td class="{cls}">{e(text)}</td>' if cls else f"<td>{e(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="{"wide tall" if tall else "wide"}"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def figure(png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{e(alt)}">'
            f"<figcaption>{e(caption)}</figcaption></figure>")


def page(title: str, parts: list[str]) -> str:
    """The document: ``title`` (escaped here) and the body's ``parts`` (HTML, escaped by their makers)."""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(parts)}</main></body></html>\n")
