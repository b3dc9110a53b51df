"""Child processes started the one way (subprocesses/processes.py), with real programs."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from mcp_server.subprocesses import processes

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def test_a_program_run_to_its_end_gives_its_output_as_text_and_its_exit_code() -> None:
    done = processes.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30, env=ENV)

    assert (done.stdout, done.stderr, done.returncode) == ("out\n", "err\n", 3)


def test_a_program_past_its_timeout_is_stopped_with_timeout_expired() -> None:
    with pytest.raises(processes.TimeoutExpired):
        processes.run(["sh", "-c", "exec sleep 60"], timeout=0.2, env=ENV)


def test_a_child_with_pipes_answers_over_them_and_ends_when_they_close() -> None:
    child = processes.start(["cat"], env=ENV, pipes=True)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b"hello\n")
    child.stdin.flush()

    assert child.stdout.readline() == b"hello\n"
    processes.stop(child, grace=30)
    assert child.returncode == 0


def test_a_child_started_in_its_own_session_is_killed_with_its_group() -> None:
    child = processes.start(["sh", "-c", "sleep 60 & wait"], env=ENV, own_session=True)

    processes.kill_group(child)

    assert child.returncode == -signal.SIGKILL  # and we are still here: the group was the child's, not ours


def test_our_scripts_run_on_this_interpreter_in_isolated_mode(tmp_path: Path) -> None:
    script = tmp_path / "flags.py"
    script.write_text("import sys\nprint(sys.flags.isolated, sys.argv[1:])\n", encoding="utf-8")

    done = processes.run(processes.python_argv(script, "a", "b"), timeout=60, env=ENV)

    assert done.stdout == "1 ['a', 'b']\n"


def test_a_worker_whose_supervisor_was_killed_before_it_started_watching_still_shuts_down() -> None:
    """A worker that entered ``ended_with_supervisor`` only after its supervisor's SIGKILL had been
    reparented already: it took its new parent for the supervisor and served on for good."""
    import subprocess
    import sys

    import psutil

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    supervisor = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_late_worker.py")), "3"],
                                  stdout=subprocess.PIPE, env=env, cwd=root)
    try:
        assert supervisor.stdout is not None
        worker = psutil.Process(int(supervisor.stdout.readline()))
        os.kill(supervisor.pid, signal.SIGKILL)  # before the worker watches
        supervisor.wait()
        worker.wait(timeout=30)  # bounded wait for its exit (psutil.TimeoutExpired), not a pause
        assert not worker.is_running()
    finally:
        supervisor.kill()
        supervisor.wait()
        if supervisor.stdout is not None:
            supervisor.stdout.close()
        with contextlib.suppress(psutil.NoSuchProcess, UnboundLocalError):
            worker.kill()
