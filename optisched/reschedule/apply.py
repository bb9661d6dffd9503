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

Before the first eviction the plan's ``cordoned`` and ``held`` nodes are cordoned (:mod:`.cordons`), as
every replay that predicted the landings assumed; a node that cannot be cordoned stops the run before
any eviction, with the nodes already cordoned uncordoned again. After the last wave, or a stop, the
``held`` nodes this run cordoned are uncordoned; the ``cordoned`` ones stay cordoned (``kubectl drain``
leaves a drained node cordoned, and cluster-autoscaler's scale-down removes it) and are reported.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .cordons import api_error, set_unschedulable, uncordon_all
from .plan import ReschedulePlan
from .waves import Move, Staging

__all__ = ["ApplyReport", "apply_live", "apply_plan"]


@dataclass
class ApplyReport:
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
        """The run stopped early or left a node cordoned that it meant to uncordon."""
        return bool(self.stopped or self.uncordon_failed)

    def lines(self) -> list[str]:
        out = [f"cordoned {', '.join(self.cordoned)}"] if self.cordoned else []
        if self.found_cordoned:
            out.append(f"unschedulable already, left as found: {', '.join(self.found_cordoned)}")
        out.append(f"applied {self.waves_done} wave(s), {len(self.evicted)} eviction(s)")
        out += [f"skipped {pod}: {why}" for pod, why in self.skipped]
        if self.stopped:
            out.append(f"stopped: {self.stopped}")
        if self.uncordoned:
            out.append(f"uncordoned {', '.join(self.uncordoned)}")
        out += [f"{why}: left cordoned (kubectl uncordon {node})" for node, why in self.uncordon_failed]
        if self.left_cordoned:
            out.append(f"left cordoned: {', '.join(self.left_cordoned)}" + (
                " (kubectl uncordon to undo)" if self.stopped else " (emptied, for an autoscaler to remove)"))
        return out


def _pods(api: Any) -> dict[str, dict]:
    data = json.loads(api.list_pod_for_all_namespaces(_preload_content=False).data)
    return {f"{p['metadata'].get('namespace', 'default')}/{p['metadata']['name']}": p for p in data.get("items") or []}


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
                delay = min(delay * 2, 10.0)
                continue
            if e.status == 429:
                return f"stop: {key}: a PodDisruptionBudget still allows no disruption (429) at the deadline"
            if e.status == 500:
                return f"skip: several PodDisruptionBudgets select it (500): {e.reason}"
            return f"stop: {key}: eviction answered {e.status} {e.reason}"


def _wait(api: Any, before: dict[str, dict], owners: Counter, timeout: float, poll: float,
          sleep: Callable[[float], None]) -> tuple[dict[str, dict] | None, str | None]:
    """The new bound pods once every evicted controller has its replacements; (None, why) otherwise."""
    end = time.monotonic() + timeout
    while True:
        now = _pods(api)
        new = {k: p for k, p in now.items() if k not in before}
        strangers = [k for k, p in new.items() if _controller(p) not in owners]
        if strangers:
            return None, f"a pod the plan does not expect appeared: {strangers[0]}"
        bound = Counter(_controller(p) for p in new.values() if p.get("spec", {}).get("nodeName"))
        if all(bound[o] >= n for o, n in owners.items()):
            return new, None
        if time.monotonic() >= end:
            return None, "replacements not scheduled before the timeout"
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


def apply_plan(plan: ReschedulePlan, api: Any, *, retry_for: float = 60.0, wait_for: float = 300.0,
               poll: float = 1.0, sleep: Callable[[float], None] = time.sleep) -> ApplyReport:
    """Cordon, evict ``plan``'s waves through ``api`` (a kubernetes ``CoreV1Api``), uncordon; see the
    module docstring. Nothing is touched when the plan has no wave."""
    from kubernetes.client.rest import ApiException  # type: ignore[import-not-found]
    from urllib3.exceptions import HTTPError

    report = ApplyReport()
    staging = plan.staging
    if not staging.waves:
        return report
    report.stopped = _cordon(api, staging, report)
    if report.stopped:  # nothing evicted: every node as it was found
        _uncordon(api, report.cordoned, report)
        return report
    try:
        _run_waves(plan, api, report, retry_for, wait_for, poll, sleep)
    except (ApiException, HTTPError) as e:
        report.stopped = f"wave {report.waves_done + 1}: the API server answered {api_error(e)}"
    finally:
        _uncordon(api, [n for n in report.cordoned if n in staging.held], report)
        report.left_cordoned = [n for n in report.cordoned if n not in staging.held]
    return report


def _cordon(api: Any, staging: Staging, report: ApplyReport) -> str | None:
    """Cordon every node the plan's replays held unschedulable; why it failed, if it did."""
    for name in dict.fromkeys(staging.cordoned + staging.held):
        changed, why = set_unschedulable(api, name, True)
        if why:
            return why
        (report.cordoned if changed else report.found_cordoned).append(name)
    return None


def _uncordon(api: Any, names: list[str], report: ApplyReport) -> None:
    done, failed = uncordon_all(api, names)
    report.uncordoned += done
    report.uncordon_failed += failed


def _run_waves(plan: ReschedulePlan, api: Any, report: ApplyReport, retry_for: float, wait_for: float,
               poll: float, sleep: Callable[[float], None]) -> None:
    """Evict wave by wave into ``report``; ``report.stopped`` says why it stopped early."""
    from kubernetes import client  # type: ignore[import-not-found]

    def body_of(name: str, ns: str) -> Any:
        return client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=ns))

    live: dict[str, str] = {}  # a pod the plan moves again (a detour's second leg) -> its replacement's name
    for wave in plan.staging.waves:
        before = _pods(api)
        owner_of = {m.key: _controller(before[k]) if (k := live.get(m.key, m.key)) in before else None
                    for m in wave.moves}
        evicted: list[str] = []
        for m in wave.moves:
            why = _evict(api, body_of, live.get(m.key, m.key), time.monotonic() + retry_for, sleep)
            if why is None:
                evicted.append(m.key)
            elif why.startswith("skip: "):
                report.skipped.append((m.key, why[6:]))
            else:
                report.evicted += evicted
                report.stopped = why[6:]
                return
        report.evicted += evicted
        owners = Counter(owner_of[k] for k in evicted if owner_of[k] is not None)
        new, why = _wait(api, before, owners, wait_for, poll, sleep)
        why = why or _compare(wave.moves, evicted, owner_of, new or {})
        if why:
            report.stopped = f"wave {report.waves_done + 1}: {why}"
            return
        live.update(_replacements(wave.moves, evicted, owner_of, new or {}))
        report.waves_done += 1


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


def apply_live(plan: ReschedulePlan, kubeconfig: str | None, context: str | None) -> ApplyReport:
    """:func:`apply_plan` on the cluster of ``context`` in ``kubeconfig``."""
    from kubernetes import client, config  # type: ignore[import-not-found]

    api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    return apply_plan(plan, client.CoreV1Api(api_client))
