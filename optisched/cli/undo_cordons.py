"""``optisched reschedule --undo-cordons``: uncordon what an earlier ``--apply`` cordoned and marked."""
from __future__ import annotations

import typer

from ..errors import InputError
from . import common


def undo(cluster: list[str] | None, apply: bool, kubeconfig: str | None, context: str | None,
         plan_id: str | None, undo_all: bool) -> None:
    """Its own action, on a live cluster only."""
    if apply or cluster:
        raise InputError("--undo-cordons is its own action: give it --kubeconfig/--context only, "
                         "without CLUSTER files or --apply")
    if not (kubeconfig or context):
        raise InputError("--undo-cordons needs --kubeconfig or --context (the cluster to restore)")
    if plan_id is not None and not (len(plan_id) == 12 and all(c in "0123456789abcdef" for c in plan_id)):
        raise InputError(f"--plan: {plan_id!r} is not a plan id (12 hex digits: the planId of plan.json, the first "
                         "line of the summary)")
    from ..reschedule.apply import core_api
    from ..reschedule.undo import undo_cordons

    done = undo_cordons(core_api(kubeconfig, context), plan_id, undo_all)
    common.print_lines(done.lines)
    if done.failed:
        raise typer.Exit(1)
