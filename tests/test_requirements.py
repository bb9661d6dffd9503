"""Tests that need what a clone lacks skip with a reason, except under CI, where they must run."""
from __future__ import annotations

import pytest
from conftest import DATASETS_ENV, REQUIRE_ALL_ENV, datasets_dir, require


@pytest.mark.parametrize(("env", "outcome"), [
    (None, pytest.skip.Exception),
    ("0", pytest.skip.Exception),
    ("1", pytest.fail.Exception),
], ids=["a missing requirement skips the test by default",
        "OPTISCHED_REQUIRE_ALL=0 still skips",
        "OPTISCHED_REQUIRE_ALL=1 turns the skip into a failure"])
def test_missing_requirement(monkeypatch, env, outcome):
    if env is None:
        monkeypatch.delenv(REQUIRE_ALL_ENV, raising=False)
    else:
        monkeypatch.setenv(REQUIRE_ALL_ENV, env)
    with pytest.raises(outcome, match="the thing is missing"):
        require(False, "the thing is missing")


def test_a_present_requirement_neither_skips_nor_fails(monkeypatch):
    monkeypatch.setenv(REQUIRE_ALL_ENV, "1")
    require(True, "never shown")


def test_the_datasets_folder_is_beside_the_clone_unless_given(monkeypatch, tmp_path):
    monkeypatch.delenv(DATASETS_ENV, raising=False)
    assert datasets_dir().parts[-2:] == ("shared", "datasets")
    monkeypatch.setenv(DATASETS_ENV, str(tmp_path))
    assert datasets_dir() == tmp_path
