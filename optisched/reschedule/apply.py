"""``--apply``: carry out a plan through the Eviction API, wave by wave, and stop where the cluster
stops following the prediction.

Per wave: each pod is evicted (``POST .../pods/NAME/eviction``, a ``policy/v1`` Eviction). The API
server answers 429 when a PodDisruptionBudget allows no disruption now (kubernetes v1.35.4
``pkg/registry/core/pod/storage/eviction.go``): retried with exponential backoff until a deadline, then the
run stops. It answers 500 when several budgets select the pod: reported and skipped, as the descheduler
does. 404: the pod is gone, the cluster differs from the plan: the run stops. Then the pods are listed
until each evicted pod's controller has a replacement bound to a node (a new pod with the same controller
uid); a replacement on another node than predicted, or a new pod of another controller, stops the run
with what differs. Nothing is evicted after a stop. A pod the plan moves twice (a detour through a third
node, :mod:`.cycles`) is evicted the second time under its replacement's name.

First the nodes are listed: nodes an earlier run cordoned and marked (:mod:`.marks`) are reported, and
when one of them is among this plan's nodes (cordoned, held, a source or a predicted landing) and is one
``--undo-cordons`` would restore (:mod:`.undo`), nothing is changed. Then the plan's ``cordoned`` and ``held`` nodes are cordoned and marked with the plan's id
(:mod:`.cordons`), as every replay that predicted the landings assumed; a node that cannot be cordoned
stops the run before any eviction, with the nodes already cordoned uncordoned again. Before each wave the
pods and nodes are read again and the run stops when the cluster no longer matches the prediction
(:mod:`.recheck`: the wave's nodes' pods and their requests, every node's labels, taints, allocatable and
schedulability). Between two evictions, and while it waits, the run honours an interrupt
(:func:`optisched.interrupt.requested`: Ctrl-C) as a stop. At the end (the last wave, or a stop) the
``held`` nodes this run cordoned are uncordoned and the ``cordoned`` ones stay cordoned (``kubectl drain`` leaves a drained node
cordoned, and cluster-autoscaler's scale-down removes it), except those that still hold pods
(:func:`.marks.holding`: after a stop, or an eviction skipped), which are uncordoned too. Uncordoning
removes the mark.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import interrupt
from ..errors import InputError
from .cordons import api_error, cordon, uncordon_all
from .marks import earlier_line, holding, list_nodes, list_pods, mark_of
from .plan import ReschedulePlan
from .recheck import Reference, mismatch, reference
from .undo import Action, decide
from .waves import Move, Staging

__all__ = ["ApplyReport", "apply_live", "apply_plan", "core_api"]

INTERRUPTED = "interrupted (Ctrl-C or SIGTERM)"


@dataclass
class ApplyReport:
    plan_id: str = ""
    earlier: str | None = None  # the nodes an earlier run cordoned and marked, one line
    refused: list[str] = field(default_factory=list)  # those among this plan's nodes: nothing was changed
    evicted: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (pod, why)
    waves_done: int = 0
    stopped: str | None = None  # why the run stopped early
    cordoned: list[str] = field(default_factory=list)  # nodes this run cordoned
    found_cordoned: list[str] = field(default_factory=list)  # nodes of the plan unschedulable already
    uncordoned: list[str] = field(default_factory=list)  # nodes this run cordoned, then uncordoned
    uncordon_failed: list[tuple[str, str]] = field(default_factory=list)  # (node, why)
    left_cordoned: list[str] = field(default_factory=list)  # nodes this run cordoned for good (emptied)

    @property
    def failed(self) -> bool:
        """The run refused the plan, stopped early or left a node cordoned that it meant to uncordon."""
        return bool(self.refused or self.stopped or self.uncordon_failed)

    def lines(self) -> list[str]:
        if self.refused:
            return [f"{self.earlier} (nodes of this plan among them: {', '.join(self.refused)}; nothing was changed)"]
        out = [self.earlier] if self.earlier else []
        out += [f"cordoned {', '.join(self.cordoned)}"] if self.cordoned else []
        if self.found_cordoned:
            out.append(f"unschedulable already, left as found: {', '.join(self.found_cordoned)}")
        out.append(f"plan {self.plan_id}: applied {self.waves_done} wave(s), {len(self.evicted)} eviction(s)")
        out += [f"skipped {pod}: {why}" for pod, why in self.skipped]
        if self.stopped:
            out.append(f"stopped: {self.stopped}")
        if self.uncordoned:
            out.append(f"uncordoned {', '.join(self.uncordoned)}")
        out += [f"{why}: left cordoned (optisched reschedule --undo-cordons --plan {self.plan_id})"
                for node, why in self.uncordon_failed]
        if self.left_cordoned:
            out.append(f"left cordoned: {', '.join(self.left_cordoned)} (emptied, for an autoscaler to remove)")
        return out


def _nap(seconds: float) -> None:
    """Sleep ``seconds``, ended early by an interrupt."""
    end = time.monotonic() + seconds
    while not interrupt.requested() and (left := end - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))


def _controller(pod: dict) -> str | None:
    refs = pod["metadata"].get("ownerReferences") or []
    ctl = [r for r in refs if r.get("controller")] or refs
    return ctl[0].get("uid") or ctl[0].get("name") if ctl else None


def _evict(api: Any, body_of: Callable[[str, str], Any], key: str, deadline: float,
           sleep: Callable[[float], None]) -> str | None:
    """None when evicted; else ``"skip: ..."`` or ``"stop: ..."``."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]

    ns, name = key.split("/", 1)
    delay = 0.5
    while True:
        try:
            api.create_namespaced_pod_eviction(name, ns, body_of(name, ns))
            return None
        except ApiException as e:
            if e.status == 429 and time.monotonic() + delay < deadline:
                sleep(delay)
                if interrupt.requested():
                    return f"stop: {INTERRUPTED}"
                delay = min(delay * 2, 10.0)
                continue
            if e.status == 429:
                return f"stop: {key}: a PodDisruptionBudget still allows no disruption (429) at the deadline"
            if e.status == 500:
                return f"skip: several PodDisruptionBudgets select it (500): {e.reason}"
            return f"stop: {key}: eviction answered {e.status} {e.reason}"


def _wait(api: Any, before: dict[str, dict], owners: Counter, timeout: float, poll: float,
          sleep: Callable[[float], None]) -> tuple[dict[str, dict], dict[str, dict] | None, str | None]:
    """(the pods read, the new ones, None) once every evicted controller has its replacements bound;
    (the pods read, None, why) otherwise."""
    end = time.monotonic() + timeout
    while True:
        now = list_pods(api)
        new = {k: p for k, p in now.items() if k not in before}
        strangers = [k for k, p in new.items() if _controller(p) not in owners]
        if strangers:
            return now, None, f"a pod the plan does not expect appeared: {strangers[0]}"
        landed = Counter(_controller(p) for p in new.values() if p.get("spec", {}).get("nodeName"))
        if all(landed[o] >= n for o, n in owners.items()):
            return now, new, None
        if interrupt.requested():
            return now, None, INTERRUPTED
        if time.monotonic() >= end:
            return now, None, "replacements not scheduled before the timeout"
        sleep(poll)


def _compare(wave: list[Move], evicted: list[str], owner_of: dict[str, str | None], new: dict[str, dict]) -> str | None:
    """Per controller, the nodes its replacements landed on against the nodes predicted."""
    for owner in {owner_of[k] for k in evicted}:
        predicted = Counter(m.predicted for m in wave if m.key in evicted and owner_of[m.key] == owner)
        landed = Counter(p["spec"]["nodeName"] for p in new.values() if _controller(p) == owner)
        if predicted != landed:
            return (f"replacements of controller {owner} landed on {sorted(map(str, landed.elements()))}, "
                    f"the plan predicted {sorted(map(str, predicted.elements()))}")
    return None


def apply_plan(plan: ReschedulePlan, api: Any, *, expected: Reference | dict[str, str] | None = None,
               retry_for: float = 60.0,
               wait_for: float = 300.0, poll: float = 1.0, sleep: Callable[[float], None] = _nap) -> ApplyReport:
    """Check the marks, cordon, evict ``plan``'s waves through ``api`` (a kubernetes ``CoreV1Api``),
    uncordon; see the module docstring. ``expected``: the cluster the plan was made from (the first
    wave's reference, :func:`.recheck.placement`; or only pod -> node). Nothing is touched when the plan
    has no wave."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    report = ApplyReport(plan.plan_id)
    staging = plan.staging
    try:
        nodes = list_nodes(api)
        _check_marks(plan, nodes, api, report)
        if report.refused or not staging.waves:
            return report
        start = reference(list_pods(api), nodes, plan.requests) if expected is None else \
            expected if isinstance(expected, Reference) else Reference(dict(expected))
    except (ApiException, HTTPError) as e:
        report.stopped = f"before any change: the API server answered {api_error(e)}"
        return report
    report.stopped = _cordon(api, staging, report)
    if report.stopped:  # nothing evicted: every node as it was found
        _uncordon(api, report.cordoned, report)
        return report
    try:
        _run_waves(plan, api, report, start, retry_for, wait_for, poll, sleep)
    except (ApiException, HTTPError) as e:
        report.stopped = f"wave {report.waves_done + 1}: the API server answered {api_error(e)}"
    finally:
        _finish(api, staging, report)
    return report


def _check_marks(plan: ReschedulePlan, nodes: list[dict], api: Any, report: ApplyReport) -> None:
    """Report the cordoned nodes an earlier run marked; refuse the plan when it touches one of them that
    ``--undo-cordons`` would restore (an emptied node that is empty stays cordoned for an autoscaler, so
    it does not stop the run, or a run after ``--undo-cordons`` would stop again)."""
    marks = [m for n in nodes if (m := mark_of(n)) is not None and m.unschedulable]
    if not marks:
        return
    report.earlier = earlier_line(marks)
    staging = plan.staging
    mine = set(staging.cordoned) | set(staging.held) | {
        n for w in staging.waves for m in w.moves for n in (m.source, m.target, m.predicted) if n is not None}
    touched = [m for m in marks if m.node in mine]
    if touched:
        kept = {m.node for m, action in decide(touched, holding(list_pods(api)), None, False) if action is Action.KEEP}
        report.refused = [m.node for m in touched if m.node not in kept]


def _cordon(api: Any, staging: Staging, report: ApplyReport) -> str | None:
    """Cordon and mark every node the plan's replays held unschedulable; why it failed, if it did."""
    for name in dict.fromkeys(staging.cordoned + staging.held):
        if interrupt.requested():
            return INTERRUPTED
        changed, why = cordon(api, name, report.plan_id, "emptied" if name in staging.cordoned else "held")
        if why:
            return why
        (report.cordoned if changed else report.found_cordoned).append(name)
    return None


def _uncordon(api: Any, names: list[str], report: ApplyReport) -> None:
    done, failed = uncordon_all(api, names, report.plan_id)
    report.uncordoned += done
    report.uncordon_failed += failed


def _finish(api: Any, staging: Staging, report: ApplyReport) -> None:
    """Uncordon the held nodes this run cordoned, and the emptied ones that still hold pods (after a stop,
    or an eviction skipped); the others stay cordoned (and marked), for an autoscaler."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    emptied = [n for n in report.cordoned if n not in staging.held]
    back = [n for n in report.cordoned if n in staging.held]
    if emptied:
        try:
            occupied = holding(list_pods(api))
        except (ApiException, HTTPError) as e:
            why = f"listing pods answered {api_error(e)}"
            report.uncordon_failed += [(n, f"cannot tell whether node {n} still holds pods: {why}") for n in emptied]
            emptied = []
        else:
            back += [n for n in emptied if n in occupied]
            emptied = [n for n in emptied if n not in occupied]
    _uncordon(api, back, report)
    report.left_cordoned = emptied


def _run_waves(plan: ReschedulePlan, api: Any, report: ApplyReport, ref: Reference, retry_for: float,
               wait_for: float, poll: float, sleep: Callable[[float], None]) -> None:
    """Evict wave by wave into ``report``; ``report.stopped`` says why it stopped early. Each wave is
    checked against ``ref``: the cluster the plan was made from, then the pods read once the previous
    wave's replacements were bound with the nodes read before it (so a node changed while a wave ran
    stops the next one)."""
    from kubernetes import client  # type: ignore[import-not-found]

    def body_of(name: str, ns: str) -> Any:
        return client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=ns))

    live: dict[str, str] = {}  # a pod the plan moves again (a detour's second leg) -> its replacement's name
    gone: set[str] = set()  # every pod evicted so far, by the name it was evicted under
    for wave in plan.staging.waves:
        before = list_pods(api)
        now_ref = reference(before, list_nodes(api), plan.requests)
        why = INTERRUPTED if interrupt.requested() else \
            mismatch(wave.moves, live, ref, now_ref, gone, report.cordoned + report.found_cordoned)
        if why:
            report.stopped = f"before wave {report.waves_done + 1}: {why}"
            return
        owner_of = {m.key: _controller(before[k]) if (k := live.get(m.key, m.key)) in before else None
                    for m in wave.moves}
        evicted = _evict_wave(api, body_of, wave.moves, live, report, retry_for, sleep)
        gone |= {live.get(k, k) for k in evicted}
        if report.stopped:
            return
        owners = Counter(owner_of[k] for k in evicted if owner_of[k] is not None)
        now, new, why = _wait(api, before, owners, wait_for, poll, sleep)
        why = why or _compare(wave.moves, evicted, owner_of, new or {})
        if why:
            report.stopped = f"wave {report.waves_done + 1}: {why}"
            return
        live.update(_replacements(wave.moves, evicted, owner_of, new or {}))
        ref = reference(now, requests=plan.requests)
        ref.nodes = now_ref.nodes
        report.waves_done += 1


def _evict_wave(api: Any, body_of: Callable[[str, str], Any], wave: list[Move], live: dict[str, str],
                report: ApplyReport, retry_for: float, sleep: Callable[[float], None]) -> list[str]:
    """Evict ``wave``'s pods (under their replacements' names for a detour's second leg, ``live``) into
    ``report``, until a stop or an interrupt; the pods evicted."""
    evicted: list[str] = []
    for m in wave:
        why = f"stop: {INTERRUPTED}" if interrupt.requested() else \
            _evict(api, body_of, live.get(m.key, m.key), time.monotonic() + retry_for, sleep)
        if why is None:
            evicted.append(m.key)
        elif why.startswith("skip: "):
            report.skipped.append((m.key, why[6:]))
        else:
            report.stopped = why[6:]
            break
    report.evicted += evicted
    return evicted


def _replacements(wave: list[Move], evicted: list[str], owner_of: dict[str, str | None],
                  new: dict[str, dict]) -> dict[str, str]:
    """Per evicted pod, a replacement of its controller on the node predicted for it: the pod a later wave
    evicts when the plan moves it again (a detour's second leg). Replicas of one controller on one node are
    interchangeable, so any pairing among them will do."""
    free = dict(new)
    out: dict[str, str] = {}
    for m in wave:
        if m.key not in evicted:
            continue
        hit = next((k for k, p in free.items() if _controller(p) == owner_of[m.key]
                    and p["spec"].get("nodeName") == m.predicted), None)
        if hit is not None:
            out[m.key] = hit
            del free[hit]
    return out


def core_api(kubeconfig: str | None, context: str | None) -> Any:
    """A ``CoreV1Api`` on the cluster of ``context`` in ``kubeconfig`` (defaults as kubectl's)."""
    try:
        from kubernetes import client, config  # type: ignore[import-not-found]
    except ImportError:
        raise InputError("changing a live cluster needs the kubernetes client: pip install 'optisched[kube]'") from None
    try:
        return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig, context=context))
    except Exception as e:  # noqa: BLE001 - ConfigException, FileNotFoundError, ... all mean the same to a user
        source = f"kubeconfig {kubeconfig or '~/.kube/config'}" + (f" context {context}" if context else "")
        raise InputError(f"cannot load the kubeconfig: {' '.join(str(e).split())}", source=source) from None


def apply_live(plan: ReschedulePlan, kubeconfig: str | None, context: str | None,
               expected: Reference | None = None) -> ApplyReport:
    """:func:`apply_plan` on the cluster of ``context`` in ``kubeconfig``."""
    return apply_plan(plan, core_api(kubeconfig, context), expected=expected)
