"""Reading a strategy's ``args`` with errors that name the file, the object and the field."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = ["Args"]


@dataclass(frozen=True)
class Args:
    """One plugin's ``args`` mapping, where it sits in the policy file, and the fields it may have."""

    raw: dict[str, Any]
    source: str
    path: str

    def error(self, field: str, message: str) -> InputError:
        return InputError(message, source=self.source, obj="DeschedulerPolicy", path=f"{self.path}.{field}")

    def only(self, *known: str) -> Args:
        """Reject unknown fields, as the descheduler's strict decoding does."""
        for k in self.raw:
            if k not in known and k not in ("apiVersion", "kind"):
                raise self.error(k, f"unknown field; fields: {', '.join(known) or '(none)'}")
        return self

    def get(self, field: str, kind: type, default: Any) -> Any:
        v = self.raw.get(field, default)
        if v is default:
            return v
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.error(field, f"{v!r} is not an integer")
        if kind is not int and not isinstance(v, kind):
            raise self.error(field, f"{v!r} is not a {kind.__name__}")
        return v

    def count(self, field: str) -> int | None:
        v = self.get(field, int, None)
        if v is not None and v < 0:
            raise self.error(field, f"{v} is negative")
        return v

    def percentages(self, field: str) -> dict[str, float]:
        """A ``ResourceThresholds`` map: resource name -> percentage in [0, 100]."""
        raw = self.get(field, dict, {})
        for name, v in raw.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 100:
                raise self.error(f"{field}.{name}", f"{v!r} is not a percentage between 0 and 100")
        return {str(k): float(v) for k, v in raw.items()}
