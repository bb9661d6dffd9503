"""Output paths: checked before any work starts, written without touching what the user gave.

Rules (each refusal is an :class:`InputError`, exit status 2, before the input is even loaded):

- ``-`` means standard output.
- An output path may not be one of the input files (cluster files, ``--profile``, policy files), nor lie
  inside a folder given as input (the next load of that folder would read it), nor be given twice.
- It must be writable now: its folder exists and may be written, and an existing path is a regular file
  we may write (or ``/dev/null``); a device such as ``/dev/full``, a FIFO or a folder is refused — use ``-``
  to write to standard output.

A file is written whole or not at all: into a hidden file beside it, renamed over it when complete (a
second Ctrl-C, which exits at once, removes the hidden file). CSV files are written with every field quoted and formula-leading cells neutralized
(:func:`optisched.textsafe.csv_cell`).
"""
from __future__ import annotations

import csv
import io
import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from . import interrupt
from .errors import InputError
from .textsafe import csv_cell

__all__ = ["STDOUT", "check_outputs", "csv_text", "input_paths", "is_stdout", "write_text"]

STDOUT = "-"


def is_stdout(path: str | Path | None) -> bool:
    """Whether an output option names standard output (``-``)."""
    return path is not None and str(path) == STDOUT


def input_paths(*groups: Iterable[str | Path | None] | str | Path | None) -> list[Path]:
    """The existing input files and folders among ``groups`` (stdin and names that are not paths dropped)."""
    found: list[Path] = []
    for group in groups:
        items = [group] if group is None or isinstance(group, (str, Path)) else list(group)
        for item in items:
            if item is None or str(item) == STDOUT:
                continue
            p = Path(item)
            if p.exists():
                found.append(p)
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _refuse_input_overlap(option: str, path: Path, inputs: list[Path]) -> None:
    resolved = path.resolve()
    for src in inputs:
        if src.is_dir() and resolved.is_relative_to(src.resolve()):
            raise InputError(f"{path} is inside the input folder {src}; write outputs elsewhere", source=option)
        if _same(path, src):
            raise InputError(f"{path} is an input; it would be overwritten", source=option)


def _refuse_unwritable(option: str, path: Path, folder_ok: bool = False) -> None:
    if path.exists() or path.is_symlink():
        try:
            mode = path.stat().st_mode
        except OSError as e:
            raise InputError(f"{path}: {e.strerror}", source=option) from None
        if stat.S_ISDIR(mode):
            if not folder_ok:
                raise InputError(f"{path} is a folder, expected a file", source=option)
        elif folder_ok:
            raise InputError(f"{path} is not a folder", source=option)
        elif not stat.S_ISREG(mode) and not _same(path, Path(os.devnull)):
            raise InputError(f"{path} is not a regular file (use - for standard output)", source=option)
        if not os.access(path, os.W_OK):
            raise InputError(f"{path}: permission denied", source=option)
        return
    parent = path.parent
    while folder_ok and not parent.exists() and parent != parent.parent:
        parent = parent.parent  # a report folder's missing parents are created
    if not parent.is_dir():
        raise InputError(f"folder {parent} does not exist", source=option)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{path}: permission denied (cannot write in {parent})", source=option)


def check_outputs(outputs: Mapping[str, str | Path | None], inputs: list[Path], *,
                  folders: Iterable[str] = ()) -> None:
    """Refuse, before any work, output paths that would overwrite an input or cannot be written.

    ``outputs`` maps option names (``--output``) to paths; options named in ``folders`` are folders.
    """
    seen: dict[Path, str] = {}
    for option, value in outputs.items():
        if value is None:
            continue
        if is_stdout(value):
            if option in folders:
                raise InputError("- (standard output) cannot hold a folder of files", source=option)
            continue
        path = Path(value)
        _refuse_input_overlap(option, path, inputs)
        _refuse_unwritable(option, path, folder_ok=option in folders)
        key = path.resolve()
        if key in seen:
            raise InputError(f"{path} is also given to {seen[key]}", source=option)
        seen[key] = option


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to a file or, for ``-``, to standard output; a write that fails is an input error."""
    if is_stdout(path):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        _write_whole(Path(os.path.realpath(path)), text)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror}", source=str(path)) from None


def _write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` by a hidden file renamed over it (keeping an existing file's mode); a path that
    is not a regular file (``/dev/null``), or a folder that takes no new file, is written in place."""
    if path.exists() and not path.is_file():
        path.write_text(text, encoding="utf-8")
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with interrupt.temporary(tmp):
        try:
            tmp.write_text(text, encoding="utf-8")
        except PermissionError:
            path.write_text(text, encoding="utf-8")
            return
        try:
            if path.exists():
                os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def csv_text(header: list[str], rows: Iterable[Iterable[object]]) -> str:
    """CSV with every field quoted and formula-leading strings neutralized."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(header)
    w.writerows([csv_cell(c) for c in row] for row in rows)
    return buf.getvalue()
