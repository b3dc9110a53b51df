"""The ``--workers N`` supervisor: uvicorn's, except that a worker's death ends a health-check wait.

uvicorn's supervisor pings each worker over a pipe every half second and waits up to
``timeout_worker_healthcheck`` (our ``MCP_WORKER_HEALTHCHECK_TIMEOUT``) for the answer. It keeps
both ends of each pipe, so a worker SIGKILLed while a ping is outstanding leaves the worker's end
still open in the supervisor: the wait sees no end-of-file and the dead worker was replaced only
when the whole timeout had passed (60 s by default). Each worker holds its own copy of that end
(spawned processes receive it when they start), so the supervisor closes its copy once the worker
runs: the worker's death then closes the last copy, and the wait ends at once with end-of-file,
which uvicorn treats as a failed health check. No other copy is left to hold it open: the
workers are spawned with their own descriptors only, the parser pool forks from a forkserver that
holds none of these, and other children start with close_fds. A live worker that does not answer
(hung, or busy holding the GIL) is still replaced only after the whole timeout, as before. The
pings stay one worker after another: a worker that dies while another one's answer is awaited is
replaced when that answer comes (milliseconds from a healthy worker).

A subclass, not a copy of uvicorn's loop: every rule of uvicorn's supervisor (restarts, signals,
a worker failing its start stops the server) stays uvicorn's.
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any

from uvicorn import Config, Server
from uvicorn.supervisors.multiprocess import Multiprocess

__all__ = ["Supervisor", "run_workers"]

logger = logging.getLogger("mcp_server")


class Supervisor(Multiprocess):
    def release_worker_ends(self) -> None:
        """Close the supervisor's copy of each started worker's end of its health-check pipe.

        Every worker in ``processes`` has started, and a started (spawned) worker already holds
        its own copy; closing is idempotent, and uvicorn only closes this end again itself.
        """
        for process in self.processes:
            process.child_conn.close()

    def keep_subprocess_alive(self) -> None:
        self.release_worker_ends()  # before uvicorn's pings: a worker started last round included
        try:
            super().keep_subprocess_alive()
        except (EOFError, OSError) as exc:
            # uvicorn < 0.52 lets the dead worker's end-of-file (or broken pipe) out of its ping; the
            # next round, half a second on, finds that worker dead and replaces it
            logger.info("supervisor.health_check_failed", extra={"error": type(exc).__name__})


def run_workers(app: str, workers: int, **options: Any) -> None:
    """``uvicorn.run(app, factory=True, workers=workers, **options)`` under ``Supervisor``: the same
    steps as uvicorn.run's multiprocess branch (one socket bound here, shared by the workers)."""
    config = Config(app, factory=True, workers=workers, **options)
    socket = config.bind_socket()
    if "target" in inspect.signature(Multiprocess.__init__).parameters:  # uvicorn < 0.52
        supervisor = Supervisor(config, target=Server(config).run, sockets=[socket])  # type: ignore[call-arg]
    else:
        supervisor = Supervisor(config, sockets=[socket])
    try:
        supervisor.run()
    except KeyboardInterrupt:
        pass
    finally:
        if config.uds and os.path.exists(config.uds):
            os.remove(config.uds)
