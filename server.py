"""The server as the MCP SDK's ``mcp`` command finds one: a module-level ``MCPServer`` named ``mcp``.

    mcp run server.py       # stdio, the server of `python -m mcp_server --transport stdio`
    mcp dev server.py       # the same under the MCP Inspector (the SDK starts it through uv)
    mcp install server.py   # an entry in Claude Desktop's configuration (started through uv)

The ``mcp`` command comes with the SDK's ``cli`` extra, which pyproject.toml declares. Settings
come from the environment and ``.env`` as for ``python -m mcp_server``; the models load when the
server starts, not when this file is imported.
"""

from mcp_server.server.build import create_server

mcp = create_server()
