"""Fixtures of the third-party client tests: Node (or a failure that says how to install it), a
private HOME for the Node tools, and one live HTTP server with an API key for the whole folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients_js._node import NodeMissing, find_node, package_bin
from tests.mcp_harness import ThreadedServer, make_settings

API_KEY = "client-test-key-0123456789"


@pytest.fixture(scope="session")
def node() -> Path:
    """Node >= 22.19 and the pinned packages, or a failure naming the install step (never a skip)."""
    try:
        for package, name in (("@modelcontextprotocol/inspector", "mcp-inspector"), ("mcp-remote", "mcp-remote"),
                              ("@modelcontextprotocol/conformance", "conformance")):
            package_bin(package, name)
        return find_node()
    except NodeMissing as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def node_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HOME of every Node tool: the Inspector's catalog and mcp-remote's token store stay in here.
    Its .npmrc keeps ``npx`` (the README's Claude Desktop entry) offline: it runs the pinned local
    mcp-remote or fails, and checks for no npm update."""
    home = tmp_path_factory.mktemp("node-home")
    (home / ".npmrc").write_text("offline=true\nupdate-notifier=false\naudit=false\nfund=false\n")
    return home


@pytest.fixture(scope="session")
def keyed_server() -> Iterator[ThreadedServer]:
    """The real HTTP app on a loopback port, bearer token required; the rate limit is out of the way
    (RATE_LIMITED has its own server). Models load on first use, as retrieve_chunks needs them."""
    settings = make_settings(api_keys=[API_KEY], rate_limit_rpm=100_000, load_models=False)
    with ThreadedServer(settings) as server:
        yield server
