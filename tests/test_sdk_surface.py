"""The server uses only the MCP SDK's public surface: no attribute read of ours reaches a private name
of the SDK (``obj._name`` that only the SDK defines), our subclass of ``MCPServer`` shadows none of its
private names, and no SDK module we import is private (``mcp._x``, ``mcp.x._y``)."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp
from mcp.server.mcpserver import MCPServer

from mcp_server.server.build import create_server
from tests.mcp_harness import ROOT, make_settings

SDK = Path(mcp.__file__).parent


def defined_names(files: list[Path]) -> set[str]:
    """The names a set of files defines: attributes it stores, functions, classes, annotated names."""
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def private_names(files: list[Path]) -> dict[str, set[str]]:
    """Every ``_name`` (not dunder) read as an attribute, per file."""
    found: dict[str, set[str]] = {}
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and node.attr.startswith("_") and not node.attr.startswith("__")}
        if names:
            found[str(path.relative_to(ROOT))] = names
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_of_the_server_reads_a_private_attribute_of_the_sdk() -> None:
    files = sorted((ROOT / "mcp_server").rglob("*.py"))
    theirs = {name for name in defined_names(sorted(SDK.rglob("*.py"))) if is_private(name)}
    assert {"_lowlevel_server", "_tool_manager", "_request_handlers"} <= theirs  # the walk sees the SDK
    only_theirs = theirs - defined_names(files)  # a name we define too is ours where we read it
    reads = {path: sorted(names & only_theirs) for path, names in private_names(files).items() if names & only_theirs}
    assert reads == {}


def test_the_server_subclass_shadows_no_private_name_of_mcpserver() -> None:
    module = ast.parse((ROOT / "mcp_server/server/build.py").read_text(encoding="utf-8"))
    rag = next(node for node in module.body if isinstance(node, ast.ClassDef) and node.name == "RagMCP")
    ours = {name for node in ast.walk(rag) for name in
            ([node.attr] if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) else
             [node.name] if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else []) if is_private(name)}
    plain = MCPServer("plain")
    theirs = {name for name in {*vars(plain), *dir(MCPServer)} if is_private(name)}
    assert {"_context_factory"} <= ours and "_lowlevel_server" in theirs
    assert ours & theirs == set()
    assert isinstance(create_server(make_settings(load_models=False)), MCPServer)


def test_no_module_of_the_server_imports_a_private_sdk_module() -> None:
    private = []
    for path in sorted((ROOT / "mcp_server").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            private += [f"{path.name}: {m}" for m in modules
                        if m.split(".")[0] in ("mcp", "mcp_types") and any(p.startswith("_") for p in m.split("."))]
    assert private == []
