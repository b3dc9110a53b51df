"""The package imports point one way: down the layers that mcp_server/__init__.py lists, and never
round in a circle.

Every import statement counts, also those inside functions and under ``TYPE_CHECKING``: a circle
held apart by a function-local import is still a circle in the design, and so is an import up the
layers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_server"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports: ``from a.b import c`` is a.b.c when that is a
    module, else a.b; relative imports are resolved against the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {target for target in found if target in known and target != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_walk_sees_function_local_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "mcp_server.server.build" in graph["mcp_server.server.app"]
    assert "mcp_server.server.build" in graph["mcp_server.server.stdio"]  # imported inside run_stdio
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_of_the_package_imports_itself_back() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def declared_layers() -> list[str]:
    """The layer list of the package docstring, lowest first: its indented ``name  description`` lines."""
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))) or ""
    return re.findall(r"^ {4}([a-z_]+) {2,}\S", doc, flags=re.MULTILINE)


def layer_of(module: str, layers: list[str]) -> int | None:
    """The package's own ``__init__`` is under every layer, ``__main__`` above them all; None: no layer."""
    parts = module.split(".")
    if len(parts) == 1:
        return -1
    if parts[1] == "__main__":
        return len(layers)
    return layers.index(parts[1]) if parts[1] in layers else None


def upward_imports(graph: dict[str, set[str]], layers: list[str]) -> list[tuple[str, str]]:
    """Every (importer, imported) pair whose imported module sits in a higher layer than its importer."""
    found = []
    for name in sorted(graph):
        own = layer_of(name, layers)
        for target in sorted(graph[name]):
            theirs = layer_of(target, layers)
            if own is not None and theirs is not None and theirs > own:
                found.append((name, target))
    return found


def test_the_layers_name_every_sub_package_once() -> None:
    layers = declared_layers()
    packages = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))
    assert len(layers) == len(set(layers)), layers
    assert sorted(layers) == packages


def test_every_module_of_the_package_belongs_to_a_layer() -> None:
    layers = declared_layers()
    assert [name for name in import_graph() if layer_of(name, layers) is None] == []


def test_no_module_imports_from_a_higher_layer() -> None:
    found = upward_imports(import_graph(), declared_layers())
    assert found == [], "imports up the layers: " + ", ".join(f"{a} -> {b}" for a, b in found)


def test_the_layer_rule_catches_an_import_up_the_layers() -> None:
    layers = ["core", "tools", "server"]
    graph = {
        "mcp_server": set(),
        "mcp_server.__main__": {"mcp_server.server.app"},
        "mcp_server.server.app": {"mcp_server.tools.query", "mcp_server.core.settings", "mcp_server"},
        "mcp_server.tools.query": {"mcp_server.tools.common", "mcp_server.server.app"},  # up: tools -> server
        "mcp_server.tools.common": {"mcp_server.core.settings"},
        "mcp_server.core.settings": {"mcp_server.__main__"},  # up: core -> the command line
    }
    assert upward_imports(graph, layers) == [
        ("mcp_server.core.settings", "mcp_server.__main__"),
        ("mcp_server.tools.query", "mcp_server.server.app"),
    ]


def test_the_package_root_holds_at_most_three_modules() -> None:
    root = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(root) <= 3, root
