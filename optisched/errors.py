"""Errors a user can fix: each names the file, the object and the field path."""
from __future__ import annotations

__all__ = ["InputError"]


class InputError(Exception):
    """Bad input: raised with where it is (file, object, field) and what was expected.

    The CLI prints ``str(err)`` and exits with status 2, never a traceback.
    Example: ``nodes.yaml: Node/worker-3 .status.allocatable.cpu: '2x' is not a quantity``.
    """

    def __init__(self, message: str, *, source: str = "", obj: str = "", path: str = "") -> None:
        self.message = message
        self.source = source
        self.obj = obj
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = " ".join(p for p in (self.obj, self.path) if p)
        head = f"{self.source}: " if self.source else ""
        return f"{head}{where}: {self.message}" if where else f"{head}{self.message}"

    def located(self, *, source: str | None = None, obj: str | None = None, prefix: str = "") -> InputError:
        """Return a copy with the location filled in (keeps what is already known)."""
        return InputError(
            self.message,
            source=self.source or (source or ""),
            obj=self.obj or (obj or ""),
            path=(prefix + self.path) if prefix else self.path,
        )
