"""A parent that starts one spawned worker which only starts watching its supervisor after
``sys.argv[1]`` seconds (a server worker still starting up), and prints the worker's pid."""

from __future__ import annotations

import multiprocessing
import sys
import time

from mcp_server.subprocesses.processes import ended_with_supervisor


def worker(delay: float) -> None:
    time.sleep(delay)  # still starting when the supervisor is killed
    with ended_with_supervisor(every=0.1):
        time.sleep(120)


if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=worker, args=(float(sys.argv[1]),))
    child.start()
    print(child.pid, flush=True)
    time.sleep(120)
