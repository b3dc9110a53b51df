"""Every setting is documented, with its default, in .env.example and the table of
docs/configuration.md; every registered format is in the supported-formats table of docs/formats.md.
Both tables are generated (`python scripts/config_docs.py docs`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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


def test_the_docs_command_leaves_current_docs_unchanged() -> None:
    docs = _config_docs()
    for path, render in ((docs.CONFIGURATION_DOC, docs.render_configuration_doc),
                         (docs.FORMATS_DOC, docs.render_formats_doc)):
        text = path.read_text(encoding="utf-8")
        assert render(text) == text, path
