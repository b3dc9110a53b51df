"""A real RAG server on a loopback port for the client tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp_harness import server_process


@pytest.fixture(scope="session")
def rag_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m mcp_server`` with its real models; yields the MCP endpoint URL."""
    env = {
        "MCP_FETCH_ALLOWLIST": "127.0.0.1",
        "MCP_INDEX_DIR": str(tmp_path_factory.mktemp("client-index")),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    with server_process([], env=env) as (_, base):
        yield f"{base}/mcp"

