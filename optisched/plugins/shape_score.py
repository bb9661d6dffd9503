"""The integer arithmetic kube-scheduler's scores share: Go's division and rounding, and
``pkg/scheduler/framework/plugins/helper/shape_score.go``'s ``BuildBrokenLinearFunction`` (used by
NodeResourcesFit's RequestedToCapacityRatio and VolumeBinding's storage-capacity score; v1.35.4 and
v1.36.2 alike)."""
from __future__ import annotations

import numpy as np

__all__ = ["broken_linear", "go_div", "go_round"]


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's integer division: the quotient truncated toward zero."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def go_round(x: np.ndarray) -> np.ndarray:
    """``math.Round``: to the nearest integer, halves away from zero (exact: ``x - trunc(x)`` is exact)."""
    x = np.asarray(x, dtype=np.float64)
    t = np.trunc(x)
    return (t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)).astype(np.int64)


def broken_linear(points: list[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """``helper.BuildBrokenLinearFunction``: the first point's score up to its utilization, linear
    between points (Go integer division), the last point's score beyond."""
    p = np.asarray(p, dtype=np.int64)
    out = np.full(p.shape, points[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(points):
        hit = ~done & (p <= u)
        if i == 0:
            out[hit] = s
        else:
            u0, s0 = points[i - 1]
            out[hit] = s0 + go_div((s - s0) * (p[hit] - u0), u - u0)
        done |= hit
    return out
