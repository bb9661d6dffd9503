"""Test doubles and builders for the structured allocator's tests.

``FakeCEL`` interprets only the selector shapes the tests use (upstream's allocator tests and the DRA
conformance cases): ``device.driver == "d"``, ``device.attributes["domain"].name`` compared with a literal
(or alone, for a bool), ``device.capacity["domain"].name.compareTo(quantity("q")) OP 0``, joined by
``&&``. Anything else is a compile error, as CEL reports an undeclared reference; a missing attribute or
capacity is a runtime error (``no such key``), and ``&&`` absorbs an error when another side is false,
as CEL's commutative logic does.
"""

from __future__ import annotations

import re
from typing import Any

from optisched.model.dra import Device, DeviceClass, ResourceClaim, ResourceSlice, qualify
from optisched.model.objects import Node
from optisched.model.quantity import parse_quantity

_DRIVER = re.compile(r'^device\.driver == "([^"]*)"$')
_ATTR = re.compile(r'^device\.attributes\["([^"]*)"\]\.(\w+)(?: == (.+))?$')
_CAP = re.compile(
    r'^device\.capacity\["([^"]*)"\]\.(\w+)\.compareTo\(quantity\("([^"]*)"\)\) (>=|>|<=|<|==) 0$'
)
_CMP = {
    ">=": lambda c: c >= 0,
    ">": lambda c: c > 0,
    "<=": lambda c: c <= 0,
    "<": lambda c: c < 0,
    "==": lambda c: c == 0,
}


class CELError(Exception):
    def __init__(self, message: str, *, compile_error: bool = False) -> None:
        super().__init__(message)
        self.compile_error = compile_error


def _literal(text: str) -> Any:
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    return int(text)


class FakeCEL:
    """A ``SelectorEvaluator`` for the expression shapes above; counts its evaluations."""

    def __init__(self) -> None:
        self.calls = 0

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        self.calls += 1
        outcomes: list[bool] = []
        error: CELError | None = None
        for part in expression.split(" && "):
            try:
                outcomes.append(self._one(part.strip(), driver, device))
            except CELError as e:
                if e.compile_error:
                    raise
                error = error or e
        if False in outcomes:
            return False
        if error is not None:
            raise error
        return True

    @staticmethod
    def _one(expr: str, driver: str, device: Device) -> bool:
        if m := _DRIVER.match(expr):
            return driver == m[1]
        if m := _ATTR.match(expr):
            domain, name, lit = m.groups()
            attrs = {qualify(k, driver): v for k, v in device.attributes.items()}
            attr = attrs.get(f"{domain}/{name}")
            if attr is None:
                raise CELError(f"no such key: {name}")
            if lit is None:
                if attr.type != "bool":
                    raise CELError(f"no such overload: {attr.type}")
                return bool(attr.value)
            want = _literal(lit)
            return type(attr.value) is type(want) and attr.value == want
        if m := _CAP.match(expr):
            domain, name, q, op = m.groups()
            caps = {qualify(k, driver): v for k, v in device.capacity.items()}
            cap = caps.get(f"{domain}/{name}")
            if cap is None:
                raise CELError(f"no such key: {name}")
            have, want_q = parse_quantity(cap.value), parse_quantity(q)
            return _CMP[op]((have > want_q) - (have < want_q))
        raise CELError(
            f"compilation failed: ERROR: <input>:1:1: undeclared reference to '{expr}' (in container '')",
            compile_error=True,
        )


# ---------------------------------------------------------------- builders
def node(name: str, region: str = "region-1") -> Node:
    return Node.model_validate({"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}})


def sel(expression: str) -> dict:
    return {"cel": {"expression": expression}}


def device_class(
    name: str, driver: str | None = None, *expressions: str, config: list | None = None
) -> DeviceClass:
    exprs = ([f'device.driver == "{driver}"'] if driver else []) + list(expressions)
    spec: dict[str, Any] = {"selectors": [sel(e) for e in exprs]}
    if config:
        spec["config"] = config
    return DeviceClass.model_validate({"metadata": {"name": name}, "spec": spec})


class Version(str):
    """An attribute value written as ``version``."""


def device(name: str, capacity: dict[str, str] | None = None, **attributes: Any) -> dict:
    def attr(v: Any) -> dict:
        if isinstance(v, Version):
            return {"version": str(v)}
        if isinstance(v, bool):
            return {"bool": v}
        if isinstance(v, int):
            return {"int": v}
        return {"string": v}

    d: dict[str, Any] = {"name": name, "attributes": {k: attr(v) for k, v in attributes.items()}}
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return d


def devices(count: int, start: int = 0) -> list[dict]:
    return [device(f"device-{i}") for i in range(start, start + count)]


ALL = "all-nodes"


def rslice(
    name: str, where: str | dict, pool: str, driver: str, *devs: dict, count: int = 1, generation: int = 1
) -> ResourceSlice:
    """A slice for node ``where``, all nodes (``ALL``) or a node selector (a dict)."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devs),
    }
    if where == ALL:
        spec["allNodes"] = True
    elif isinstance(where, dict):
        spec["nodeSelector"] = where
    else:
        spec["nodeName"] = where
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def label_selector(key: str, *values: str) -> dict:
    return {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]
    }


def local_selector(node_name: str) -> dict:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def req(name: str, cls: str, count: int = 1, *selectors: str, admin: bool | None = None) -> dict:
    exactly: dict[str, Any] = {
        "deviceClassName": cls,
        "allocationMode": "ExactCount",
        "count": count,
        "selectors": [sel(s) for s in selectors],
    }
    if admin is not None:
        exactly["adminAccess"] = admin
    return {"name": name, "exactly": exactly}


def all_req(name: str, cls: str, *selectors: str, admin: bool | None = None) -> dict:
    r = req(name, cls, 0, *selectors, admin=admin)
    r["exactly"]["allocationMode"] = "All"
    return r


def sub(name: str, cls: str, count: int = 1, *selectors: str, all_mode: bool = False) -> dict:
    return {
        "name": name,
        "deviceClassName": cls,
        "allocationMode": "All" if all_mode else "ExactCount",
        "count": count,
        "selectors": [sel(s) for s in selectors],
    }


def first(name: str, *subs: dict) -> dict:
    return {"name": name, "firstAvailable": list(subs)}


def match(attribute: str, *requests: str) -> dict:
    return {"matchAttribute": attribute, "requests": list(requests)}


def claim(
    name: str,
    *requests: dict,
    constraints: list | None = None,
    config: list | None = None,
    namespace: str | None = None,
) -> ResourceClaim:
    devs: dict[str, Any] = {"requests": list(requests), "constraints": constraints or []}
    if config:
        devs["config"] = config
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return ResourceClaim.model_validate({"metadata": meta, "spec": {"devices": devs}})


def mem_at_least(q: str, driver: str = "driver-a") -> str:
    return f'device.capacity["{driver}"].memory.compareTo(quantity("{q}")) >= 0'


def opaque(driver: str, attribute: str) -> dict:
    return {"opaque": {"driver": driver, "parameters": {attribute: f"{attribute}Value"}}}
