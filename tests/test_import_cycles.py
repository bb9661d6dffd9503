"""The package's layers read top to bottom: no import cycle among optisched's modules.

Imports are read with ``ast`` from every module's source: module-level imports, those under
``if TYPE_CHECKING:`` (a type checker follows them) and those inside functions. Function-level imports
count too: they keep heavy or optional dependencies (matplotlib, the kubernetes client) off the import
path of commands that do not need them, but a module that imports a higher layer on call depends on it
all the same. So a lazy import may point down the layers, never up. The package root
(``optisched/__init__.py``, the public API that imports everything on call) is the one module nothing
inside the package may import.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optisched"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from {'.' * level}{target} import ...`` written in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement: module level, under ``if``/``try``, in class bodies and in functions."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    """Edges module -> optisched module it imports (``from pkg import mod`` -> ``pkg.mod``)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for node in imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = resolve(name, path.name == "__init__.py", node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert graph.has_edge("optisched.greedy.scheduler", "optisched.model.state")
    assert len(graph) > 50


@pytest.mark.parametrize(("source", "edges"), [
    ("from . import b\n", {("p.a", "p.b")}),
    ("from .b import thing\n", {("p.a", "p.b")}),
    ("import p.b\n", {("p.a", "p.b")}),
    ("def f():\n    from . import b\n", {("p.a", "p.b")}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import T\n", {("p.a", "p.b")}),
], ids=["a relative module import is an edge", "a relative name import is an edge to its module",
        "an absolute import is an edge", "an import inside a function is an edge",
        "an import for type checking is an edge"])
def test_import_edges(tmp_path, source, edges):
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(source)
    (pkg / "b.py").write_text("thing = T = 1\n")
    graph = import_graph(pkg)
    assert {(u, v) for u, v in graph.edges if u != "p" and v != "p"} == edges


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("thing = 1\ndef f():\n    from . import a\n")
    assert sorted(nx.simple_cycles(import_graph(pkg))) in ([["p.a", "p.b"]], [["p.b", "p.a"]])


def test_nothing_imports_the_package_root():
    graph = import_graph()
    assert list(graph.predecessors("optisched")) == []


def test_no_import_cycles():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:10])
