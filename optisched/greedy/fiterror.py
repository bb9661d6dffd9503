"""FitError messages, worded as ``framework.FitError.Error()`` (``pkg/scheduler/framework/types.go``)."""
from __future__ import annotations

from collections import Counter

__all__ = ["fit_error_message", "histogram"]


def histogram(reasons: Counter) -> str:
    """``"2 Insufficient cpu, 3 node(s) …"``: count and reason, sorted as strings (Go's ``sort.Strings``)."""
    return ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))


def fit_error_message(num_all_nodes: int, reasons: Counter, pre_filter_msg: str = "",
                      post_filter_msg: str = "") -> str:
    """``0/N nodes are available: <histogram>. <post filter message>.``"""
    msg = f"0/{num_all_nodes} nodes are available:"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    elif reasons:
        msg += f" {histogram(reasons)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}."
    return msg
