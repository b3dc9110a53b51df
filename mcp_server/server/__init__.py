"""The MCP surface: the SDK's MCPServer with its tools and resources, and the ways to reach it.

- ``build``: ``create_server`` builds a ``RagMCP`` (``MCPServer``) and registers ``tools.TOOLS`` behind the guard.
- ``app``: the HTTP ASGI app (streamable HTTP at /mcp, GET /health, GET /metrics); ``stdio``: the stdio transport.
- ``lifespan``: opens and closes the long-lived resources of one process (``tools.context.AppContext``).
- ``tool_calls``: one tool call on the SDK's public tool API; ``resources``, ``metrics_http``.
"""
