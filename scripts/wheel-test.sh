#!/usr/bin/env bash
# `make wheel-test`: the installable tool, checked as a user would get it.
#  1. the wheel built from this checkout holds every module of the package (and any non-Python file in it)
#  2. a fresh virtualenv in a temporary folder: `pip install torch==2.13.0` (pip's sources: the CPU wheel
#     here; PyPI's CPU index elsewhere, TORCH_INDEX_URL), then the wheel with its dependencies
#  3. its console script `rag-document-server`, started in an empty folder, serves /health and answers
#     retrieve_chunks on a corpus PDF over streamable HTTP, and over stdio (a local file)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$ROOT/.venv/bin/python}
TORCH_INDEX_URL=${TORCH_INDEX_URL:-}
work=$(mktemp -d /tmp/rag-wheel-test.XXXXXX)
server=""
files=""
cleanup() {  # a stopped child's status (143) must not become the script's under set -e
    if [ -n "$server" ]; then kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true; fi
    if [ -n "$files" ]; then kill "$files" 2>/dev/null && wait "$files" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM  # through the EXIT trap
t_start=$(date +%s)
say() { printf '\n== %s\n' "$*"; }

say "build the wheel (from a copy of the checkout's files, so the checkout gets no build/ folder)"
mkdir -p "$work/src" "$work/dist"
git ls-files -z --cached --others --exclude-standard -- pyproject.toml README.md mcp_server | xargs -0 tar -c \
    | tar -x -C "$work/src"
"$PY" -m pip wheel --quiet --no-deps --no-cache-dir -w "$work/dist" "$work/src"
wheel=$(ls "$work/dist"/rag_document_server-*.whl)
"$PY" - "$wheel" <<'EOF'
import pathlib, subprocess, sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
tracked = subprocess.run(["git", "ls-files", "mcp_server"], capture_output=True, text=True, check=True).stdout.split()
missing = [p for p in tracked if p not in names]
assert not missing, f"not in the wheel: {missing}"
scripts = [n for n in names if n.endswith("entry_points.txt")]
entry = zipfile.ZipFile(sys.argv[1]).read(scripts[0]).decode()
assert "rag-document-server = mcp_server.__main__:main" in entry, entry
print(f"{pathlib.Path(sys.argv[1]).name}: {pathlib.Path(sys.argv[1]).stat().st_size // 1024} KB, "
      f"all {len(tracked)} files of mcp_server/, console script rag-document-server")
EOF

say "a fresh virtualenv: torch first, then the wheel with its dependencies"
base=$("$PY" -c "import sys; print(sys._base_executable)")
"$base" -m venv "$work/venv"
t0=$(date +%s)
quiet() { grep -v "^WARNING: Location" || true; }  # pip's notes on this machine's local mirrors
"$work/venv/bin/pip" install --quiet ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} "torch==2.13.0" 2>&1 | quiet
"$work/venv/bin/pip" install --quiet "$wheel" 2>&1 | quiet
echo "installed in $(( $(date +%s) - t0 )) s: torch $("$work/venv/bin/python" -c 'import torch; print(torch.__version__)'),"\
     "$(du -sm "$work/venv" | cut -f1) MB"
[ -x "$work/venv/bin/rag-document-server" ]

say "the console script over HTTP, started in an empty folder"
mkdir -p "$work/run" "$work/docs"
cp tests/corpus/docs/pdf/multi_page.pdf "$work/docs/"
port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
doc_port=$("$PY" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"$PY" -m http.server -b 127.0.0.1 -d "$work/docs" "$doc_port" >/dev/null 2>&1 &
files=$!
(cd "$work/run" && HF_HUB_OFFLINE=1 MCP_FETCH_ALLOWLIST=127.0.0.1 MCP_LOG_DIR= \
    exec "$work/venv/bin/rag-document-server" --port "$port" >"$work/server.log" 2>&1) &
server=$!
t0=$(date +%s.%N)
healthy=""
for _ in $(seq 1 600); do
    if "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" \
            >/dev/null 2>&1; then healthy=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'); break; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
done
[ -n "$healthy" ] || { tail -20 "$work/server.log"; echo "wheel-test: the server never became healthy" >&2; exit 1; }
echo "/health 200 after ${healthy} s"
"$PY" scripts/image_check.py http "http://127.0.0.1:$port/mcp" "http://127.0.0.1:$doc_port/multi_page.pdf" \
    "Which word processor was popular among legal professionals?"
[ -d "$work/run/faiss_indexes" ] && echo "index persisted under the working folder (MCP_INDEX_DIR to move it)"

say "the console script over stdio"
(cd "$work/run" && MCP_DOCUMENT_ROOTS="$work/docs" MCP_INDEX_DIR="$work/run/stdio-indexes" MCP_LOG_DIR= HF_HUB_OFFLINE=1 \
    "$PY" "$ROOT/scripts/image_check.py" stdio "$work/docs/multi_page.pdf" "Which word processor was popular among legal professionals?" -- \
    "$work/venv/bin/rag-document-server" --transport stdio)

say "wheel-test passed in $(( $(date +%s) - t_start )) s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
