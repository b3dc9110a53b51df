"""Every setting is documented, with its default, in .env.example and the table of
docs/configuration.md; every registered format is in the supported-formats table of docs/formats.md;
every tool of ``tools.TOOLS`` is in the tool tables of README.md and docs/tools.md. The tables are
generated (`python scripts/config_docs.py docs`, `make docs`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Literal

import pytest
from mcp.server.mcpserver import Context
from pydantic import Field

from mcp_server.tools import TOOLS
from mcp_server.tools.common import DocumentUrl, tool

ROOT = Path(__file__).resolve().parents[2]


def _config_docs():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("config_docs", ROOT / "scripts" / "config_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_env_example_lists_every_setting_with_its_default() -> None:
    assert (ROOT / ".env.example").read_text(encoding="utf-8").strip() == _config_docs().render_env().strip()


def test_the_configuration_doc_table_is_current() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    docs = _config_docs()
    assert f"{docs.START}\n{docs.render_table()}\n{docs.END}" in text


def test_the_formats_doc_table_is_current() -> None:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    docs = _config_docs()
    assert f"{docs.FORMATS_START}\n{docs.render_formats_table()}\n{docs.FORMATS_END}" in text


@pytest.mark.parametrize(("page", "render"), [("README.md", "render_tools_summary"),
                                              ("docs/tools.md", "render_tools_table")])
def test_the_tool_tables_are_current(page: str, render: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    docs = _config_docs()
    assert f"{docs.TOOLS_START}\n{getattr(docs, render)()}\n{docs.TOOLS_END}" in text


def test_the_docs_command_leaves_current_docs_unchanged() -> None:
    docs = _config_docs()
    assert {path.name for path, _ in docs.GENERATED} == {"configuration.md", "formats.md", "README.md", "tools.md"}
    for path, render in docs.GENERATED:
        text = path.read_text(encoding="utf-8")
        assert render(text) == text, path


@tool("document", title="Count words", summary="how many words a document holds",
      returns="`{words, document_type}`")
async def count_words(
    document_url: DocumentUrl, ctx: Context,
    unit: Annotated[Literal["word", "token"], Field(description="What is counted.")] = "word",
    pages: Annotated[int, Field(ge=1, le=9, description="Pages read.")] = 3,
) -> dict[str, object]:
    """Count the words of a document (a tool of this test only)."""
    return {}


def test_a_new_tool_gets_its_rows_from_its_mark_and_its_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _config_docs()
    monkeypatch.setattr(docs, "TOOLS", (*TOOLS, count_words))

    assert docs.render_tools_summary().splitlines()[-1] == "| `count_words` | how many words a document holds |"
    assert docs.render_tools_table().splitlines()[-1] == (
        "| `count_words` | `document_url, unit='word' (word\\|token), pages=3 (1..9)` "
        "| `{words, document_type}` | 300 s |")
    assert "count_words" not in (ROOT / "README.md").read_text(encoding="utf-8")
