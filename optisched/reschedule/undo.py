"""``optisched reschedule --undo-cordons``: restore the nodes ``--apply`` cordoned, after a run that died
or stopped, from the marks it left on them (:mod:`.marks`).

Only marked nodes are touched (those of ``--plan ID`` when given). Per marked node:

- cordoned and holding pods (:func:`.marks.holding`), or cordoned for the plan's duration only
  (``cordoned-for: held``, which a finished run uncordons too): uncordoned, the mark removed, in one PATCH;
- cordoned, emptied by the plan (``cordoned-for: emptied``) and empty now: kept cordoned and marked, for
  an autoscaler to remove as a finished run leaves it; ``--all`` uncordons it too;
- schedulable already (someone ran ``kubectl uncordon``) but still marked: the mark is removed.

A node unschedulable without the mark is the user's: never touched.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .cordons import api_error, release
from .marks import Mark, holding, list_nodes, list_pods, mark_of

__all__ = ["Action", "UndoReport", "decide", "undo_cordons"]


class Action(StrEnum):
    UNCORDON = "uncordon"
    KEEP = "keep"  # emptied and empty: left cordoned for an autoscaler
    UNMARK = "unmark"  # schedulable already: the stale mark removed


def decide(marks: list[Mark], occupied: set[str], plan_id: str | None, everything: bool) -> list[tuple[Mark, Action]]:
    """What ``--undo-cordons`` does to each marked node (the module docstring); ``occupied``: the nodes
    holding pods."""
    out = []
    for m in marks:
        if plan_id is not None and m.plan != plan_id:
            continue
        if not m.unschedulable:
            out.append((m, Action.UNMARK))
        elif everything or m.node in occupied or m.why == "held":
            out.append((m, Action.UNCORDON))
        else:
            out.append((m, Action.KEEP))
    return out


@dataclass
class UndoReport:
    lines: list[str] = field(default_factory=list)
    failed: bool = False  # some node could not be restored


def _origin(m: Mark) -> str:
    why = {"emptied": ", to empty it", "held": ", for the plan's duration"}.get(m.why, "")
    return f"cordoned by plan {m.plan} at {m.at or 'an unknown time'}{why}"


def undo_cordons(api: Any, plan_id: str | None = None, everything: bool = False) -> UndoReport:
    """Restore the marked nodes through ``api`` (a kubernetes ``CoreV1Api``): one line per node."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    report = UndoReport()
    try:
        marks = [m for n in list_nodes(api) if (m := mark_of(n)) is not None]
        todo = decide(marks, holding(list_pods(api)) if marks else set(), plan_id, everything)
    except (ApiException, HTTPError) as e:
        return UndoReport([f"nothing was changed: listing the nodes and pods answered {api_error(e)}"], True)
    if not todo:
        report.lines.append("no node carries an optisched mark" + (f" of plan {plan_id}" if plan_id else ""))
    for m, action in todo:
        if action is Action.KEEP:
            report.lines.append(f"kept cordoned {m.node}: empty, {_origin(m)} (--all uncordons it)")
            continue
        done, why = release(api, m.node, m.plan)
        if why:
            report.failed = True
            report.lines.append(why)
        elif done == "uncordoned":
            report.lines.append(f"uncordoned {m.node} ({_origin(m)})")
        elif done == "unmarked":
            report.lines.append(f"removed the mark from {m.node}, schedulable already ({_origin(m)})")
        else:
            report.lines.append(f"left {m.node} as it is: its mark changed since the nodes were listed")
    return report
