"""The Kubernetes CEL types and functions DRA selectors use: ``quantity`` and ``semver``.

Upstream (v1.35.4): ``k8s.io/apiserver/pkg/cel/library/quantity.go`` and ``semverlib.go`` (semver library
version 1, as ``environment/base.go`` enables it since 1.33), ``k8s.io/apiserver/pkg/cel/quantity.go`` and
``semver.go`` (equality), ``github.com/blang/semver/v4`` (parsing and ordering). The values are held exactly:
a quantity as integer nano units (:mod:`optisched.model.quantity`), a version as its numbers and pre-release.
Inside CEL they travel as two small protobuf messages named as upstream's types, ``kubernetes.Quantity`` and
``kubernetes.Semver``, whose fields are canonical so that CEL's ``==`` agrees with upstream's ``Equal``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from optisched.model.quantity import NANO, QuantityError, parse_quantity

__all__ = ["FUNCTIONS", "POOL", "Quantity", "Version", "parse_semver", "quantity_message", "semver_message"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1
# resource.ErrFormatWrong, the words ParseQuantity fails with
QUANTITY_FORMAT_ERROR = ("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A ``resource.Quantity``, exactly, in nano units."""

    nanos: int

    @classmethod
    def parse(cls, text: str) -> Quantity:
        return cls(parse_quantity(text))


@dataclass(frozen=True, slots=True, order=False)
class Version:
    """A ``semver.Version`` (build metadata dropped: no function reads it and ``Equal`` ignores it)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        """``semver.Version.Compare``: -1, 0 or 1."""
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre):
            if (c := _compare_pre(x, y)) != 0:
                return c
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def _compare_pre(x: str, y: str) -> int:
    xn, yn = x.isdigit(), y.isdigit()
    if xn != yn:
        return -1 if xn else 1
    a: int | str = int(x) if xn else x
    b: int | str = int(y) if yn else y
    return (a > b) - (a < b)  # type: ignore[operator]


def _number(part: str, what: str) -> int:
    if not part or not set(part) <= _NUMBERS:
        raise ValueError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    if int(part) > UINT64_MAX:
        raise ValueError(f'strconv.ParseUint: parsing "{part}": value out of range')
    return int(part)


def parse_semver(text: str, normalize: bool = False) -> Version:
    """``semver.Parse``, or upstream's ``normalizeAndParse`` (``semver(s, true)``): a ``v`` prefix, missing
    minor and patch numbers and leading zeroes are accepted. Raises ``ValueError`` with blang's words."""
    if normalize:
        text = _normalize(text)
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major"), _number(parts[1], "minor")
    rest, _, build = parts[2].partition("+")
    patch_text, dash, pre_text = rest.partition("-")
    patch = _number(patch_text, "patch")
    pre = tuple(pre_text.split(".")) if dash else ()
    for p in pre:
        if not p:
            raise ValueError("Prerelease is empty")
        if set(p) <= _NUMBERS:
            if len(p) > 1 and p[0] == "0":
                raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {p!r}")
        elif not set(p) <= _ALPHANUM:
            raise ValueError(f"Invalid character(s) found in prerelease {p!r}")
    if "+" in parts[2]:
        for b in build.split("."):
            if not b:
                raise ValueError("Build meta data is empty")
            if not set(b) <= _ALPHANUM:
                raise ValueError(f"Invalid character(s) found in build meta data {b!r}")
    return Version(major, minor, patch, pre)


def _normalize(text: str) -> str:
    parts = text.removeprefix("v").split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or not p[0].isdigit():
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


# ---------------------------------------------------------------- the messages CEL carries
def _messages() -> tuple[Any, Any, Any]:
    fdp = descriptor_pb2.FileDescriptorProto(name="optisched/kubernetes_cel.proto", package="kubernetes",
                                             syntax="proto3")
    fd = descriptor_pb2.FieldDescriptorProto
    string, uint64 = fd.TYPE_STRING, fd.TYPE_UINT64
    q = fdp.message_type.add(name="Quantity")
    q.field.add(name="nano_units", number=1, type=string, label=1)
    s = fdp.message_type.add(name="Semver")
    for i, name in enumerate(("major", "minor", "patch"), start=1):
        s.field.add(name=name, number=i, type=uint64, label=1)
    s.field.add(name="pre_release", number=4, type=string, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return pool, get(pool.FindMessageTypeByName("kubernetes.Quantity")), \
        get(pool.FindMessageTypeByName("kubernetes.Semver"))


POOL, _QuantityMessage, _SemverMessage = _messages()
QUANTITY, SEMVER = cel.Type("kubernetes.Quantity"), cel.Type("kubernetes.Semver")


def quantity_message(q: Quantity) -> Any:
    return _QuantityMessage(nano_units=str(q.nanos))


def semver_message(v: Version) -> Any:
    return _SemverMessage(major=v.major, minor=v.minor, patch=v.patch, pre_release=".".join(v.pre))


def _q(m: Any) -> int:
    return int(m.nano_units)


def _v(m: Any) -> Version:
    return Version(m.major, m.minor, m.patch, tuple(m.pre_release.split(".")) if m.pre_release else ())


def _nanos(n: int) -> Any:
    return _QuantityMessage(nano_units=str(n))


@lru_cache(maxsize=4096)
def _to_quantity(text: str) -> Any:
    try:
        return _nanos(parse_quantity(text))
    except QuantityError:
        raise ValueError(QUANTITY_FORMAT_ERROR) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _as_integer(m: Any) -> int:
    n = _q(m)
    if n % NANO or not INT64_MIN <= n // NANO <= INT64_MAX:
        raise ValueError("cannot convert value to integer")
    return n // NANO


def _is_integer(m: Any) -> bool:
    n = _q(m)
    return n % NANO == 0 and INT64_MIN <= n // NANO <= INT64_MAX


@lru_cache(maxsize=4096)
def _to_semver(text: str, normalize: bool = False) -> Any:
    return semver_message(parse_semver(text, normalize))


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _compare(a: Any, b: Any) -> int:
    """``compareTo`` of two quantities or two versions (the type checker admits no other pair)."""
    if isinstance(a, _QuantityMessage):
        return _cmp(_q(a), _q(b))
    x, y = (a.major, a.minor, a.patch), (b.major, b.minor, b.patch)
    if x != y or a.pre_release == b.pre_release:
        return (x > y) - (x < y)
    return _v(a).compare(_v(b))


def _greater(a: Any, b: Any) -> bool:
    return _compare(a, b) == 1


def _less(a: Any, b: Any) -> bool:
    return _compare(a, b) == -1


def _typed(impl: Callable[..., Any], params: list[Any]) -> Callable[..., Any]:
    """``impl`` refusing a message of the other type: the runtime dispatches a ``dyn`` receiver on the
    message kind alone, so ``capacity.memory.major()`` would otherwise reach the semver function. A
    ``compareTo`` family implementation serves both types and wants two of one kind."""
    wanted = [_QuantityMessage if p == QUANTITY else _SemverMessage if p == SEMVER else None for p in params]
    shared = impl in (_compare, _greater, _less)

    def run(*args: Any) -> Any:
        for arg, cls in zip(args, wanted):
            if cls is not None and not (type(arg) is type(args[0]) if shared else isinstance(arg, cls)):
                raise ValueError("no such overload")
        return impl(*args)
    return run


def _overload(oid: str, ret: Any, params: list[Any], impl: Any, member: bool = False) -> Any:
    if impl is None:
        return cel.Overload(oid, ret, params, is_member=member)
    return cel.Overload(oid, ret, params, is_member=member, impl=_typed(impl, params))


_T = cel.Type
_FUNCS: dict[str, list[Any]] = {
    "quantity": [_overload("string_to_quantity", QUANTITY, [_T.STRING], _to_quantity)],
    "isQuantity": [_overload("is_quantity_string", _T.BOOL, [_T.STRING], _is_quantity)],
    "sign": [_overload("quantity_sign", _T.INT, [QUANTITY], lambda a: _cmp(_q(a), 0))],
    # The runtime dispatches on the message kind, not its name: one implementation serves both types.
    "isGreaterThan": [
        _overload("quantity_is_greater_than", _T.BOOL, [QUANTITY, QUANTITY], _greater, True),
        _overload("semver_is_greater_than", _T.BOOL, [SEMVER, SEMVER], None, True)],
    "isLessThan": [
        _overload("quantity_is_less_than", _T.BOOL, [QUANTITY, QUANTITY], _less, True),
        _overload("semver_is_less_than", _T.BOOL, [SEMVER, SEMVER], None, True)],
    "compareTo": [
        _overload("quantity_compare_to", _T.INT, [QUANTITY, QUANTITY], _compare, True),
        _overload("semver_compare_to", _T.INT, [SEMVER, SEMVER], None, True)],
    "asApproximateFloat": [_overload("quantity_get_float", _T.DOUBLE, [QUANTITY], lambda a: _q(a) / NANO,
                                     True)],
    "asInteger": [_overload("quantity_get_int", _T.INT, [QUANTITY], _as_integer, True)],
    "isInteger": [_overload("quantity_is_integer", _T.BOOL, [QUANTITY], _is_integer, True)],
    "add": [
        _overload("quantity_add", QUANTITY, [QUANTITY, QUANTITY], lambda a, b: _nanos(_q(a) + _q(b)), True),
        _overload("quantity_add_int", QUANTITY, [QUANTITY, _T.INT], lambda a, b: _nanos(_q(a) + b * NANO),
                  True)],
    "sub": [
        _overload("quantity_sub", QUANTITY, [QUANTITY, QUANTITY], lambda a, b: _nanos(_q(a) - _q(b)), True),
        _overload("quantity_sub_int", QUANTITY, [QUANTITY, _T.INT], lambda a, b: _nanos(_q(a) - b * NANO),
                  True)],
    "semver": [_overload("string_to_semver", SEMVER, [_T.STRING], _to_semver),
               _overload("string_bool_to_semver", SEMVER, [_T.STRING, _T.BOOL], _to_semver)],
    "isSemver": [_overload("is_semver_string", _T.BOOL, [_T.STRING], _is_semver),
                 _overload("is_semver_string_bool", _T.BOOL, [_T.STRING, _T.BOOL], _is_semver)],
    "major": [_overload("semver_major", _T.INT, [SEMVER], lambda a: a.major, True)],
    "minor": [_overload("semver_minor", _T.INT, [SEMVER], lambda a: a.minor, True)],
    "patch": [_overload("semver_patch", _T.INT, [SEMVER], lambda a: a.patch, True)],
}
FUNCTIONS = [cel.FunctionDecl(name, overloads) for name, overloads in _FUNCS.items()]
