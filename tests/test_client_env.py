"""The bundled LangChain client's tests, run in the client's own environment (client/.venv, made by
`make setup`: langchain-mcp-adapters 0.3 needs mcp<2) against this environment's server (mcp 2) as
a subprocess: an mcp 1.x client and the adapters talk to the 2.x server over streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.mcp_harness import ROOT

CLIENT_PYTHON = ROOT / "client" / ".venv" / "bin" / "python"


def test_the_client_tests_pass_in_the_client_environment_against_this_server(tmp_path: Path) -> None:
    assert CLIENT_PYTHON.exists(), "client/.venv is missing: run `make setup`"
    done = subprocess.run(
        [str(CLIENT_PYTHON), "-m", "pytest", "tests/client", "-q", "-p", "no:cacheprovider",
         "--confcutdir=tests/client", f"--basetemp={tmp_path / 'client'}"],
        cwd=ROOT, env={**os.environ, "RAG_SERVER_PYTHON": sys.executable}, capture_output=True, text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
