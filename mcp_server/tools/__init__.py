"""The fifteen MCP tools. Each module registers its tools on a ``RagMCP`` through the guard."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_server.server import RagMCP

__all__ = ["register_tools"]


def register_tools(server: RagMCP) -> None:
    from mcp_server.tools import extract, query, research, utility

    query.register(server)
    research.register(server)
    extract.register(server)
    utility.register(server)
