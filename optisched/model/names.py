"""Object names and namespaces, validated as the API server validates them (Kubernetes v1.35).

A name the API server would refuse cannot come from a real cluster, and some break optisched's own keys
(a pod named ``a/b`` in namespace ``x`` and a pod ``b`` in namespace ``x/a`` would share ``x/a/b``).

Rules (``k8s.io/apimachinery/pkg/util/validation/validation.go``, the ``Validate*Name`` functions of
``pkg/apis/core/validation``, ``pkg/apis/apps/validation``, ``pkg/apis/policy/validation`` and
``pkg/apis/scheduling/validation``):

- DNS-1123 subdomain (``IsDNS1123Subdomain``, at most 253 characters): Pod, Node, PriorityClass,
  PodDisruptionBudget, ReplicaSet, ReplicationController;
- DNS-1123 label (``IsDNS1123Label``, at most 63): Namespace, StatefulSet, and every object's
  ``metadata.namespace``;
- DNS-1035 label (``IsDNS1035Label``, a label starting with a letter): Service.
"""
from __future__ import annotations

import re

from ..errors import InputError

__all__ = ["check_object_name"]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

_RULES: dict[str, tuple[re.Pattern[str], int, str]] = {
    "subdomain": (_DNS1123_SUBDOMAIN, 253, ("a lowercase RFC 1123 subdomain (a-z, 0-9, '-' and '.', "
                                           "starting and ending with a letter or digit)")),
    "label": (_DNS1123_LABEL, 63, ("a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a "
                                  "letter or digit)")),
    "dns1035": (_DNS1035_LABEL, 63, ("a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter "
                                    "and ending with a letter or digit)")),
}
_NAME_RULE = {"Namespace": "label", "StatefulSet": "label", "Service": "dns1035"}


def _problem(value: str, rule: str) -> str | None:
    pattern, limit, what = _RULES[rule]
    if len(value) > limit:
        return f"must be no more than {limit} characters"
    if pattern.fullmatch(value) is None:
        return f"{value!r} is not {what}"
    return None


def check_object_name(kind: str, name: str, namespace: str | None, *, source: str, ref: str) -> None:
    """Refuse a ``metadata.name`` or ``metadata.namespace`` the API server would refuse for ``kind``."""
    problem = _problem(name, _NAME_RULE.get(kind, "subdomain"))
    if problem:
        raise InputError(problem, source=source, obj=ref, path=".metadata.name")
    if namespace is not None:
        problem = _problem(namespace, "label")
        if problem:
            raise InputError(problem, source=source, obj=ref, path=".metadata.namespace")
