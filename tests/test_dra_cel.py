"""DRA CEL selectors: upstream's compile_test.go table, the conformance cases' selectors, errors, the cache,
and properties against Python's own comparisons."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any, NamedTuple

import pytest
import yaml
from helpers.replay import CASES_DRA
from hypothesis import given, settings
from hypothesis import strategies as st

from optisched.model.dra import Device, DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from optisched.model.quantity import parse_quantity
from optisched.plugins.dynamicresources import cel
from optisched.plugins.dynamicresources.cel import CELError, NotHandled, compile_selector, device_view
from optisched.plugins.dynamicresources.cel_library import Version, parse_semver

DRA = "dra.example.com"
CASES = CASES_DRA  # the repository's copy of the conformance suite's DRA cases


def view(driver: str = "", attributes: dict[str, Any] | None = None, capacity: dict[str, str] | None = None,
         allow_multiple_allocations: bool | None = None) -> cel.DeviceView:
    """A device built through the typed model, as a ResourceSlice would carry it."""
    device = Device.model_validate({
        "name": "dev", "attributes": attributes or {},
        "capacity": {k: {"value": v} for k, v in (capacity or {}).items()},
        "allowMultipleAllocations": allow_multiple_allocations})
    return device_view(driver, device)


# ---------------------------------------------------------------- compile_test.go (v1.35/v1.36 rows without
# list-typed attributes, which 1.35 does not have, and without cost, which is not modelled)
class Row(NamedTuple):
    expression: str
    driver: str = ""
    attributes: dict | None = None
    capacity: dict | None = None
    allow_multiple_allocations: bool | None = None
    compile_error: str = ""
    match_error: str = ""
    match: bool = False


B = {"bool": True}
ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""
ROWS: dict[str, Row] = {
    "true": Row("true", match=True),
    "false": Row("false", match=False),
    "syntax-error": Row("?!", compile_error="Syntax error"),
    "type-error": Row("1", compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Row(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr"),
    "runtime-error-lookup-map": Row(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr"),
    "domain-check-negative": Row('"no-such-domain" in device.attributes', match=False),
    "domain-check-positive": Row('"dra.example.com" in device.attributes',
                                 attributes={"dra.example.com/something": B}, match=True),
    "empty-driver-name": Row('device.driver == ""', match=True),
    "real-driver-name": Row('device.driver == "dra.example.com"', DRA, match=True),
    "driver-name-qualifier": Row('device.attributes["dra.example.com"].name', DRA, {"name": B}, match=True),
    "driver-name-qualifier-map-lookup": Row('device.attributes["dra.example.com"]["name"]', DRA, {"name": B},
                                            match=True),
    "bind": Row('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', DRA, {"name": B},
                match=True),
    "qualified-attribute-name": Row('device.attributes["other.example.com"].name', DRA,
                                    {"other.example.com/name": B}, match=True),
    "bool": Row('device.attributes["dra.example.com"].name', DRA, {"name": B}, match=True),
    "int": Row('device.attributes["dra.example.com"].name > 0', DRA, {"name": {"int": 1}}, match=True),
    "string": Row('device.attributes["dra.example.com"].name == "fish"', DRA, {"name": {"string": "fish"}},
                  match=True),
    "includes-function-undeclared-error": Row(
        'device.attributes["dra.example.com"].name.includes("fish")', DRA,
        compile_error="undeclared reference to 'includes'"),
    "version": Row('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))', DRA,
                   {"name": {"version": "1.0.0"}}, match=True),
    "version_v": Row('device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && '
                     'isSemver("v1.0.0", true)', DRA, {"name": {"version": "1.0.0"}}, match=True),
    "quantity": Row('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', DRA,
                    capacity={"name": "1Mi"}, match=True),
    "check-positive": Row('"name" in device.capacity["dra.example.com"] && '
                          'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', DRA,
                          capacity={"name": "1Mi"}, match=True),
    "check-negative": Row('!("name" in device.capacity["dra.example.com"]) || '
                          'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
                          match=True),
    "all": Row(ALL, DRA, {"bool": B, "int": {"int": 1}, "string": {"string": "fish"},
                          "version": {"version": "1.0.0"}}, {"quantity": "1Mi"}, match=True),
    "many": Row('device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
                'device.attributes["dra.example.com"].c', DRA, {"a": B, "b": B, "c": B}, match=True),
    "check_attribute_domains": Row('device.attributes.exists_one(x, x == "dra.example.com")', DRA,
                                   {"services": {"string": "some_example_value"}}, match=True),
    "check_attribute_ids": Row('device.attributes["dra.example.com"].exists_one(x, x == "services")', DRA,
                               {"services": {"string": "some_example_value"}}, match=True),
    "split_attribute": Row('device.attributes["dra.example.com"].services.split("example").size() >= 2', DRA,
                           {"services": {"string": "some_example_value"}}, match=True),
    "regexp_attribute": Row('device.attributes["dra.example.com"].services.matches("[^a]?sym")', DRA,
                            {"services": {"string": "asymetric"}}, match=True),
    "check_capacity_domains": Row('device.capacity.exists_one(x, x == "dra.example.com")', DRA,
                                  capacity={"memory": "1Mi"}, match=True),
    "check_capacity_ids": Row('device.capacity["dra.example.com"].exists_one(x, x == "memory")', DRA,
                              capacity={"memory": "1Mi"}, match=True),
    "allow_multiple_allocations": Row("device.allowMultipleAllocations == true", DRA,
                                      allow_multiple_allocations=True, match=True),
    "allow_multiple_allocations_default": Row("device.allowMultipleAllocations == false", DRA, match=True),
    "allow_multiple_allocations_false": Row("device.allowMultipleAllocations == false", DRA,
                                            allow_multiple_allocations=False, match=True),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_upstream_compile_table(row: Row) -> None:
    if row.compile_error:
        with pytest.raises(CELError) as e:
            compile_selector(row.expression)
        assert row.compile_error in str(e.value)
        assert not isinstance(e.value, NotHandled)
        return
    program = compile_selector(row.expression)
    device = view(row.driver, row.attributes, row.capacity, row.allow_multiple_allocations)
    if row.match_error:
        with pytest.raises(CELError) as e:
            program.matches(device)
        assert row.match_error in str(e.value)
        return
    assert program.matches(device) is row.match


# ---------------------------------------------------------------- the conformance cases' selectors
def _conformance() -> list[tuple[str, str, Device]]:
    """(expression, driver, device) for every selector of every case against every device of that case."""
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        devices = [(s.spec.driver, dev) for s in (ResourceSlice.model_validate(d) for d in docs
                                                  if d["kind"] == "ResourceSlice") for dev in s.spec.devices]
        expressions = set()
        for d in docs:
            if d["kind"] == "DeviceClass":
                selectors = DeviceClass.model_validate(d).spec.selectors
                expressions |= {s.cel.expression for s in selectors if s.cel}
            elif d["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
                model = ResourceClaim if d["kind"] == "ResourceClaim" else ResourceClaimTemplate
                obj = model.model_validate(d)
                spec = obj.spec if isinstance(obj, ResourceClaim) else obj.spec.spec
                for r in spec.devices.requests:
                    subs = [r.exactly] if r.exactly else r.first_available
                    expressions |= {s.cel.expression for sub in subs if sub for s in sub.selectors if s.cel}
        out += [(e, driver, dev) for e in sorted(expressions) for driver, dev in devices]
    return out


def _oracle(expression: str, driver: str, device: Device) -> bool:
    """The conformance selectors, read by hand."""
    attr = {k: a.value for k, a in device.attributes.items()}
    cases = {
        'device.driver == "gpu.example.com"': lambda: driver == "gpu.example.com",
        'device.driver == "nic.example.com"': lambda: driver == "nic.example.com",
        'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"':
            lambda: driver == "gpu.example.com" and attr["model"] == "a100",
        'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "h100"':
            lambda: driver == "gpu.example.com" and attr["model"] == "h100",
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0':
            lambda: parse_quantity(device.capacity["memory"].value) >= parse_quantity("40Gi"),
    }
    return cases[expression]()


CONFORMANCE = _conformance()


def test_conformance_selectors_are_found() -> None:
    assert len({e for e, _, _ in CONFORMANCE}) >= 5


@pytest.mark.parametrize("expression", sorted({e for e, _, _ in CONFORMANCE}))
def test_conformance_selectors_agree_with_a_reading_by_hand(expression: str) -> None:
    program = compile_selector(expression)
    outcomes = set()
    for e, driver, device in CONFORMANCE:
        if e != expression:
            continue
        try:
            expected: bool | str = _oracle(expression, driver, device)
        except KeyError:
            expected = "error"
        try:
            got: bool | str = program.matches(device_view(driver, device))
        except CELError:
            got = "error"
        assert got == expected, (driver, device.name)
        outcomes.add(got)
    assert len(outcomes) > 1, "every device gave the same outcome: the selector was not exercised"


# ---------------------------------------------------------------- errors
def test_missing_capacity_of_another_driver_is_upstreams_error() -> None:
    program = compile_selector('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
    with pytest.raises(CELError, match="^no such key: memory$"):
        program.matches(view("nic.example.com", {"speedGbps": {"int": 200}}))


def test_missing_attribute_in_present_domain() -> None:
    with pytest.raises(CELError, match="^no such key: model$"):
        compile_selector('device.attributes["dra.example.com"].model == "x"').matches(
            view(DRA, {"other": {"int": 1}}))


def test_has_on_a_missing_domain_is_false_not_an_error() -> None:
    assert compile_selector('has(device.attributes["x.example.com"].model)').matches(view(DRA)) is False


def test_non_bool_dynamic_result_fails_when_evaluated() -> None:
    program = compile_selector('device.attributes["dra.example.com"].name')
    with pytest.raises(CELError, match="CEL result of type string could not be converted to bool"):
        program.matches(view(DRA, {"name": {"string": "fish"}}))


@pytest.mark.parametrize("expression, kind", [
    ('"a"', "string"), ("[1, 2]", "list(int)"), ('quantity("1")', "kubernetes.Quantity"), ("1.5", "double")])
def test_non_bool_static_result_fails_to_compile(expression: str, kind: str) -> None:
    with pytest.raises(CELError, match=rf"^must evaluate to bool or the unknown type, not {kind}$".replace(
            "(", r"\(").replace(")", r"\)")):
        compile_selector(expression)


def test_undefined_device_field() -> None:
    with pytest.raises(CELError, match="undefined field 'model'"):
        compile_selector('device.model == "a100"')


def test_device_fields_inside_strings_are_text() -> None:
    program = compile_selector('device.driver == "device.model" || "device.attributes" in device.attributes')
    assert program.matches(view("device.model")) is True
    assert program.matches(view(DRA)) is False


def test_unparsable_quantity_is_a_runtime_error() -> None:
    with pytest.raises(CELError, match="quantities must match the regular expression"):
        compile_selector('sign(quantity("lots")) == 1').matches(view())


def test_bad_version_attribute_names_the_attribute() -> None:
    with pytest.raises(CELError, match="^attribute driverVersion: parse semantic version"):
        view(DRA, {"driverVersion": {"version": "1.0"}})


def test_bad_capacity_names_the_capacity() -> None:
    with pytest.raises(CELError, match="^capacity memory: 'lots' is not a quantity"):
        view(DRA, capacity={"memory": "lots"})


@pytest.mark.parametrize("expression, reason", [
    ('ip("10.0.0.1").family() == 4', "IP library"),
    ('cidr("10.0.0.0/8").containsIP("10.1.2.3")', "CIDR library"),
    ('isURL("https://example.com")', "URL library"),
    ('sets.contains([1, 2], [1])', "sets extension"),
    ('[3, 1].sort() == [1, 3]', "lists extension"),
    ('[1, 2].sum() == 3', "list library"),
    ('"abc".find("b") == "b"', "regex library"),
    ('[1, 2].all(i, v, v > i)', "two-variable comprehensions"),
    ('optional.of(1).hasValue()', "optional types"),
    ('device.attributes[?"x"].hasValue()', "optional types"),
    ('device.attributes["dra.example.com"].n < 2.5', None),
    ("1 < 2.0", "CrossTypeNumericComparisons"),
    ("(" * 40 + "true" + ")" * 40, "nesting deeper than 32"),
])
def test_unimplemented_parts_of_the_environment_are_not_handled(expression: str, reason: str | None) -> None:
    if reason is None:  # a dynamic comparison is decided when evaluated, by the reference runtime
        assert compile_selector(expression).matches(view(DRA, {"n": {"int": 1}})) is True
        return
    with pytest.raises(NotHandled, match=reason):
        compile_selector(expression)


def test_a_string_the_runtime_refuses_is_a_cel_error() -> None:
    device = cel.DeviceView(DRA, {DRA: {"name": "\udcff"}}, {})
    with pytest.raises(CELError):
        compile_selector('device.attributes["dra.example.com"].name == "x"').matches(device)


def test_an_unknown_function_is_upstreams_compile_error_not_not_handled() -> None:
    with pytest.raises(CELError, match="undeclared reference to 'frobnicate'") as e:
        compile_selector("frobnicate(1)")
    assert not isinstance(e.value, NotHandled)


def test_computed_domain_lookup_of_a_missing_domain_is_not_guessed() -> None:
    program = compile_selector('cel.bind(a, device.attributes, a["x.example.com"].model == "m")')
    assert program.matches(view(DRA, {"x.example.com/model": {"string": "m"}})) is True
    with pytest.raises(NotHandled, match="empty map"):
        program.matches(view(DRA))


# ---------------------------------------------------------------- the cache
def test_compile_once() -> None:
    expression = 'device.driver == "cache.example.com"'
    first = compile_selector(expression)
    hits = compile_selector.cache_info().hits
    assert compile_selector(expression) is first
    assert compile_selector.cache_info().hits == hits + 1


def test_failures_are_not_cached() -> None:
    before = compile_selector.cache_info().currsize
    for _ in range(2):
        with pytest.raises(CELError):
            compile_selector("?! not cached")
    assert compile_selector.cache_info().currsize == before


# ---------------------------------------------------------------- quantity and semver functions
@pytest.mark.parametrize("expression", [
    'quantity("1") == quantity("1000m")',
    'quantity("1Ki").add(quantity("1")).compareTo(quantity("1025")) == 0',
    'quantity("1Ki").add(1) == quantity("1025")',
    'quantity("1").sub(2).compareTo(quantity("-1")) == 0',
    'quantity("5").sub(quantity("1500m")) == quantity("3.5")',
    'sign(quantity("-1")) == -1 && sign(quantity("0")) == 0',
    'quantity("2Gi").asInteger() == 2147483648',
    'quantity("1.5").asApproximateFloat() == 1.5',
    'quantity("1.5").isInteger() == false && quantity("2k").isInteger()',
    'isQuantity("40Gi") && !isQuantity("forty")',
    'quantity("1Mi").isLessThan(quantity("1M")) == false && quantity("1M").isLessThan(quantity("1Mi"))',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))',
    'semver("1.0.0-alpha.1").compareTo(semver("1.0.0-alpha.beta")) == -1',
    'semver("1.0.0-2").isLessThan(semver("1.0.0-10"))',
    'semver("1.0.0+build.1") == semver("1.0.0")',
    'semver("v01.2", true) == semver("1.2.0")',
    'isSemver("1.2.3") && !isSemver("1.2") && isSemver("1.2", true) && !isSemver("1.02.3")',
    '"AbC".lowerAscii() == "abc" && "a-b".replace("-", "_") == "a_b" && " x ".trim() == "x"',
    '["a", "b"].join(",") == "a,b" && "abc".substring(1, 2) == "b" && "abc".charAt(0) == "a"',
    '[1, 2, 3].map(x, x * 2).filter(x, x > 2).size() == 2 && [1, 2].exists(x, x == 2) && [1].all(x, x == 1)',
])
def test_library_functions(expression: str) -> None:
    assert compile_selector(expression).matches(view()) is True


@pytest.mark.parametrize("expression", [
    'device.capacity["dra.example.com"].memory.major() == 1',
    'device.attributes["dra.example.com"].v.isGreaterThan(quantity("1"))',
    'device.capacity["dra.example.com"].memory.compareTo(semver("1.0.0")) == 0',
    'device.attributes["dra.example.com"].v.asInteger() == 1',
])
def test_a_function_of_the_other_kubernetes_type_is_no_such_overload(expression: str) -> None:
    """A ``dyn`` receiver reaches the runtime, which tells the two message types apart only by kind."""
    device = view(DRA, {"v": {"version": "1.0.0"}}, {"memory": "1Gi"})
    with pytest.raises(CELError, match="no such overload"):
        compile_selector(expression).matches(device)


def test_as_integer_of_a_fraction_fails() -> None:
    with pytest.raises(CELError, match="cannot convert value to integer"):
        compile_selector('quantity("1.5").asInteger() == 1').matches(view())


# ---------------------------------------------------------------- properties
IDS = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
STRINGS = st.text(st.characters(codec="ascii", exclude_characters='"\\\n\r'), max_size=12)


@settings(max_examples=150, deadline=None)
@given(name=IDS, value=st.one_of(st.integers(-2**63, 2**63 - 1), STRINGS),
       literal=st.one_of(st.integers(-2**63 + 1, 2**63 - 1), STRINGS))
def test_attribute_equality_agrees_with_python(name: str, value: int | str, literal: int | str) -> None:
    kind = "int" if isinstance(value, int) else "string"
    source = str(literal) if isinstance(literal, int) else f'"{literal}"'
    device = view(DRA, {name: {kind: value}})
    program = compile_selector(f'device.attributes["{DRA}"].{name} == {source}')
    if isinstance(value, str) and "\x00" in value:
        with pytest.raises(NotHandled, match="NUL"):
            program.matches(device)
    elif isinstance(value, int) != isinstance(literal, int):  # CEL's heterogeneous equality: int != string
        assert program.matches(device) is False
    else:
        assert program.matches(device) is (value == literal)


QUANTITIES = st.builds(lambda n, f, s: f"{n}{f}{s}", st.integers(0, 10**6),
                       st.sampled_from(["", ".5", ".25", ".001"]),
                       st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3"]))


@settings(max_examples=150, deadline=None)
@given(cap=QUANTITIES, lit=QUANTITIES)
def test_quantity_comparisons_agree_with_parsed_quantities(cap: str, lit: str) -> None:
    a, b = parse_quantity(cap), parse_quantity(lit)
    device = view(DRA, capacity={"memory": cap})
    q = f'device.capacity["{DRA}"].memory'
    assert compile_selector(f'{q}.compareTo(quantity("{lit}")) == {(a > b) - (a < b)}').matches(device)
    assert compile_selector(f'{q}.isGreaterThan(quantity("{lit}"))').matches(device) is (a > b)
    assert compile_selector(f'{q}.isLessThan(quantity("{lit}"))').matches(device) is (a < b)
    assert compile_selector(f'{q} == quantity("{lit}")').matches(device) is (a == b)


VERSIONS = st.builds(lambda a, b, c, pre: f"{a}.{b}.{c}" + (f"-{pre}" if pre else ""),
                     st.integers(0, 20), st.integers(0, 20), st.integers(0, 20),
                     st.sampled_from(["", "alpha", "alpha.1", "beta", "1", "2", "rc.10", "rc.9"]))


def _semver_key(v: Version) -> tuple:
    pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in v.pre)
    return (v.major, v.minor, v.patch, not v.pre, pre)


@settings(max_examples=150, deadline=None)
@given(a=VERSIONS, b=VERSIONS)
def test_semver_order_is_semver_2(a: str, b: str) -> None:
    """semver.org's precedence, written independently as a sort key, agrees with compareTo."""
    ka, kb = _semver_key(parse_semver(a)), _semver_key(parse_semver(b))
    device = view(DRA, {"v": {"version": a}})
    expected = (ka > kb) - (ka < kb)
    program = compile_selector(f'device.attributes["{DRA}"].v.compareTo(semver("{b}")) == {expected}')
    assert program.matches(device)


def test_the_largest_device_upstream_allows_evaluates_in_a_process_of_its_own() -> None:
    """cel-expr-python 0.1.3 overflows its stack (SIGSEGV) on data nested 100,000 deep; a device view is
    three levels deep whatever its size. This runs the widest device ResourceSlice validation allows
    (32 attributes and capacities, 64-character ids and values) through every macro, apart from pytest."""
    code = textwrap.dedent("""
        from optisched.plugins.dynamicresources.cel import DeviceView, Quantity, compile_selector
        ids = ["a%02d" % i + "x" * 60 for i in range(16)]
        device = DeviceView("d.example.com", {"d.example.com": {i: "v" * 64 for i in ids}},
                            {"d.example.com": {i: Quantity(10**27) for i in ids}})
        d = 'device.attributes["d.example.com"]'
        e = (f"{d}.all(k, {d}[k].size() == 64)"
             ' && device.capacity["d.example.com"].exists_one(k, k.startsWith("a00"))'
             f' && {d}.map(k, k).filter(k, k.endsWith("x")).size() == 16')
        print(all(compile_selector(e).matches(device) for _ in range(200)))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_module_imports_in_a_fresh_interpreter() -> None:
    """The native library loads and evaluates in a process of its own (a crash would kill only that one)."""
    code = ("from optisched.plugins.dynamicresources.cel import compile_selector as c, DeviceView as D\n"
            "print(c('device.driver == \"x\"').matches(D('x', {}, {})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
