"""Kubernetes quantities: every form, exact conversions, clear rejections."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optisched.model.quantity import QuantityError, milli_value, parse_quantity, to_scheduler_units, value

CASES = [
    # text, milli value, value
    ("250m", 250, 1),
    ("0.5", 500, 1),
    ("1", 1000, 1),
    ("1e3", 1_000_000, 1000),
    ("1E3", 1_000_000, 1000),
    ("1.5e-3", 2, 1),
    ("1k", 1_000_000, 1000),
    ("1M", 1_000_000_000, 1_000_000),
    ("1G", 10**12, 10**9),
    ("1T", 10**15, 10**12),
    ("1P", 10**18, 10**15),
    ("1E", 10**21, 10**18),
    ("1Ki", 1024_000, 1024),
    ("1Mi", 2**20 * 1000, 2**20),
    ("1Gi", 2**30 * 1000, 2**30),
    ("1.5Gi", 3 * 2**29 * 1000, 3 * 2**29),
    ("1Ti", 2**40 * 1000, 2**40),
    ("1Pi", 2**50 * 1000, 2**50),
    ("1Ei", 2**60 * 1000, 2**60),
    ("100n", 1, 1),
    ("100u", 1, 1),
    ("1001u", 2, 1),
    (".5", 500, 1),
    ("5.", 5000, 5),
    ("+3", 3000, 3),
    ("0", 0, 0),
    ("0.1Ki", 102_400, 103),
]


@pytest.mark.parametrize("text,milli,whole", CASES, ids=[c[0] for c in CASES])
def test_quantity_converts_like_kubernetes(text, milli, whole):
    n = parse_quantity(text)
    assert milli_value(n) == milli
    assert value(n) == whole


@pytest.mark.parametrize("text", ["2x", "", " 1", "1 ", "1.2.3", "Mi", "1mi", "1KI", "e3", "1e", "--1", "1e3.5",
                                  "0x10", "1,5", "∞"])
def test_malformed_quantities_are_rejected(text):
    with pytest.raises(QuantityError, match="is not a quantity"):
        parse_quantity(text)


def test_numbers_from_yaml_are_quantities():
    assert to_scheduler_units("cpu", parse_quantity(2)) == 2000
    assert to_scheduler_units("cpu", parse_quantity(0.25)) == 250
    assert to_scheduler_units("memory", parse_quantity(1024)) == 1024


def test_cpu_rounds_up_to_whole_millicores():
    assert to_scheduler_units("cpu", parse_quantity("0.0001")) == 1


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "m", "k", "Mi", "Gi"]))
def test_sums_are_exact_before_rounding(n, suffix):
    """Adding quantities then rounding equals rounding the exact total (no per-term drift)."""
    a = parse_quantity(f"{n}{suffix}")
    b = parse_quantity(f"{n}{suffix}")
    assert milli_value(a + b) == milli_value(parse_quantity(f"{2 * n}{suffix}"))
