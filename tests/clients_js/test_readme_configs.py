"""Every client set-up in the README's "Client set-ups" and in docs/clients.md, run as written.

The snippets are read from those two files (each follows a ``<!-- client-config: NAME -->``
marker; a name appears once across them); only the placeholders change: the live server's URL
for ``http://127.0.0.1:8000/mcp``, the test key for ``<key>``, this checkout for
``/path/to/checkout``. Claude Desktop's entries and the Inspector's command run in the Inspector
CLI, which reads ``mcpServers`` entries like Claude Desktop does (``npx mcp-remote`` included);
VS Code's and Cursor's HTTP entries and Claude Code's command, whose clients cannot be installed
from a registry here, run with their URL and headers.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.clients_js._calls import BLOCKED, ENCRYPTED_PDF, error_body
from tests.clients_js._node import Run, inspector
from tests.clients_js.conftest import API_KEY
from tests.conftest import FileServer
from tests.mcp_harness import ROOT, TOOL_NAMES, ThreadedServer

SNIPPET_FILES = (ROOT / "README.md", ROOT / "docs" / "clients.md")
DOCUMENTED_URL = "http://127.0.0.1:8000/mcp"
CHECKOUT = "/path/to/checkout"
SNIPPET = re.compile(r"<!-- client-config: (?P<name>[\w-]+) -->\s*```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)


def snippets() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in SNIPPET_FILES:
        for m in SNIPPET.finditer(path.read_text(encoding="utf-8")):
            assert m["name"] not in found, f"client-config {m['name']} appears twice ({path.name})"
            found[m["name"]] = m["body"]
    return found


def snippet(name: str, **placeholders: str) -> str:
    text = snippets()[name]
    for placeholder, value in placeholders.items():
        text = text.replace(placeholder, value)
    return text


def entry(config: dict[str, Any], key: str = "mcpServers") -> dict[str, Any]:
    servers = config[key]
    assert list(servers) == ["rag-documents"], servers
    return dict(servers["rag-documents"])


def write_config(path: Path, server: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": {"rag-documents": server}}), encoding="utf-8")
    return path


def calls_in_parallel(jobs: dict[str, list[str]], home: Path) -> dict[str, Run]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(inspector, args, home=home) for name, args in jobs.items()}
    return {name: future.result() for name, future in futures.items()}


def tool_call(tool: str, arguments: dict[str, Any]) -> list[str]:
    return ["--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(arguments)]


def assert_shows_error(run: Run, code: str, message: str) -> None:
    assert code in run.stdout and message in run.stdout, run.printed
    body = error_body(run.json()["content"][0]["text"])
    assert body["code"] == code and message in body["error"]


def assert_lists_every_tool(run: Run) -> None:
    assert run.returncode == 0, run.printed
    assert {tool["name"] for tool in run.json()["tools"]} == TOOL_NAMES


def test_the_docs_have_every_client_snippet_and_claude_desktop_only_gets_commands() -> None:
    found = snippets()
    assert set(found) == {"claude-desktop-http", "claude-desktop-stdio", "claude-desktop-installed",
                          "claude-desktop-docker", "claude-code-http", "claude-code-stdio",
                          "vscode-http", "vscode-stdio", "cursor-http", "cursor-stdio", "inspector-cli"}
    for name in ("claude-desktop-http", "claude-desktop-stdio", "claude-desktop-installed", "claude-desktop-docker"):
        server = entry(json.loads(found[name]))
        assert "command" in server and "url" not in server, f"Claude Desktop reads stdio entries only: {name}"


def test_every_stdio_snippet_starts_the_same_server_command() -> None:
    desktop = entry(json.loads(snippet("claude-desktop-stdio")))
    vscode = entry(json.loads(snippet("vscode-stdio")), key="servers")
    cursor = entry(json.loads(snippet("cursor-stdio")))
    argv = shlex.split(snippet("claude-code-stdio"))
    assert argv[:6] == ["claude", "mcp", "add", "--transport", "stdio", "rag-documents"]
    options, command = argv[6:argv.index("--")], argv[argv.index("--") + 1:]
    code_env = dict(value.split("=", 1) for flag, value in zip(options[::2], options[1::2], strict=True)
                    if flag == "--env")
    assert vscode.pop("type") == "stdio"
    assert desktop == vscode == cursor
    assert command == [desktop["command"], *desktop["args"]] and code_env == desktop["env"]
    assert all(value.startswith(CHECKOUT) for value in [desktop["command"], *desktop["env"].values()])


def test_the_claude_desktop_stdio_entry_runs_the_server_for_a_typescript_client(node: Path, node_home: Path,
                                                                                tmp_path: Path) -> None:
    server = entry(json.loads(snippet("claude-desktop-stdio")))
    server["command"] = server["command"].replace(f"{CHECKOUT}/.venv/bin/python", sys.executable)
    server["env"] = {key: value.replace(CHECKOUT, str(tmp_path)) for key, value in server["env"].items()}
    # This checkout's code even from a venv shared between worktrees; models load on first use only.
    server["env"].update(PYTHONPATH=str(ROOT), MCP_LOAD_MODELS="false")
    config = write_config(tmp_path / "claude_desktop_config.json", server)

    run = inspector(["--config", str(config), "--server", "rag-documents", *tool_call("detect_language", {"text": ""})],
                    home=node_home)

    assert_shows_error(run, "VALIDATION_ERROR", "argument 'text' must not be empty")


def test_the_installed_command_entry_runs_the_console_script_for_a_typescript_client(
    node: Path, node_home: Path, tmp_path: Path,
) -> None:
    server = entry(json.loads(snippet("claude-desktop-installed")))
    assert server["command"] == "rag-document-server"  # the console script pip, pipx and uv put on PATH
    server["command"] = str(Path(sys.executable).parent / "rag-document-server")
    server["env"] = {key: value.replace("/path/to/rag-data", str(tmp_path)) for key, value in server["env"].items()}
    server["env"].update(PYTHONPATH=str(ROOT), MCP_LOAD_MODELS="false")
    config = write_config(tmp_path / "claude_desktop_config.json", server)

    run = inspector(["--config", str(config), "--server", "rag-documents", *tool_call("detect_language", {"text": ""})],
                    home=node_home)

    assert_shows_error(run, "VALIDATION_ERROR", "argument 'text' must not be empty")


def test_the_container_entry_runs_the_image_as_an_interactive_stdio_server_with_its_index_volume() -> None:
    # Run for real by `make image-test` (scripts/image-test.sh), which needs a container engine.
    server = entry(json.loads(snippet("claude-desktop-docker")))
    assert server["command"] == "docker"
    args = server["args"]
    assert args[:3] == ["run", "-i", "--rm"] and args[-3:] == ["rag-document-server", "--transport", "stdio"]
    assert args[args.index("-v") + 1].endswith(":/var/lib/rag")


def test_the_claude_desktop_http_entry_shows_every_error_through_mcp_remote(
    node: Path, node_home: Path, keyed_server: ThreadedServer, corpus_server: FileServer, tmp_path: Path,
) -> None:
    server = entry(json.loads(snippet("claude-desktop-http", **{DOCUMENTED_URL: keyed_server.mcp_url,
                                                                 "<key>": API_KEY})))
    assert server["command"] == "npx" and "mcp-remote" in server["args"]
    config = ["--config", str(write_config(tmp_path / "claude_desktop_config.json", server)), "--server",
              "rag-documents"]
    encrypted = ENCRYPTED_PDF.replace("{corpus}", corpus_server.base)

    printed = calls_in_parallel({
        "list": [*config, "--method", "tools/list"],
        "blocked": [*config, *tool_call("retrieve_chunks", {"document_url": BLOCKED, "query": "keys"})],
        "encrypted": [*config, *tool_call("extract_pdf_text", {"document_url": encrypted})],
        "bad argument": [*config, *tool_call("manage_cache", {"action": "explode"})],
    }, node_home)

    assert_lists_every_tool(printed["list"])
    assert_shows_error(printed["blocked"], "DOWNLOAD_ERROR", f"refusing to fetch {BLOCKED}")
    assert_shows_error(printed["encrypted"], "PROCESSING_ERROR", "password required")
    assert_shows_error(printed["bad argument"], "VALIDATION_ERROR", "must be 'stats', 'clear' or 'drop'")


def test_the_claude_code_command_names_the_transport_url_and_bearer_header_that_work(
    node: Path, node_home: Path, keyed_server: ThreadedServer,
) -> None:
    argv = shlex.split(snippet("claude-code-http", **{DOCUMENTED_URL: keyed_server.mcp_url, "<key>": API_KEY}))
    assert argv[:6] == ["claude", "mcp", "add", "--transport", "http", "rag-documents"]
    url, flag, header = argv[6:]
    assert flag == "--header"

    run = inspector(["--transport", "http", url, "--header", header, "--method", "tools/list"], home=node_home)

    assert_lists_every_tool(run)


def test_the_vscode_http_entry_prompts_for_the_key_and_sends_it_as_a_bearer_header(
    node: Path, node_home: Path, keyed_server: ThreadedServer, tmp_path: Path,
) -> None:
    config = json.loads(snippet("vscode-http", **{DOCUMENTED_URL: keyed_server.mcp_url}))
    (prompt,) = config["inputs"]
    assert prompt["type"] == "promptString" and prompt["password"] is True
    server = entry(config, key="servers")
    assert server["type"] == "http"
    # What VS Code sends once the user answered the prompt.
    server["headers"] = {name: value.replace(f"${{input:{prompt['id']}}}", API_KEY)
                         for name, value in server["headers"].items()}
    target = ["--config", str(write_config(tmp_path / "mcp.json", server)), "--server", "rag-documents"]

    printed = calls_in_parallel({
        "list": [*target, "--method", "tools/list"],
        "bad argument": [*target, *tool_call("detect_language", {"text": ""})],
    }, node_home)

    assert_lists_every_tool(printed["list"])
    assert_shows_error(printed["bad argument"], "VALIDATION_ERROR", "argument 'text' must not be empty")


def test_the_cursor_http_entry_is_a_url_with_headers_that_work(
    node: Path, node_home: Path, keyed_server: ThreadedServer,
) -> None:
    server = entry(json.loads(snippet("cursor-http", **{DOCUMENTED_URL: keyed_server.mcp_url, "<key>": API_KEY})))
    assert set(server) == {"url", "headers"}  # Cursor picks streamable HTTP from the url
    headers = [arg for name, value in server["headers"].items() for arg in ("--header", f"{name}: {value}")]

    run = inspector([server["url"], *headers, "--method", "tools/list"], home=node_home)

    assert_lists_every_tool(run)


def test_the_inspector_command_lists_the_tools(node: Path, node_home: Path, keyed_server: ThreadedServer) -> None:
    argv = shlex.split(snippet("inspector-cli", **{DOCUMENTED_URL: keyed_server.mcp_url, "<key>": API_KEY}))
    assert argv[:3] == ["npx", "@modelcontextprotocol/inspector", "--cli"]

    run = inspector(argv[3:], home=node_home)  # the pinned Inspector instead of npx fetching the latest

    assert_lists_every_tool(run)
