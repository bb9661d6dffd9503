"""Reading a strategy's ``args`` with errors that name the file, the object and the field."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..model.objects import LabelSelector

__all__ = ["Args", "PodScope", "label_selector", "pod_scope"]


@dataclass(frozen=True)
class Args:
    """One plugin's ``args`` mapping, where it sits in the policy file, and the fields it may have."""

    raw: dict[str, Any]
    source: str
    path: str

    def error(self, field: str, message: str) -> InputError:
        return InputError(message, source=self.source, obj="DeschedulerPolicy", path=f"{self.path}.{field}")

    def only(self, *known: str) -> Args:
        """Reject unknown fields, as the descheduler's strict decoding does."""
        for k in self.raw:
            if k not in known and k not in ("apiVersion", "kind"):
                raise self.error(k, f"unknown field; fields: {', '.join(known) or '(none)'}")
        return self

    def get(self, field: str, kind: type, default: Any) -> Any:
        v = self.raw.get(field, default)
        if v is default:
            return v
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
            raise self.error(field, f"{v!r} is not an integer")
        if kind is not int and not isinstance(v, kind):
            raise self.error(field, f"{v!r} is not a {kind.__name__}")
        return v

    def count(self, field: str) -> int | None:
        v = self.get(field, int, None)
        if v is not None and v < 0:
            raise self.error(field, f"{v} is negative")
        return v

    def percentages(self, field: str) -> dict[str, float]:
        """A ``ResourceThresholds`` map: resource name -> percentage in [0, 100]."""
        raw = self.get(field, dict, {})
        for name, v in raw.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 100:
                raise self.error(f"{field}.{name}", f"{v!r} is not a percentage between 0 and 100")
        return {str(k): float(v) for k, v in raw.items()}


def label_selector(args: Args, field: str) -> LabelSelector | None:
    """A ``metav1.LabelSelector`` field, validated (None when absent)."""
    sel = args.get(field, dict, None)
    try:
        return LabelSelector.model_validate(sel) if sel is not None else None
    except ValueError as e:  # pydantic's ValidationError, first line
        raise args.error(field, str(e).splitlines()[0]) from None


@dataclass(frozen=True)
class PodScope:
    """A strategy's ``namespaces`` (include or exclude) and ``labelSelector``, the pod filter its
    ``New`` builds with ``podutil.NewOptions().WithNamespaces(...).WithoutNamespaces(...).WithLabelSelector(...)``
    (kubernetes-sigs/descheduler v0.34.0 ``pkg/descheduler/pod/pods.go``)."""

    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()
    selector: LabelSelector | None = None

    def namespace_ok(self, namespace: str) -> bool:
        return (not self.include or namespace in self.include) and namespace not in self.exclude

    def admits(self, pod: Any) -> bool:
        """The pod is in scope: its namespace is admitted and its labels match the selector (if any)."""
        from ..model.selectors import label_selector_matches

        return self.namespace_ok(pod.metadata.namespace or "default") and \
            (self.selector is None or label_selector_matches(self.selector, pod.metadata.labels))


def pod_scope(args: Args, with_selector: bool = True) -> PodScope:
    """Read ``namespaces`` (and ``labelSelector``); at most one of include/exclude, as upstream's
    ``validation.go`` requires."""
    ns = args.get("namespaces", dict, {}) or {}
    Args(ns, args.source, f"{args.path}.namespaces").only("include", "exclude")
    inc, exc = ns.get("include") or [], ns.get("exclude") or []
    for part, names in (("include", inc), ("exclude", exc)):
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise args.error(f"namespaces.{part}", "expected a list of namespace names")
    if inc and exc:
        raise args.error("namespaces", "only one of include and exclude can be set")
    return PodScope(frozenset(inc), frozenset(exc), label_selector(args, "labelSelector") if with_selector else None)
