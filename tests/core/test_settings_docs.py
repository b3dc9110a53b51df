"""Every setting is documented, with its default, in .env.example and the README table; every
registered format is in the README's supported-formats table."""

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


def test_readme_configuration_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _config_docs().render_table() in readme


def test_readme_supported_formats_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = _config_docs()
    assert f"{docs.FORMATS_START}\n{docs.render_formats_table()}\n{docs.FORMATS_END}" in readme
