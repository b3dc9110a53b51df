"""The official MCP conformance suite (server mode) against the live HTTP server.

Scenarios that call the suite's own demo tools, resources and prompts, or optional capabilities
this server does not declare, are listed with their reason in conformance-expected-failures.yml;
any other failure fails the run, and so does an entry there that starts to pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients_js._node import JS_DIR, Run, package_bin, run_node
from tests.mcp_harness import ThreadedServer, make_settings

EXPECTED_FAILURES = JS_DIR / "conformance-expected-failures.yml"
# Why an expected failure may fail; any other message is a failure of this server.
REASONS = re.compile(
    r"MCP error -32602: Unknown tool: test_"  # a demo tool: the protocol error the spec asks for
    r"|MCP error -32002: Resource not found: test://"  # a demo resource: the spec's "not found" code
    r"|MCP error -32602: Unknown prompt: test_"  # a demo prompt: invalid params, as the spec asks
    r"|MCP error -32601: Method not found"  # an optional capability this server does not declare
    r"|Server did not provide session ID"  # stateless streamable HTTP, by design (--workers N)
)
CORE = {"server-initialize", "ping", "tools-list", "resources-list", "prompts-list", "dns-rebinding-protection"}


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(make_settings(load_models=False)) as live:
        yield live


@pytest.fixture(scope="module")
def conformance(node: Path, node_home: Path, server: ThreadedServer,
                tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, list[dict[str, Any]]]]:
    """One run of the whole active suite; returns it and each scenario's checks (checks.json)."""
    out = tmp_path_factory.mktemp("conformance")
    run = run_node(package_bin("@modelcontextprotocol/conformance", "conformance"),
                   ["server", "--url", server.mcp_url, "--expected-failures", str(EXPECTED_FAILURES), "-o", str(out)],
                   home=node_home, timeout=300)
    checks = {}
    for found in out.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", found.parent.name)
        checks[scenario] = json.loads(found.read_text(encoding="utf-8"))
    return run, checks


def failures(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checks that did not pass (the suite's baseline counts a warning as a failure too)."""
    return [check for check in checks if check["status"] in ("FAILURE", "WARNING")]


def reason(check: dict[str, Any]) -> str:
    return str(check.get("errorMessage") or check.get("details", {}).get("message") or "")


def expected_failures() -> list[str]:
    """The scenario names of the baseline file (a flat YAML list under ``server:``)."""
    lines = EXPECTED_FAILURES.read_text(encoding="utf-8").splitlines()
    return [line.strip()[2:].strip() for line in lines if line.strip().startswith("- ")]


def test_the_conformance_suite_passes_every_scenario_that_applies(
    conformance: tuple[Run, dict[str, list[dict[str, Any]]]],
) -> None:
    run, checks = conformance
    assert run.returncode == 0, run.printed[-6000:]
    passed = {scenario for scenario, results in checks.items() if results and not failures(results)}
    assert passed >= CORE, sorted(passed)


def test_each_expected_conformance_failure_fails_only_for_its_stated_reason(
    conformance: tuple[Run, dict[str, list[dict[str, Any]]]],
) -> None:
    _, checks = conformance
    expected = expected_failures()
    assert len(expected) == 24 and set(expected) <= set(checks), sorted(set(expected) - set(checks))
    wrong = {scenario: reason(check) for scenario in expected for check in failures(checks[scenario])
             if not REASONS.search(reason(check))}
    assert not wrong, wrong
