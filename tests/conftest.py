"""What some tests need from outside the repository, and what happens when it is missing.

Everything else the suite reads is in the repository (``tests/data/``, ``datasets/examples/``), so
``python -m pytest`` passes in a fresh clone. Two things are not: the public traces in
``../shared/datasets`` beside the clone (read in place, never copied; ``OPTISCHED_DATASETS`` points
elsewhere) and a Chromium binary for the report's browser test. A test asks for them through the
``shared_datasets`` and ``chromium`` fixtures, and for an optional extra's package (the kubernetes client,
Ray) through ``require_extra``: when one is missing the test is skipped with the reason (``-rs`` in
``pyproject.toml`` prints it), and with ``OPTISCHED_REQUIRE_ALL=1`` (set by ``.ci/run``'s run with every
extra) it fails instead, so CI always runs every test.

Hypothesis draws new examples on every run; ``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) draws the
same ones every time (``derandomize``), so a property can fail CI only through a change, never by
chance. A failure found locally is kept as an explicit example or test beside its property.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

_CORE = ("ortools", "networkx", "pydantic", "pandas", "numpy", "yaml", "typer", "rich", "matplotlib", "pyarrow")
_MISSING = [m for m in _CORE if importlib.util.find_spec(m) is None]
if _MISSING:  # the install step was skipped (a bare `python -m pytest` in a fresh clone): do it, as the README says
    import subprocess

    print(f"{', '.join(_MISSING)} not installed for this Python: python -m pip install -q -e '.[dev]'", flush=True)
    subprocess.call([sys.executable, "-m", "pip", "install", "-q", "-e", f"{Path(__file__).resolve().parents[1]}[dev]"])
    importlib.invalidate_caches()
    _MISSING = [m for m in _CORE if importlib.util.find_spec(m) is None]
if _MISSING:  # one line instead of dozens of collection errors when the install failed
    pytest.exit(f"{', '.join(_MISSING)} not installed for this Python ({sys.executable}): "
                "run python -m pip install -e '.[dev]' first", returncode=4)
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO = Path(__file__).resolve().parents[1]
REQUIRE_ALL_ENV = "OPTISCHED_REQUIRE_ALL"
DATASETS_ENV = "OPTISCHED_DATASETS"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def require(available: bool, reason: str) -> None:
    """Return when ``available``; otherwise skip with ``reason``, or fail when every test must run."""
    if available:
        return
    if os.environ.get(REQUIRE_ALL_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_ALL_ENV} is set: every test must run)", pytrace=False)
    pytest.skip(reason)


def require_extra(module: str, extra: str, why: str) -> None:
    """Return when ``module`` can be imported; otherwise skip (or fail under OPTISCHED_REQUIRE_ALL) naming the
    extra that installs it."""
    require(importlib.util.find_spec(module) is not None, f"{why} needs the {extra} extra (pip install -e '.[{extra}]')")


def datasets_dir() -> Path:
    """The public datasets: ``$OPTISCHED_DATASETS``, else ``../shared/datasets`` beside the clone."""
    given = os.environ.get(DATASETS_ENV)
    return Path(given) if given else REPO.parent / "shared" / "datasets"


def browser() -> str | None:
    """The path of a headless-capable Chromium, or None."""
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The public datasets folder (``datasets_dir``); skips, or fails under OPTISCHED_REQUIRE_ALL, without it."""
    path = datasets_dir()
    require(path.is_dir(), f"the public datasets are not at {path} (clone beside ../shared, or set {DATASETS_ENV})")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's path; skips, or fails under OPTISCHED_REQUIRE_ALL, when none is installed."""
    path = browser()
    require(path is not None, "Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    assert path is not None
    return path
