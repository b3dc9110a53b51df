"""The ``--workers N`` supervisor (server/supervisor.py) with real uvicorn workers: a worker that dies
while the supervisor waits for its health-check answer is replaced at once; a live worker that does
not answer is still replaced after the health-check timeout.

The worker is stopped (SIGSTOP) so that the supervisor's ping stays unanswered, and a copy of the
worker's end of the pipe shows when that ping has arrived: the kill then lands inside the wait.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Iterator

import httpx
from uvicorn import Config
from uvicorn.supervisors.multiprocess import SIGNALS, Process

from mcp_server.server.supervisor import Supervisor
from tests.mcp_harness import stop_process

APP = "tests.server._pid_app:app"


@contextlib.contextmanager
def one_worker(healthcheck_timeout: int) -> Iterator[tuple[Supervisor, str]]:
    """A Supervisor of one started worker on a free loopback port: (supervisor, base URL)."""
    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}  # the Supervisor takes them over
    config = Config(APP, host="127.0.0.1", port=0, workers=1, lifespan="off", log_config=None,
                    timeout_worker_healthcheck=healthcheck_timeout)
    sock = config.bind_socket()
    supervisor = Supervisor(config, sockets=[sock])
    try:
        supervisor.init_processes()
        yield supervisor, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        supervisor.should_exit.set()
        for process in supervisor.processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid or 0, signal.SIGKILL)  # a stopped worker would not heed SIGTERM
            process.join()
        sock.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def serving_pid(base: str, deadline: float) -> int:
    """The pid of the worker that answers, once one does (bounded readiness poll)."""
    while True:
        with contextlib.suppress(httpx.HTTPError):
            return int(httpx.get(base, timeout=2).text)
        assert time.monotonic() < deadline, "no worker answered"
        time.sleep(0.05)



def test_a_worker_killed_while_its_health_check_answer_is_awaited_is_replaced_at_once() -> None:
    with one_worker(healthcheck_timeout=600) as (supervisor, base):
        worker = supervisor.processes[0]
        assert serving_pid(base, time.monotonic() + 60) == worker.pid
        assert worker.pid is not None
        # a copy of the worker's end of its pipe: readable once the supervisor's ping has arrived
        probe = socket.socket(fileno=os.dup(worker.child_conn.fileno()))
        stop_process(worker.pid)
        checking = threading.Thread(target=supervisor.keep_subprocess_alive, daemon=True)
        checking.start()
        readable, _, _ = select.select([probe], [], [], 30)
        probe.close()
        assert readable, "the supervisor never pinged the worker"
        assert checking.is_alive()  # waiting for the answer of a stopped worker

        os.kill(worker.pid, signal.SIGKILL)
        checking.join(30)  # the health-check timeout is 600 s: only the worker's death ends this wait
        assert not checking.is_alive(), "the supervisor still waits for the dead worker's answer"
        replacement = supervisor.processes[0]
        assert replacement is not worker and worker.exitcode == -signal.SIGKILL
        assert serving_pid(base, time.monotonic() + 60) == replacement.pid


def test_a_live_worker_that_does_not_answer_is_replaced_after_the_health_check_timeout() -> None:
    with one_worker(healthcheck_timeout=1) as (supervisor, base):
        worker = supervisor.processes[0]
        assert serving_pid(base, time.monotonic() + 60) == worker.pid
        assert worker.pid is not None
        stop_process(worker.pid)
        started = time.monotonic()
        supervisor.keep_subprocess_alive()
        waited = time.monotonic() - started
        replacement = supervisor.processes[0]
        assert replacement is not worker and worker.exitcode == -signal.SIGKILL  # killed as hung
        assert waited >= 1  # the whole timeout, as uvicorn waits: a stopped worker's pipe stays open
        assert serving_pid(base, time.monotonic() + 60) == replacement.pid


def test_a_started_worker_keeps_its_end_of_the_pipe_and_the_supervisor_drops_its_copy() -> None:
    with one_worker(healthcheck_timeout=60) as (supervisor, base):
        worker: Process = supervisor.processes[0]
        assert serving_pid(base, time.monotonic() + 60) == worker.pid
        supervisor.keep_subprocess_alive()  # a healthy worker answers: nothing replaced
        assert supervisor.processes[0] is worker and worker.child_conn.closed
        assert worker.ping(timeout=30)  # its own copy still answers
