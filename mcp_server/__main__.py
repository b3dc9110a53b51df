"""Command line: ``python -m mcp_server [--transport streamable-http|stdio] [--host] [--port]
[--workers N] [--reload]``."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_server.core.settings import Settings

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


@contextlib.contextmanager
def metrics_processes(settings: Settings, multiprocess: bool) -> Iterator[Settings]:
    """Prepare prometheus_client's multiprocess mode when the app runs in child processes.

    prometheus_client reads PROMETHEUS_MULTIPROC_DIR itself, once, when it is first imported, and
    uvicorn's workers inherit this process's environment: the one variable outside the Settings
    object, so it is written here from ``metrics_multiproc_dir`` (or removed), before this process or
    any worker imports the library. The folder is emptied first, as the library requires, and a
    temporary one is removed at exit. The workers read the folder back through MCP_METRICS_MULTIPROC_DIR.
    """
    names = ("PROMETHEUS_MULTIPROC_DIR", "MCP_METRICS_MULTIPROC_DIR")
    saved = {name: os.environ.pop(name, None) for name in names}
    wanted = settings.metrics_enabled and (multiprocess or settings.metrics_multiproc_dir is not None)
    created = wanted and settings.metrics_multiproc_dir is None
    directory = (settings.metrics_multiproc_dir or Path(tempfile.mkdtemp(prefix="rag-metrics-"))) if wanted else None
    try:
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            for stale in directory.glob("*.db"):
                stale.unlink()
            for name in names:
                os.environ[name] = str(directory)
        yield settings.model_copy(update={"metrics_multiproc_dir": directory})
    finally:
        if created and directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        for name, value in saved.items():  # restored for whoever runs after us in this process (tests)
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


@contextlib.contextmanager
def metrics_port(settings: Settings) -> Iterator[None]:
    """With ``metrics_port`` set, serve /metrics there from a thread of this process: the process that
    outlives every worker (and, with stdio, the only process)."""
    if not (settings.metrics_enabled and settings.metrics_port):
        yield
        return
    import uvicorn

    from mcp_server.core.concurrency import start_thread
    from mcp_server.server.metrics_http import create_metrics_app

    server = uvicorn.Server(uvicorn.Config(
        create_metrics_app(settings), host=settings.metrics_host, port=settings.metrics_port, log_config=None,
        lifespan="off", server_header=False))
    thread = start_thread(server.run, name="metrics-port")
    deadline = time.monotonic() + 30
    while not server.started:  # bounded wait for the bind; a failed bind ends the thread
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit(f"cannot serve metrics on {settings.metrics_host}:{settings.metrics_port}")
        time.sleep(0.02)
    logger.info("metrics.port", extra={"host": settings.metrics_host, "port": settings.metrics_port})
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


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
        from mcp_server.server.stdio import run_stdio

        with metrics_processes(settings, multiprocess=False) as settings, metrics_port(settings):
            run_stdio(settings)
        return 0

    workers = effective_workers(settings.workers, args.reload)
    os.environ["MCP_WORKERS"] = str(workers)
    with (metrics_processes(settings, multiprocess=args.reload or workers > 1) as settings, metrics_port(settings),
          shared_parsers(settings, workers > 1 and not args.reload) as settings):
        serve_http(settings, workers, args.reload)
    return 0


@contextlib.contextmanager
def shared_parsers(settings: Settings, wanted: bool) -> Iterator[Settings]:
    """With several workers: one parser pool for all of them, started here before them (its
    preloaded parser image, ~0.2 GB, is then in memory once, not once per worker). The workers
    find it through MCP_PARSER_SOCKET, which they inherit with the rest of the environment."""
    if not wanted:
        yield settings
        return
    from mcp_server.subprocesses.process_pool import ParserService

    saved = os.environ.get("MCP_PARSER_SOCKET")
    service = ParserService(settings)
    os.environ["MCP_PARSER_SOCKET"] = service.address
    try:
        yield settings.model_copy(update={"parser_socket": Path(service.address)})
    finally:
        service.close()
        os.environ.pop("MCP_PARSER_SOCKET", None)
        if saved is not None:  # restored for whoever runs after us in this process (tests)
            os.environ["MCP_PARSER_SOCKET"] = saved


def serve_http(settings: Settings, workers: int, reload: bool) -> None:
    import uvicorn

    common = {"host": settings.host, "port": settings.port, "log_config": None,
              "timeout_graceful_shutdown": 10, "server_header": False}
    logger.info("server.start", extra={"host": settings.host, "port": settings.port, "workers": workers})
    if reload or workers > 1:
        if "timeout_worker_healthcheck" in inspect.signature(uvicorn.run).parameters:
            # uvicorn kills a worker that misses one 5 s health check: on a loaded machine a busy,
            # healthy worker (a build holding the GIL) missed it and lost its calls
            common["timeout_worker_healthcheck"] = settings.worker_healthcheck_timeout
        if reload:
            uvicorn.run("mcp_server.server.app:create_app", factory=True, reload=True,
                        reload_dirs=[str(Path(__file__).parent)], **common)  # type: ignore[arg-type]
        else:  # uvicorn's supervisor, but a worker's death ends the health-check wait for its answer
            from mcp_server.server.supervisor import run_workers

            run_workers("mcp_server.server.app:create_app", workers, **common)
    else:
        from mcp_server.server.app import create_app

        uvicorn.run(create_app(settings), **common)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
