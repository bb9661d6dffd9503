"""optisched: reproduce kube-scheduler cycle by cycle, then beat it.

Python API (for notebooks and experiments; the CLI calls the same functions)::

    import optisched
    cluster = optisched.load(["cluster.yaml"])           # files, folders, "-" for stdin
    result = optisched.schedule(cluster, tie_break="first", seed=0)    # greedy mode
    result.placements()                                  # {"ns/name": "node" or None}
    best = optisched.solve(cluster, mode="optimal", time_limit=30, seed=1)
    best.placements(), best.certificate.to_dict()        # placements and the optimality certificate
    cmp = optisched.compare(cluster, time_limit=30)      # greedy vs optimal: .summary, .pods, .nodes, .plot_*()
    now = optisched.compare(cluster, replay=True)        # the running pods placed again, beside "current"
"""
from __future__ import annotations

from .api import compare, load, reschedule, schedule, solve
from .version import KUBE_VERSION, __version__

__all__ = ["KUBE_VERSION", "__version__", "compare", "load", "reschedule", "schedule", "solve"]
