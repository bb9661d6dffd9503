"""DRA CEL selectors: per-device evaluation time of the CEL libraries on PyPI against plain Python.

A 1,000-node slice set with 8 devices each (6 GPUs, 2 NICs: 8,000 devices) and five typical selectors. Every
library evaluates every selector on every device; the baseline is the same selector written as a Python
function over the same dicts, timed in the same run. Printed: microseconds per device and the ratio to the
baseline, and the number of devices each selector matched (all libraries must agree).

    python benchmarks/bench_cel.py            # all libraries that are installed
    python benchmarks/bench_cel.py --nodes 200
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from optisched.model.dra import Device
from optisched.model.quantity import parse_quantity
from optisched.plugins.dynamicresources.cel import CELError, compile_selector, device_view
from optisched.plugins.dynamicresources.cel_library import Quantity, parse_semver

GPU, NIC = "gpu.example.com", "nic.example.com"
SELECTORS = {
    "driver": f'device.driver == "{GPU}"',
    "driver+model": f'device.driver == "{GPU}" && device.attributes["{GPU}"].model == "a100"',
    "quantity": f'device.driver == "{GPU}" && '
                f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) >= 0',
    "semver": f'device.driver == "{GPU}" && '
              f'device.attributes["{GPU}"].driverVersion.isGreaterThan(semver("550.54.14"))',
    "in+bool": f'"rdma" in device.attributes["{NIC}"] && device.attributes["{NIC}"].rdma',
}
Q40 = parse_quantity("40Gi")
V = parse_semver("550.54.14")


def _attrs(dev: dict, domain: str) -> dict:
    return dev["attributes"].get(domain, {})


BASELINE: dict[str, Callable[[dict], bool]] = {
    "driver": lambda d: d["driver"] == GPU,
    "driver+model": lambda d: d["driver"] == GPU and _attrs(d, GPU)["model"] == "a100",
    "quantity": lambda d: d["driver"] == GPU and d["capacity"][GPU]["memory"].nanos >= Q40,
    "semver": lambda d: d["driver"] == GPU and _attrs(d, GPU)["driverVersion"].compare(V) == 1,
    "in+bool": lambda d: "rdma" in _attrs(d, NIC) and _attrs(d, NIC)["rdma"],
}


def devices(nodes: int) -> list[tuple[str, Device]]:
    out = []
    for n in range(nodes):
        for i in range(6):
            out.append((GPU, Device.model_validate({
                "name": f"gpu-{i}", "attributes": {
                    "model": {"string": "a100" if (n + i) % 3 else "h100"}, "index": {"int": i},
                    "driverVersion": {"version": f"550.54.{14 + (n + i) % 3}"}},
                "capacity": {"memory": {"value": "80Gi" if (n + i) % 2 else "24Gi"}}})))
        for i in range(2):
            out.append((NIC, Device.model_validate({
                "name": f"nic-{i}",
                "attributes": {"rdma": {"bool": bool((n + i) % 2)}, "speedGbps": {"int": 200}}})))
    return out


def timed(fn: Callable[[Any], bool], items: list[Any], repeat: int = 3) -> tuple[float, int]:
    """The fastest of ``repeat`` passes (the machine is shared), and how many items matched."""
    best, hits = float("inf"), 0
    for _ in range(repeat):
        t = time.perf_counter()
        hits = sum(1 for it in items if fn(it))
        best = min(best, time.perf_counter() - t)
    return best, hits


# ---------------------------------------------------------------- the candidates
def optisched_cel(views: list[Any]) -> dict[str, Callable[[Any], bool]]:
    """cel-expr-python through optisched's module. A view is converted for CEL on its first evaluation and
    kept: that conversion is timed apart, as one pass of every selector over fresh views."""
    programs = {k: compile_selector(e).matches for k, e in SELECTORS.items()}
    t = time.perf_counter()
    for v in views:
        for match in programs.values():
            try:
                match(v)
            except CELError:
                pass
    print(f"cel-expr-python (optisched): first pass of the {len(SELECTORS)} selectors over fresh views, with "
          f"the conversion: {(time.perf_counter() - t) / len(views) * 1e6:.1f} us per device")
    return programs


def celpy_programs() -> tuple[dict[str, Callable[[Any], bool]] | str, Callable[[dict], Any]]:
    try:
        import celpy  # type: ignore[import-not-found]
        from celpy import celtypes  # type: ignore[import-not-found]
    except ImportError as err:
        return f"not installed ({err})", lambda d: d

    def value(v: Any) -> Any:
        if isinstance(v, bool):
            return celtypes.BoolType(v)
        if isinstance(v, int):
            return celtypes.IntType(v)
        if isinstance(v, str):
            return celtypes.StringType(v)
        return v  # a Version or Quantity, handed to the functions below as it is

    def to_cel(d: dict) -> Any:
        def nested(m: Any) -> Any:
            return celtypes.MapType({celtypes.StringType(dom): celtypes.MapType(
                {celtypes.StringType(k): value(v) for k, v in ids.items()}) for dom, ids in m.items()})
        attrs = {GPU: {}, NIC: {}} | dict(d["attributes"])
        return {"device": celtypes.MapType({celtypes.StringType("driver"): celtypes.StringType(d["driver"]),
                                            celtypes.StringType("attributes"): nested(attrs),
                                            celtypes.StringType("capacity"): nested(d["capacity"])})}

    env = celpy.Environment()
    funcs: dict[str, Any] = {"quantity": lambda s: Quantity.parse(str(s)),
             "compareTo": lambda a, b: celtypes.IntType((a.nanos > b.nanos) - (a.nanos < b.nanos)),
             "semver": lambda s: parse_semver(str(s)),
             "isGreaterThan": lambda a, b: celtypes.BoolType(a.compare(b) == 1)}
    out: dict[str, Callable[[Any], bool]] = {}
    for k, e in SELECTORS.items():
        prog = env.program(env.compile(e), functions=funcs)

        def run(act: Any, prog: Any = prog) -> bool:
            return bool(prog.evaluate(act))
        out[k] = run
    return out, to_cel


def rust_cel() -> dict[str, Callable[[Any], bool]] | str:
    try:
        import cel  # type: ignore[import-not-found]
    except ImportError as err:
        return f"not installed ({err})"
    out: dict[str, Callable[[Any], bool]] = {}
    for k, e in SELECTORS.items():
        if k in ("quantity", "semver"):
            continue  # the bindings cannot carry a Python value of a type of its own through CEL
        prog = cel.compile(e)
        out[k] = partial(_execute, prog)
    return out


def _execute(prog: Any, d: dict) -> bool:
    return bool(prog.execute({"device": d}))


def _prefilled(m: Any) -> dict:
    """Both drivers' domains present (empty when the device lacks one), as upstream's lookups see them."""
    return {GPU: {}, NIC: {}} | {d: {k: v for k, v in ids.items() if isinstance(v, int | str)}
                                 for d, ids in m.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    args = ap.parse_args()
    devs = devices(args.nodes)
    views = [device_view(driver, d) for driver, d in devs]
    plain: list[dict[str, Any]] = [{"driver": v.driver, "attributes": v.attributes, "capacity": v.capacity}
                                   for v in views]
    print(f"{len(devs)} devices, {len(SELECTORS)} selectors; microseconds per device (ratio to plain Python)")
    base = {k: timed(f, plain) for k, f in BASELINE.items()}
    rows: list[tuple[str, dict[str, Callable[[Any], bool]] | str, list[Any]]] = [
        ("cel-expr-python (optisched)", optisched_cel(views), views)]
    pyprogs, to_cel = celpy_programs()
    rows.append(("cel-python (celpy)", pyprogs,
                 [to_cel(p) for p in plain] if not isinstance(pyprogs, str) else []))
    rust = rust_cel()
    rust_data = [{"driver": p["driver"], "attributes": _prefilled(p["attributes"])} for p in plain]
    rows.append(("common-expression-language", rust, rust_data))
    header = f"{'selector':<14}{'plain Python':>14}" + "".join(f"{name:>32}" for name, _, _ in rows)
    print(header)
    for k in SELECTORS:
        t0, hits = base[k]
        line = f"{k:<14}{t0 / len(devs) * 1e6:>11.2f} us"
        for _, progs, data in rows:
            if isinstance(progs, str) or k not in progs:
                line += f"{'n/a':>32}"
                continue
            t, h = timed(progs[k], data)
            mark = "" if h == hits else f" MISMATCH {h}!={hits}"
            line += f"{t / len(devs) * 1e6:>14.2f} us ({t / t0:>7.1f}x){mark}"
        print(line + f"   [{hits} matched]")
    for name, progs, _ in rows:
        if isinstance(progs, str):
            print(f"{name}: {progs}")


if __name__ == "__main__":
    main()
