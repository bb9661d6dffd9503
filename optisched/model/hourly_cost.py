"""A node's price per hour: the label or annotation :data:`COST_KEY`, checked when the node is loaded.

The price is a decimal number of any currency per hour (``"0.192"``) from 0 to :data:`MAX_COST`; the label
wins over the annotation. The metrics (:mod:`optisched.metrics.cost`) and optimal mode's ``pack``
objective read it; a value out of range is bad input, reported at load with the file, the node and the field.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic_core import PydanticCustomError, ValidationError

__all__ = ["COST_KEY", "MAX_COST", "check_cost", "cost_error", "cost_text", "parse_cost"]

COST_KEY = "optisched.io/hourly-cost"
MAX_COST = Decimal(1_000_000)  # per node and hour: thousandths summed over 10^5 nodes stay far within int64


def cost_text(meta: Any) -> tuple[str, str] | None:
    """(``labels`` or ``annotations``, the text) of the cost a node's ``metadata`` carries, or None."""
    for where in ("labels", "annotations"):
        text = getattr(meta, where).get(COST_KEY)
        if text is not None:
            return where, text
    return None


def parse_cost(text: str) -> Decimal | None:
    """The price in ``text``, or None when it is not a finite number from 0 to :data:`MAX_COST`."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() and 0 <= value <= MAX_COST else None


def cost_error(text: str) -> str:
    return f"{text!r} is not a number from 0 to {MAX_COST}"


def check_cost(node: Any) -> Any:
    """A Node's validator: its cost is a price in range, or the field is named (``.metadata.annotations
    [optisched.io/hourly-cost]``) in a validation error the loader reports with the file."""
    found = cost_text(node.metadata)
    if found is not None and parse_cost(found[1]) is None:
        where, text = found
        raise ValidationError.from_exception_data("Node", [{
            "type": PydanticCustomError("value_error", cost_error(text)),
            "loc": ("metadata", where, COST_KEY), "input": text}])
    return node
