"""Label key and value syntax, and the errors ``labels.NewRequirement`` reports, in apimachinery's words.

Upstream (k8s.io/apimachinery v0.35, kubernetes v1.35): ``pkg/labels/selector.go`` ``NewRequirement``
and ``pkg/util/validation/validation.go`` ``IsQualifiedName``, ``IsValidLabelValue``,
``IsDNS1123Subdomain``; ``component-helpers/scheduling/corev1/nodeaffinity`` ``newNodeSelectorTerm``. The messages are apimachinery's field errors (``values[0][key]: Invalid
value: "x": ...``) because kube-scheduler shows them to users, e.g. in ``parsing pod: ...``.
:mod:`.selectors` decides what a requirement that fails means.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence

from .objects import NodeSelectorTerm

__all__ = ["aggregate", "go_strings", "requirement_error", "requirement_errors", "term_error", "term_errors"]

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_FMT = _DNS_LABEL + "(\\." + _DNS_LABEL + ")*"
_NAME, _VALUE, _DNS = re.compile(_NAME_FMT), re.compile(_VALUE_FMT), re.compile(_DNS_FMT)
_INT64 = re.compile(r"[+-]?[0-9]+")
_ALNUM = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
          "character")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _qualified_name_errors(key: str) -> list[str]:
    """``IsQualifiedName``: ``[prefix/]name``, prefix a DNS-1123 subdomain, name <= 63 characters."""
    parts = key.split("/")
    name_error = _regex_error(_ALNUM, _NAME_FMT, "MyName", "my.name", "123-abc")
    if len(parts) > 2:
        prefixed = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"a qualified name {name_error} {prefixed}"]
    errs = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part " + _max_len(253))
            if not _DNS.fullmatch(prefix):
                errs.append("prefix part " + _regex_error(
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                    "and must start and end with an alphanumeric character", _DNS_FMT, "example.com"))
    name = parts[-1]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _NAME.fullmatch(name):
        errs.append("name part " + name_error)
    return errs


def _label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``: empty, or <= 63 alphanumerics with ``-_.`` inside."""
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _VALUE.fullmatch(value):
        errs.append(_regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                                 "'_' or '.', and must start and end with an alphanumeric character",
                                 _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _int64(value: str) -> bool:
    """``strconv.ParseInt(value, 10, 64)`` succeeds."""
    return _INT64.fullmatch(value) is not None and -(2 ** 63) <= int(value) < 2 ** 63


def _invalid(path: str, value: str, errs: list[str]) -> str:
    return f"{path}: Invalid value: {json.dumps(value)}: {'; '.join(errs)}"


def _at(path: str, child: str) -> str:
    """``field.Path.Child``: ``path.child``, or ``child`` at the root."""
    return f"{path}.{child}" if path else child


def requirement_errors(key: str, op: str, values: Sequence[str], path: str = "") -> list[str]:
    """The field errors ``labels.NewRequirement(key, op, values)`` reports at ``path`` (none: it
    succeeds). ``op`` is the API operator (In, NotIn, Exists, DoesNotExist, Gt, Lt; a ``matchLabels``
    pair is In)."""
    errs = []
    if key_errs := _qualified_name_errors(key):
        errs.append(_invalid(_at(path, "key"), key, key_errs))
    where = _at(path, "values")
    if op in ("In", "NotIn") and not values:
        errs.append(f"{where}: Invalid value: []string{{}}: for 'in', 'notin' operators, values set can't be empty")
    if op in ("Exists", "DoesNotExist") and values:
        errs.append(f"{where}: Invalid value: {go_strings(values)}: "
                    "values set must be empty for exists and does not exist")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(f"{where}: Invalid value: {go_strings(values)}: for 'Gt', 'Lt' operators, exactly one value is "
                        "required")
        errs += [_invalid(f"{where}[{i}]", v, ["for 'Gt', 'Lt' operators, the value must be an integer"])
                 for i, v in enumerate(values) if not _int64(v)]
    errs += [_invalid(f"{where}[{i}][{key}]", v, v_errs)
             for i, v in enumerate(values) if (v_errs := _label_value_errors(v))]
    return errs


def go_strings(values: Sequence[str]) -> str:
    """A ``[]string`` as Go's ``%#v`` prints it."""
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


def aggregate(errs: list[str]) -> str | None:
    """``utilerrors.NewAggregate(errs).Error()`` (flattened): one error alone, several in brackets."""
    if not errs:
        return None
    return errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]"


def requirement_error(key: str, op: str, values: Sequence[str]) -> str | None:
    """The error ``labels.NewRequirement(key, op, values)`` returns, or None when it succeeds."""
    return aggregate(requirement_errors(key, op, values))


def term_errors(term: NodeSelectorTerm, path: str = "") -> list[str]:
    """The field errors kube-scheduler meets building ``term`` at ``path`` (``newNodeSelectorTerm``):
    every failing ``matchExpressions`` requirement, every ``matchFields`` one without exactly one value."""
    errs = [e for i, r in enumerate(term.match_expressions)
            for e in requirement_errors(r.key, r.operator.value, r.values, f"{path}.matchExpressions[{i}]".lstrip("."))]
    errs += [f"{path}.matchFields[{i}].values: Invalid value: {go_strings(r.values)}: must have one element".lstrip(".")
             for i, r in enumerate(term.match_fields) if len(r.values) != 1]
    return errs


def term_error(term: NodeSelectorTerm) -> str | None:
    """Why kube-scheduler cannot build ``term``, or None."""
    return aggregate(term_errors(term))
