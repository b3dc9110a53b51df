"""stdio transport with a clean stdout: JSON-RPC only, nothing else (SECURITY.md H7).

Before anything is imported that could print (model loaders, progress bars, C libraries writing
to file descriptor 1), the real stdout is duplicated for the protocol and fd 1 is pointed at
stderr, so a stray print lands in the log stream instead of corrupting the protocol.
"""

from __future__ import annotations

import os
import sys
from io import TextIOWrapper

import anyio

from mcp_server.core.settings import Settings

__all__ = ["run_stdio"]


def _claim_stdout() -> TextIOWrapper:
    protocol_fd = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return TextIOWrapper(os.fdopen(protocol_fd, "wb", buffering=0), encoding="utf-8", write_through=True)


def run_stdio(settings: Settings) -> None:
    protocol_out = _claim_stdout()
    os.environ.setdefault("TQDM_DISABLE", "1")

    async def serve() -> None:
        from mcp.server.stdio import stdio_server

        from mcp_server.server.build import create_server
        from mcp_server.server.sdk_adapter import serve_streams

        server = create_server(settings)
        async with stdio_server(stdout=anyio.wrap_file(protocol_out)) as (read_stream, write_stream):
            await serve_streams(server, read_stream, write_stream)

    anyio.run(serve)
