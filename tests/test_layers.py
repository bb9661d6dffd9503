"""The package's layers, bottom to top: a module imports only from its own layer or the layers below.

Read like :mod:`test_import_cycles` (module-level, ``TYPE_CHECKING`` and function-level imports all
count), at the level of optisched's top packages and modules. The few crossings that remain are listed
in :data:`KNOWN`, each with why; a new crossing fails, and so does a listed one that is gone (the list
only shrinks).
"""
from __future__ import annotations

import ast

from test_import_cycles import PACKAGE, imports, module_name, resolve

LAYERS: list[set[str]] = [
    {"errors", "version", "options", "collector", "textsafe", "interrupt", "cpsat", "worker", "outputs"},
    {"model"},
    {"profile", "term_warnings"},
    {"framework"},
    {"plugins", "registry"},
    {"metrics", "policy", "datasets"},
    {"greedy", "preemption"},  # DefaultPreemption is greedy's PostFilter, and its dry runs run greedy's filters
    {"optimal"},
    {"plans", "comparison", "descheduler"},
    {"reschedule", "whatif", "report"},
    {"experiments"},
    {"api", "cli", "__main__"},
]
LEVEL = {name: i for i, layer in enumerate(LAYERS) for name in layer}

# (from, to): why the lower one still imports the higher one
KNOWN = {
    ("model", "profile"): "the loader decodes a KubeSchedulerConfiguration found among the input's objects",
    ("profile", "registry"): "multiPoint expands to the extension points each plugin's class declares",
    ("plugins", "optimal"): "each plugin's CP-SAT encoding writes to optimal mode's batch model and score terms",
    ("optimal", "descheduler"): "reschedule's repair objective counts the descheduler's violations in the model",
}


def crossings() -> dict[tuple[str, str], list[str]]:
    """(importer's top name, imported top name) -> the imports that go up a layer."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        if mod == "optisched":
            continue  # the package root is the public API: it may import anything
        top = mod.split(".")[1]
        for node in imports(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = resolve(mod, path.name == "__init__.py", node.level, node.module)
                targets = [f"{base}.{a.name}" for a in node.names] if base == "optisched" else [base]
            else:
                targets = [a.name for a in node.names]
            for target in targets:
                if not target.startswith("optisched."):
                    continue
                other = target.split(".")[1]
                if other != top and LEVEL[other] > LEVEL[top]:
                    out.setdefault((top, other), []).append(f"{mod} imports {target} (line {node.lineno})")
    return out


def test_every_top_package_and_module_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert tops == set(LEVEL)


def test_imports_go_down_the_layers():
    found = crossings()
    new = {k: v for k, v in found.items() if k not in KNOWN}
    assert not new, new
    assert set(KNOWN) == set(found), f"no longer crossing, take them off KNOWN: {set(KNOWN) - set(found)}"


def test_only_the_command_line_imports_typer():
    """The engine's option types are typer-free: the callbacks that check a parsed option are cli/'s."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module_name(path)
        if mod.startswith("optisched.cli"):
            continue
        for node in imports(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"{mod} imports {n} (line {node.lineno})" for n in names if n.split(".")[0] in ("typer", "click")]
    assert not found, found
