"""Command line: ``python -m mcp_server [--transport streamable-http|stdio] [--host] [--port]
[--workers N] [--reload]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

logger = logging.getLogger("mcp_server")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mcp_server", description=__doc__)
    parser.add_argument("--transport", choices=["streamable-http", "stdio"], default=None,
                        help="MCP transport (default streamable-http; endpoint /mcp)")
    parser.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default 8000)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes for HTTP (default 1)")
    parser.add_argument("--reload", action="store_true", help="restart on code changes (forces 1 worker)")
    return parser.parse_args(argv)


def effective_workers(workers: int, reload: bool) -> int:
    """--reload cannot supervise several workers (uvicorn limitation): warn and use one."""
    if reload and workers > 1:
        logger.warning("cli.reload_forces_one_worker", extra={"requested_workers": workers})
        return 1
    return workers


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Command-line values reach worker processes (and the one Settings object) via the environment.
    for name, value in (("TRANSPORT", args.transport), ("HOST", args.host), ("PORT", args.port),
                        ("WORKERS", args.workers)):
        if value is not None:
            os.environ[f"MCP_{name}"] = str(value)

    from mcp_server.core.logging import configure_logging
    from mcp_server.core.settings import Settings

    settings = Settings()
    configure_logging(settings.log_level, settings.log_dir)
    if settings.transport == "stdio":
        from mcp_server.stdio import run_stdio

        run_stdio(settings)
        return 0

    import uvicorn

    workers = effective_workers(settings.workers, args.reload)
    os.environ["MCP_WORKERS"] = str(workers)
    common = {"host": settings.host, "port": settings.port, "log_config": None,
              "timeout_graceful_shutdown": 10, "server_header": False}
    logger.info("server.start", extra={"host": settings.host, "port": settings.port, "workers": workers})
    if args.reload or workers > 1:
        uvicorn.run("mcp_server.app:create_app", factory=True, workers=None if args.reload else workers,
                    reload=args.reload, reload_dirs=[str(Path(__file__).parent)] if args.reload else None,
                    **common)  # type: ignore[arg-type]
    else:
        from mcp_server.app import create_app

        uvicorn.run(create_app(settings), **common)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
