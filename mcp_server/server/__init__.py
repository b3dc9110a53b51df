"""The MCP surface: the FastMCP server with its tools and resources, and the ways to reach it.

- ``build``: ``create_server`` builds a ``RagMCP`` (FastMCP) and registers ``tools.TOOLS`` behind the guard.
- ``app``: the HTTP ASGI app (streamable HTTP at /mcp, GET /health, GET /metrics); ``stdio``: the stdio transport.
- ``lifespan``: opens and closes the long-lived resources of one process (``tools.context.AppContext``).
- ``resources``, ``metrics_http``, ``sdk_adapter`` (the only module that reaches the SDK's private parts).
"""
