"""The client tests run in the client's environment (client/.venv: langchain-mcp-adapters, mcp 1.x),
started by tests/test_client_env.py with ``--confcutdir=tests/client`` (tests/conftest.py needs the
server's environment); the server they talk to is a subprocess of the server's environment (mcp 2)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.client._rag import CORPUS, FileServer, rag_server_process


@pytest.fixture(scope="session")
def rag_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m mcp_server`` with its real models; yields the MCP endpoint URL."""
    with rag_server_process(tmp_path_factory.mktemp("client-server")) as url:
        yield url


@pytest.fixture(scope="session")
def corpus_server() -> Iterator[FileServer]:
    server = FileServer(CORPUS)
    yield server
    server.close()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
