"""Builders for descheduler tests: the upstream test fixtures (``test.BuildTestPod`` and friends) in
optisched's builders, and a one-strategy policy."""
from __future__ import annotations

from builders import node, pod, state_of

from optisched.descheduler import evictions_of, parse_policy
from optisched.profile import default_config

CFG = default_config()


def owned(p, kind: str = "ReplicaSet", name: str = "rs"):  # type: ignore[no-untyped-def]
    """``test.SetRSOwnerRef`` / ``SetNormalOwnerRef`` / ``SetDSOwnerRef``."""
    return p.set("metadata.ownerReferences", [{"apiVersion": "apps/v1", "kind": kind, "name": name,
                                               "uid": f"uid-{name}", "controller": True}])


def tpod(name: str, cpu_m: int, on: str | None, owner: str | None = "ReplicaSet", **kw):  # type: ignore[no-untyped-def]
    """``test.BuildTestPod(name, cpu, 0, node)``: cpu and a zero memory request (Burstable)."""
    p = pod(name, kw.pop("ns", "default")).req(cpu=f"{cpu_m}m", memory="0")
    if on:
        p = p.on(on)
    if owner:
        p = owned(p, owner, kw.pop("owner_name", "rs"))
    return p


def tnode(name: str, cpu_m: int, mem: int, pods: int):  # type: ignore[no-untyped-def]
    """``test.BuildTestNode``: allocatable cpu (millicores), memory (bytes) and pods."""
    return node(name, cpu=f"{cpu_m}m", memory=str(mem), pods=str(pods))


def mirror(p):  # type: ignore[no-untyped-def]
    """A mirror pod with local storage (the upstream fixture's p7)."""
    p["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "mirror"}
    p["spec"]["volumes"] = [{"name": "sample", "hostPath": {"path": "somePath"}}]
    return p


def critical(p):  # type: ignore[no-untyped-def]
    """A system-critical pod in kube-system (the upstream fixture's p8)."""
    p["metadata"]["namespace"] = "kube-system"
    return p.priority(2_000_000_000)


def policy(strategy: str, args: dict | None = None, point: str = "balance", evictor: dict | None = None,
           **top: int):  # type: ignore[no-untyped-def]
    doc = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", **top,
           "profiles": [{"name": "p", "pluginConfig": [{"name": strategy, "args": args or {}},
                                                         {"name": "DefaultEvictor", "args": evictor or {}}],
                         "plugins": {point: {"enabled": [strategy]}}}]}
    return parse_policy(doc, "policy.yaml")


def evicted(objs: list, pol) -> list[str]:  # type: ignore[no-untyped-def]
    """Names of the pods one cycle evicts, in order."""
    return [e.pod.split("/")[1] for e in evictions_of(state_of(*objs), CFG, pol)]
