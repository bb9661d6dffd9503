"""CEL device selectors of DRA, compiled once and evaluated against one device at a time.

Follows ``k8s.io/dynamic-resource-allocation/cel/compile.go`` and ``cache.go`` of v1.35.4: the ``device``
variable has ``driver``, ``allowMultipleAllocations`` (false when unset), ``attributes`` and ``capacity``, the
last two maps of domain to id to value, where an attribute's unqualified name belongs to the driver's domain
and looking up a domain the device lacks gives an empty map. An expression must evaluate to ``bool`` (or to
a value of unknown type, then checked when evaluated). The environment is Kubernetes' base environment as
DRA sees it (``apiserver/pkg/cel/environment/base.go``): the standard library with ``has()``, the list
macros and ``matches``, ``cel.bind``, the string extensions (version 2), ``quantity`` and ``semver``
(:mod:`.cel_library`). Evaluation uses cel-expr-python, the bindings of CEL's reference implementation.
Whatever of upstream's environment is not implemented raises :class:`NotHandled` with the reason.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from optisched.model.dra import Device
from optisched.model.quantity import QuantityError

from .cel_library import FUNCTIONS, POOL, Quantity, Version, parse_semver, quantity_message, semver_message

__all__ = ["CACHE_SIZE", "CELError", "DeviceView", "NotHandled", "Program", "Quantity", "Version",
           "compile_selector", "device_view"]

CACHE_SIZE = 10 * 1024  # compiled expressions kept, oldest dropped first (cache.go's LRU)
_FIELDS = frozenset({"driver", "allowMultipleAllocations", "attributes", "capacity"})
_MAPS = ("attributes", "capacity")


class CELError(Exception):
    """A selector that does not compile, or whose evaluation fails, in upstream's words."""


class NotHandled(CELError):
    """A selector using a part of upstream's CEL environment that is not implemented here."""


@dataclass(frozen=True)
class DeviceView:
    """What the CEL ``device`` variable exposes: ``attributes`` and ``capacity`` map domain -> id -> value."""

    driver: str
    attributes: Mapping[str, Mapping[str, int | bool | str | Version]]
    capacity: Mapping[str, Mapping[str, Quantity]]
    allow_multiple_allocations: bool | None = None
    _cel: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _activations: dict[tuple[tuple[str, str], ...], Any] = field(default_factory=dict, init=False, repr=False,
                                                                  compare=False)

    def cel_value(self) -> dict[str, Any]:
        """The ``device`` value handed to CEL, built once per view."""
        if not self._cel:
            if _has_nul(self):
                raise NotHandled(f"device of {self.driver!r}: a string holding a NUL character, which "
                                 "cel-expr-python cuts short")
            self._cel.update(
                driver=self.driver,
                allowMultipleAllocations=bool(self.allow_multiple_allocations),
                attributes={d: {k: semver_message(v) if isinstance(v, Version) else v for k, v in ids.items()}
                            for d, ids in self.attributes.items()},
                capacity={d: {k: quantity_message(q) for k, q in ids.items()}
                          for d, ids in self.capacity.items()})
        return self._cel


def _has_nul(device: DeviceView) -> bool:
    strings = [device.driver, *device.attributes, *device.capacity]
    for ids in (*device.attributes.values(), *device.capacity.values()):
        strings += [*ids, *(v for v in ids.values() if isinstance(v, str))]
    return any("\x00" in s for s in strings)


def _split(name: str, driver: str) -> tuple[str, str]:
    """compile.go's ``parseQualifiedName``: ``domain/id``, or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def device_view(driver: str, device: Device) -> DeviceView:
    """The view of a ResourceSlice's device. A version attribute that is not semver is a :class:`CELError`
    naming it, as ``DeviceMatches`` fails on it; so is a capacity that is not a quantity (which the API
    server never stores)."""
    attributes: dict[str, dict[str, int | bool | str | Version]] = {}
    for name, attr in device.attributes.items():
        value: int | bool | str | Version = attr.value
        if attr.type == "version":
            try:
                value = parse_semver(str(attr.value))
            except ValueError as e:
                raise CELError(f"attribute {name}: parse semantic version: {e}") from None
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Quantity]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, driver)
        try:
            capacity.setdefault(domain, {})[ident] = Quantity.parse(cap.value)
        except QuantityError as e:
            raise CELError(f"capacity {name}: {e}") from None
    return DeviceView(driver, attributes, capacity, device.allow_multiple_allocations)


# ---------------------------------------------------------------- what upstream has and this module lacks
_UPSTREAM_ONLY = {
    **dict.fromkeys(("url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath",
                     "getQuery"), "the Kubernetes URL library"),
    **dict.fromkeys(("find", "findAll"), "the Kubernetes regex library's find and findAll"),
    **dict.fromkeys(("isSorted", "sum", "min", "max"), "the Kubernetes list library"),
    **dict.fromkeys(("ip", "isIP", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                     "isLinkLocalUnicast", "isGlobalUnicast", "isCanonical"), "the Kubernetes IP library"),
    **dict.fromkeys(("cidr", "isCIDR", "containsIP", "containsCIDR", "masked", "prefixLength"),
                    "the Kubernetes CIDR library"),
    "format": "the Kubernetes format library",
    "sets": "the CEL sets extension",
    **dict.fromkeys(("lists", "slice", "flatten", "reverse", "sort", "sortBy", "distinct", "first", "last"),
                    "the CEL lists extension"),
    **dict.fromkeys(("transformList", "transformMap", "transformMapEntry"),
                    "two-variable comprehensions"),
    **dict.fromkeys(("optional", "orValue", "hasValue", "value", "or", "optMap", "optFlatMap"),
                    "optional types"),
}
_UNDECLARED = re.compile(r"undeclared reference to '([^']+)'")
_NUMERIC = r"(?:int|uint|double)"
_CROSS_NUMERIC = re.compile(rf"no matching overload for '_(?:[<>]=?|==|!=|in)_' applied to "
                            rf"'\({_NUMERIC}, (?:list\()?{_NUMERIC}\)?\)'")
_LIST_INDEX_OF = re.compile(r"no matching overload for '(?:indexOf|lastIndexOf)' applied to '\(list")
_TWO_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|existsOne)\s*\(\s*\w+\s*,\s*\w+\s*,")
_DEVICE_FIELD = re.compile(r"\bdevice\s*\.\s*([A-Za-z_]\w*)")
_LITERAL_KEY = re.compile(r"""\s*(?:\[\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*\]"""  # ["d"] or ['d']
                          r"""|\.\s*([A-Za-z_]\w*)\b(?!\s*\())""")  # .d, not a method call .m(


_STRING = re.compile(r"""[rRbB]{0,2}(?:'{3}[\s\S]*?'{3}|"{3}[\s\S]*?"{3}"""
                     r"""|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')""")


def _code(expression: str) -> str:
    """The expression with the insides of its string literals blanked, same length: scans of the code
    then never look into a string."""
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], expression)


def _not_handled(expression: str, message: str) -> str | None:
    if _TWO_VAR.search(_code(expression)):
        return "two-variable comprehensions"
    if "unsupported syntax '.?'" in message or "unsupported syntax '[?'" in message:
        return "optional types"
    if "Expression recursion limit exceeded" in message:
        return "nesting deeper than 32 levels (cel-expr-python's parser limit, cel-go's is 250)"
    if _CROSS_NUMERIC.search(message):
        return "comparisons across int, uint and double (cel.CrossTypeNumericComparisons)"
    if _LIST_INDEX_OF.search(message):
        return "the Kubernetes list library"
    for name in _UNDECLARED.findall(message):
        if (reason := _UPSTREAM_ONLY.get(name.split(".")[0])) is not None:
            return reason
    return None


def _issues(message: str) -> str:
    """cel-expr's status text as cel-go words it: without the status code and its bracketed repeat."""
    message = re.sub(r"^[A-Z_]+: ", "", message.strip())
    return re.sub(r" \[[A-Z_]+\]$", "", message)


_SCALARS = {"NULL": "null_type", "DURATION": "google.protobuf.Duration",
            "TIMESTAMP": "google.protobuf.Timestamp"}


def _type_name(name: str) -> str:
    """A cel-expr type name in cel-go's spelling: ``LIST<INT>`` -> ``list(int)``."""
    out = re.sub(r"(?<![\w.])[A-Z][A-Z_]*(?![\w.])",
                 lambda m: _SCALARS.get(m.group(0), m.group(0).lower()), name)
    return out.replace("<", "(").replace(">", ")")


def _literal_domains(expression: str) -> dict[str, frozenset[str] | None]:
    """Per map, the domains the expression names literally (``attributes["d"]``, ``attributes.d``), or None
    when it also uses the map otherwise (``in``, a macro, a binding): then no domain may be added to it."""
    found: dict[str, frozenset[str] | None] = {}
    for name in _MAPS:
        keys = [_LITERAL_KEY.match(expression, m.end())
                for m in re.finditer(rf"\bdevice\s*\.\s*{name}\b", _code(expression))]
        found[name] = None if None in keys else frozenset(
            next(g for g in k.groups() if g is not None) for k in keys if k is not None)
    return found


# ---------------------------------------------------------------- compile and evaluate
@lru_cache(maxsize=1)
def _env() -> Any:
    return cel.NewEnv(POOL, variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
                      extensions=[ext_strings.ExtStrings(2), ext_bindings.ExtBindings()], functions=FUNCTIONS)


class Program:
    """A compiled selector."""

    def __init__(self, expression: str, compiled: Any, domains: dict[str, frozenset[str] | None]) -> None:
        self.expression = expression
        self._compiled = compiled
        self._domains = domains

    def _activation(self, device: DeviceView) -> Any:
        """The device handed to CEL, converted once per view and set of domains added (empty maps for the
        domains this expression names literally and the device lacks)."""
        value = device.cel_value()
        missing = tuple((name, d) for name in _MAPS for d in sorted(self._domains[name] or ())
                        if d not in value[name])
        activation = device._activations.get(missing)
        if activation is None:
            for name, d in missing:
                value = {**value, name: {**value[name], d: {}}}
            activation = device._activations[missing] = _env().Activation({"device": value})
        return activation

    def matches(self, device: DeviceView) -> bool:
        """Whether the device is selected; a failing evaluation raises :class:`CELError`."""
        try:
            result = self._compiled.eval(self._activation(device))
        except RuntimeError as e:  # a value the runtime refuses to take in
            raise CELError(_issues(str(e))) from None
        kind = result.type()
        if kind == cel.Type.BOOL:
            return bool(result.value())
        if kind == cel.Type.ERROR:
            raise self._runtime_error(device, str(result.value()))
        name = _type_name(kind.name())
        raise CELError(f"CEL result of type {name} could not be converted to bool: "
                       f"type conversion error from '{name}' to 'bool'")

    def _runtime_error(self, device: DeviceView, message: str) -> CELError:
        m = re.fullmatch(r'NOT_FOUND: Key not found in map : "(.*)"', message, re.DOTALL)
        if m is None:
            return CELError(_issues(message))
        key = m.group(1)
        for name in _MAPS:
            if self._domains[name] is None and key not in getattr(device, name):
                return NotHandled(f"device.{name} is used other than with a literal domain, and a lookup "
                                  f"found no {key!r}: upstream gives an empty map for a missing domain")
        return CELError(f"no such key: {key}")


_DYN_RANGE = "cannot be the range of a comprehension (must be list, map, or dynamic)"


def _compile(expression: str) -> Any:
    """Type-checked compilation. cel-expr-python 0.1.3's checker refuses a macro over an indexed ``dyn``
    (``device.attributes["d"].exists(...)``), which cel-go accepts: such an expression is compiled
    unchecked, its result then checked when evaluated."""
    try:
        return _env().compile(expression)
    except RuntimeError as e:
        if _DYN_RANGE not in str(e):
            raise
        return _env().compile(expression, disable_check=True)


@lru_cache(maxsize=CACHE_SIZE)
def compile_selector(expression: str) -> Program:
    """Compile a selector once per process (failures are not kept, as ``Cache.GetOrCompile``)."""
    try:
        compiled = _compile(expression)
    except RuntimeError as e:
        message = _issues(str(e))
        if (reason := _not_handled(expression, message)) is not None:
            raise NotHandled(f"{expression!r} uses {reason}, which is not implemented") from None
        raise CELError(f"compilation failed: {message}") from None
    if (reason := _not_handled(expression, "")) is not None:
        raise NotHandled(f"{expression!r} uses {reason}, which is not implemented")
    for m in _DEVICE_FIELD.finditer(_code(expression)):
        if m.group(1) not in _FIELDS:
            raise CELError(f"compilation failed: ERROR: <input>: undefined field '{m.group(1)}'")
    kind = compiled.return_type()
    if kind not in (cel.Type.BOOL, cel.Type.DYN):
        raise CELError(f"must evaluate to bool or the unknown type, not {_type_name(kind.name())}")
    return Program(expression, compiled, _literal_domains(expression))
