"""Fixtures: the real MiniLM loaded once per session, settings with a temporary index folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.settings import Settings
from mcp_server.retrieval import ModelRegistry


@pytest.fixture(scope="session")
def minilm_registry() -> ModelRegistry:
    """The bundled MiniLM as fast (and accurate) embedder, no reranker: loaded once."""
    settings = Settings(embedding_accurate="", reranker="", device="cpu", _env_file=None)
    return ModelRegistry.load(settings)


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    return Settings(index_dir=tmp_path / "faiss_indexes", _env_file=None)
