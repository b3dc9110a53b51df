"""Shared fixtures: the corpus, a loopback file server, settings for tests."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from mcp_server.core.settings import Settings

if TYPE_CHECKING:
    from mcp_server.embedding import ModelRegistry

ROOT = Path(__file__).resolve().parent.parent
# The documents the tests read are carried in the repository (tests/corpus/README.md says where each
# comes from); RAG_CORPUS_DIR names another corpus folder (holding docs/ and qa/) instead.
_CORPUS_ENV = os.environ.get("RAG_CORPUS_DIR") or None
CORPUS = Path(_CORPUS_ENV or ROOT / "tests" / "corpus").resolve()
DOCS = CORPUS / "docs"
# The QA sets (questions and gold answers: squad-v2-small, xquad-dev, financebench-dev) are not carried:
# they are big, and financebench's questions are CC BY-NC. They are found in RAG_CORPUS_DIR/qa, else in
# ../shared/corpus/qa beside the checkout; use qa_set(name) (bench/data.py finds them the same way).
QA = Path(_CORPUS_ENV or ROOT.parent / "shared" / "corpus").resolve() / "qa"
SQUAD = QA / "squad-v2-small"
# tests/client runs in the client's own environment (client/.venv, mcp 1.x): tests/test_client_env.py
# starts it there; this environment (mcp 2) cannot import the LangChain adapters.
collect_ignore = ["client"]


def _qa_missing(name: str) -> str:
    return (f"QA set {name} not found at {QA / name}: the QA sets are not carried in the repository "
            f"(tests/corpus/README.md); set RAG_CORPUS_DIR to a corpus folder holding qa/{name}")


def qa_set(name: str) -> Path:
    """The folder of the QA set ``name``; the calling test is skipped when it is not there."""
    folder = QA / name
    if not folder.is_dir():
        pytest.skip(_qa_missing(name))
    return folder


# Fuzz profiles: "default" is the short run of `make test`, the same examples every run (a suite that
# passes passes again: new examples are `make fuzz`'s job), "long" the run of `make fuzz`
# (--hypothesis-profile=long), random. Registered here because profiles must exist before the
# hypothesis plugin reads that option.
settings.register_profile("default", settings.get_profile("default"), print_blob=True, derandomize=True)
settings.register_profile("long", max_examples=3000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("default")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "fuzz: hypothesis fuzz targets (short in make test, long in make fuzz)")
    # Model weights never come from a hub during tests; the bundled MiniLM loads from site-packages.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not DOCS.is_dir():
        pytest.fail(f"test corpus not found at {CORPUS} (tests/corpus in the repository, or RAG_CORPUS_DIR)")
    return CORPUS


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class FileServer:
    """A threaded HTTP server on 127.0.0.1 serving one folder; ``url(path)`` builds links."""

    def __init__(self, directory: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, relative: str) -> str:
        return f"{self.base}/{relative.lstrip('/')}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def serve_copies(root: Path, *relatives: str) -> Iterator[FileServer]:
    """A loopback server over ``root`` once these corpus documents are copied into it (by base
    name); a test writes its own extra files into ``root`` before or after."""
    for relative in relatives:
        shutil.copy(DOCS / relative, root / Path(relative).name)
    server = FileServer(root)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def corpus_server(corpus_dir: Path) -> Iterator[FileServer]:
    """Serves the corpus folder (docs/...) on a loopback port (fetch it with MCP_FETCH_ALLOWLIST=127.0.0.1)."""
    server = FileServer(corpus_dir)
    yield server
    server.close()


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


# --- models and indexes (tests/encoders, embedding, retrieval, indexes) ---------------------------
@pytest.fixture(scope="session")
def minilm_registry() -> ModelRegistry:
    """The bundled MiniLM as fast (and accurate) embedder, no reranker: loaded once."""
    from mcp_server import embedding  # the models are imported by the tests that load them only

    return embedding.ModelRegistry.load(Settings(embedding_accurate="", reranker="", device="cpu", _env_file=None))


@pytest.fixture(name="settings")
def index_settings(tmp_path: Path) -> Settings:
    """Settings with a temporary index folder."""
    return Settings(index_dir=tmp_path / "faiss_indexes", _env_file=None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The index folders the test servers wrote in the system's temporary folder go with the session."""
    from tests.mcp_harness import SCRATCH_DIRS

    for folder in SCRATCH_DIRS:
        shutil.rmtree(folder, ignore_errors=True)
