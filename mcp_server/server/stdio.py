"""stdio transport with a clean stdout: JSON-RPC only, nothing else (SECURITY.md H7).

Before anything is imported that could print (model loaders, progress bars, C libraries writing
to file descriptor 1), fd 1 is pointed at stderr and the real stdout kept aside, so a stray print
lands in the log stream instead of corrupting the protocol. Once the server is built, the real
stdout goes back to fd 1 for the SDK's ``stdio_server``, which claims it the same way for as long as
it serves (fd 1 to stderr, the protocol on a private duplicate): the models load, and the tools
run, inside that claim.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import anyio

from mcp_server.core.settings import Settings

__all__ = ["run_stdio"]


def _divert_stdout() -> Callable[[], None]:
    """Point fd 1 at stderr; the returned function points it back at the real stdout."""
    sys.stdout.flush()
    protocol_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdout, sys.stdout = sys.stdout, sys.stderr

    def restore() -> None:
        sys.stderr.flush()
        os.dup2(protocol_fd, stdout.fileno())
        os.close(protocol_fd)
        sys.stdout = stdout

    return restore


def run_stdio(settings: Settings) -> None:
    restore_stdout = _divert_stdout()
    os.environ.setdefault("TQDM_DISABLE", "1")

    from mcp_server.server.build import create_server

    server = create_server(settings)
    restore_stdout()  # only for the moment until stdio_server claims it again
    anyio.run(server.run_stdio_async)
