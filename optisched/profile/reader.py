"""Strict decoding of a ``KubeSchedulerConfiguration``'s fields, as kube-scheduler's
(``pkg/scheduler/apis/config/scheme/scheme.go``): unknown fields are errors, and every error names the
field path."""
from __future__ import annotations

import re
from typing import Any

from ..errors import InputError
from .defaults import KIND

__all__ = ["INT32_MAX", "FieldReader"]

INT32_MAX = 2**31 - 1
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _what(v: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
             float: "a number", type(None): "null"}
    return names.get(type(v), type(v).__name__)


class FieldReader:
    """Typed access to the decoded YAML, failing with the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, msg: str) -> InputError:
        return InputError(msg, source=self.source, obj=KIND, path=path)

    def obj(self, v: Any, path: str, fields: tuple[str, ...] | None, required: bool = False) -> dict:
        """A mapping (null = empty unless required) whose keys are all in ``fields`` (None: any)."""
        if v is None and not required:
            return {}
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {_what(v)}")
        for key in v:
            if fields is not None and key not in fields:
                raise self.fail(f"{path}.{key}", f"unknown field; expected one of {', '.join(fields)}")
        return v

    def seq(self, v: Any, path: str) -> list:
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {_what(v)}")
        return v

    def integer(self, v: Any, path: str, lo: int = -INT32_MAX - 1, hi: int = INT32_MAX) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"{v!r} is not an integer")
        if not lo <= v <= hi:
            raise self.fail(path, f"{v} must be at least {lo}" if v < lo and hi >= INT32_MAX
                            else f"{v} is not in the valid range [{lo}, {hi}]")
        return v

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.fail(path, f"expected a non-empty string, got {v!r}" if isinstance(v, str)
                            else f"expected a non-empty string, got {_what(v)}")
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.fail(path, f"{v!r} is not true or false")
        return v

    def choice(self, v: Any, path: str, options: tuple[str, ...]) -> str:
        if v not in options:
            head = "required: one of" if v in (None, "") else f"{v!r} is not one of"
            raise self.fail(path, f"{head} {', '.join(options)}")
        return v

    def qualified_name(self, v: Any, path: str) -> str:
        """``ValidateLabelName``: an optional DNS-subdomain prefix and ``/``, then a name of up to 63 chars."""
        v = self.string(v, path)
        prefix, _, name = v.rpartition("/")
        if not _NAME.fullmatch(name) or len(name) > 63 or "/" in v and not _SUBDOMAIN.fullmatch(prefix):
            raise self.fail(path, f"{v!r} is not a qualified name (an optional DNS-subdomain prefix and '/', "
                                  "then up to 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)")
        return v

    def duration(self, v: Any, path: str, minimum: float) -> float:
        """A Go ``time.Duration`` string (``metav1.Duration``) of at least ``minimum`` seconds."""
        text = v if isinstance(v, str) else ""
        body = text.lstrip("+-")
        parts = _DURATION.findall(body)
        if body != "0" and (not parts or "".join(a + u for a, u in parts) != body):
            raise self.fail(path, f"{v!r} is not a duration such as '10s' or '1m30s'")
        seconds = sum(float(a) * _UNIT_SECONDS[u] for a, u in parts) * (-1 if text.startswith("-") else 1)
        if seconds < minimum:
            raise self.fail(path, f"{v!r} must be at least {minimum:g}s")
        return seconds

