"""Building a document's complete index: claimed first, embedded through the model runner, saved.

``claim_and_build`` takes the key's claim (``IndexTiers``: another worker or host building the
same document means its index is loaded, not built again), embeds in a model slot and saves. An
``IndexBuilder`` runs it in the call that needs the index, or, for a document already answered
from partial indexes, in a background task owned by ``running()`` (the app's lifespan): that
build forwards progress to the starting call while it is connected, and stops at its next batch
when the server shuts down.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from mcp_server import metrics
from mcp_server.caches.budget import release_memory
from mcp_server.core.concurrency import ANSWER_WAIT, Progress, after_answer, answer_mark, off_loop
from mcp_server.core.errors import ModelLoadError
from mcp_server.core.models import Chunk
from mcp_server.detectors.instructions import InstructionDetector
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.embedding.runner import ModelRunner, ThreadProgress
from mcp_server.encoders.embedders import Embedder
from mcp_server.indexes.instructions import score_chunks, store_scores
from mcp_server.indexes.store import Manifest
from mcp_server.indexes.tiers import IndexTiers
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["IndexBuilder", "PendingBuild", "manifest_check", "profile"]

log = logging.getLogger(__name__)

RESCORE_AT_ONCE = 2  # stored indexes scored for instructions (rescore) at once, waiting ones included

PROGRESS_TIMEOUT = 5.0  # a progress notification that cannot be sent by then is dropped, with the rest


class _Stopped(Exception):
    """Raised inside a background build's thread when the server shuts down."""


@dataclass(kw_only=True)
class PendingBuild:
    """A document answered from partial indexes while its complete one builds."""

    key: str
    base: DocumentIndex  # BM25 over every chunk, no vectors: each query adds its own
    embedder: Embedder
    done: anyio.Event = field(default_factory=anyio.Event)
    progress: Progress | None = None  # the starting call's, while it is connected
    embedded: tuple[int, int] = (0, 0)
    reserved: int = 0  # bytes of the memory budget held until the complete build ends
    started: anyio.Event = field(default_factory=anyio.Event)  # set when the build no longer waits for an answer
    wanted: anyio.Event = field(default_factory=anyio.Event)  # set by a call that waits for the complete index


class IndexBuilder:
    def __init__(
        self, models: ModelRegistry, tiers: IndexTiers, runner: ModelRunner, counters: dict[str, int], *,
        keep: Callable[[str, DocumentIndex], Awaitable[None]], release: Callable[[int], None],
        answer_wait: float = ANSWER_WAIT,
    ) -> None:
        self.models, self.tiers, self.runner, self.counters = models, tiers, runner, counters
        self.answer_wait = answer_wait  # what a build waits at most for its starting call's answer
        self._keep, self._release = keep, release  # a built index into memory; reserved bytes back to the budget
        self.pending: dict[str, PendingBuild] = {}
        self.scoring: dict[str, anyio.Event] = {}  # stored indexes being scored for instructions (rescore)
        self._tasks: TaskGroup | None = None

    @property
    def background(self) -> bool:
        """Whether background builds can start (inside ``running()``)."""
        return self._tasks is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Owns the background builds: they outlive the call that started them and stop here."""
        self.runner.start()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self.runner.stop()  # running embeddings stop at their next batch
                tasks.cancel_scope.cancel()

    async def build_here(
        self, key: str, chunker_version: str, chunks: list[Chunk], progress: Progress | None,
    ) -> tuple[DocumentIndex, bool]:
        return await self.claim_and_build(key, chunker_version, chunks, self.runner.progress(progress),
                                          background=False)

    def start(self, key: str, chunker_version: str, chunks: list[Chunk], pending: PendingBuild, *,
              hold: bool = False) -> bool:
        """The complete build of a partially answered document, in the background (True: started);
        ``hold``: once the running call has answered (its mark, taken here: the build's task runs in
        the lifespan's context), at most ``answer_wait`` seconds from now."""
        assert self._tasks is not None
        self.pending[key] = pending
        mark = answer_mark() if hold else None
        self._tasks.start_soon(self._build_in_background, key, chunker_version, chunks, pending, mark)
        return True

    async def _build_in_background(
        self, key: str, chunker_version: str, chunks: list[Chunk], pending: PendingBuild,
        mark: anyio.Event | None = None,
    ) -> None:
        """Waits for the starting call's answer (``mark``), then for a slot (and for another worker's
        or host's build of the same key), builds, persists, swaps in."""
        forward = self.runner.progress(_live(pending))
        stopping = self.runner.stopping

        def report(done: int, total: int, message: str) -> None:
            if stopping.is_set():
                raise _Stopped
            pending.embedded = (done, total)
            if forward is not None:
                forward(done, total, message)

        try:
            await after_answer(mark, sooner=pending.wanted, wait=self.answer_wait)
            pending.started.set()
            index, built = await self.claim_and_build(key, chunker_version, chunks, report, background=True)
            if built:
                self.counters["background_builds"] += 1
            await self._keep(key, index)
        except _Stopped:
            log.info("index.background_stopped", extra={"key": key})
        except Exception:  # the partial index keeps answering; the next cold call retries
            metrics.index_build("failed")
            log.exception("index.background_failed", extra={"key": key})
        finally:
            if self.pending.get(key) is pending:
                del self.pending[key]
            self._release(pending.reserved)
            pending.done.set()

    def rescore(self, key: str, index: DocumentIndex) -> None:
        """Scores a stored index's chunks for instructions to the agent in the background, once, when
        it was stored without the loaded detector's scores (by a server before them, or another model's),
        and stores them beside it: from then on a load reads them (``indexes/instructions.py``)."""
        detector = self.models.instructions
        stored = index.instructions.detector if index.instructions is not None else None
        if detector is None or stored == detector.model_id or self._tasks is None or key in self.scoring:
            return
        if len(self.scoring) >= RESCORE_AT_ONCE:  # each holds its index: a shelf of them would pin the memory
            return  # scored at a later load
        self.scoring[key] = anyio.Event()
        self._tasks.start_soon(self._rescore, key, index, detector)

    async def _rescore(self, key: str, index: DocumentIndex, detector: InstructionDetector) -> None:
        try:
            scores = await self.runner.build(functools.partial(score_chunks, detector, index.chunks), background=True)
            index.instructions = scores  # the copies made from here on read them; the flagger checks the detector
            await off_loop(store_scores, self.tiers.local.path(key), index)
        except Exception:  # noqa: BLE001 - the flagger scores returned passages itself, as before
            log.warning("index.rescore_failed", extra={"key": key}, exc_info=True)
        finally:
            self.scoring.pop(key).set()

    async def claim_and_build(
        self, key: str, chunker_version: str, chunks: list[Chunk],
        progress: ThreadProgress | None, *, background: bool,
    ) -> tuple[DocumentIndex, bool]:
        """(index, built). The claim first (another worker or host building this document: then
        its index is loaded, not built again), then a model slot only for the embedding (a
        background build also one of the background slots). Every wait is an awaited one, so a
        shutdown leaves no thread waiting."""
        async with self.tiers.claim(key, manifest_check(self.models, chunker_version)) as (existing, _):
            if existing is not None:
                metrics.index_build("coalesced")  # another worker or host built it meanwhile
                return existing, False
            embedder = self.models.embedder_for(*profile(chunks))
            metrics.index_build("started")
            started = time.perf_counter()
            detector = self.models.instructions

            def build() -> DocumentIndex:
                built = DocumentIndex.embed(chunks, embedder, progress=progress, key=key)
                if detector is not None:  # while the sentences' vectors are in the embedder's cache
                    built.instructions = score_chunks(detector, chunks)
                release_memory()  # the batches' activations and token arrays are freed: give them back
                return built

            index = await self.runner.build(build, background=background)
            await self.tiers.save(key, index, chunker_version)
            self._built(key, index, embedder, started)
            return index, True

    def _built(self, key: str, index: DocumentIndex, embedder: Embedder, started: float) -> None:
        self.counters["builds"] += 1
        metrics.index_embedded(len(index), time.perf_counter() - started)
        metrics.observe_stage("index_build", time.perf_counter() - started)
        log.info("index.built", extra={"key": key, "chunks": len(index), "sentences": index.faiss.ntotal,
                                       "model": embedder.model_id,
                                       "seconds": round(time.perf_counter() - started, 2)})


def manifest_check(models: ModelRegistry, chunker_version: str) -> Callable[[Manifest], str | None]:
    """Why a stored index cannot serve (None when it can): another chunker version, or vectors of a
    model that is not loaded."""
    def check(manifest: Manifest) -> str | None:
        if manifest.get("chunker_version") != chunker_version:
            return f"chunker version {manifest.get('chunker_version')} != {chunker_version}"
        # the key names every model and rule; this guards the vectors: they must be a loaded model's
        try:
            embedder = models.embedder_by_id(str(manifest.get("model_id")))
        except ModelLoadError:
            return f"model {manifest.get('model_id')} is not loaded"
        if manifest.get("dimension") != embedder.dimension:
            return f"dimension {manifest.get('dimension')} != {embedder.dimension}"
        return None

    return check


def profile(chunks: Sequence[Chunk]) -> tuple[int, list[str], list[int]]:
    """What the embedder choice reads of a document: its chunk count, languages and lengths."""
    return len(chunks), [c.language for c in chunks], [len(c.text) for c in chunks]


def _live(pending: PendingBuild) -> Progress | None:
    """The starting call's progress, dropped at its first failure (the call has ended)."""
    if pending.progress is None:
        return None

    async def forward(done: float, total: float | None, message: str) -> None:
        callback = pending.progress
        if callback is None:
            return
        try:
            with anyio.fail_after(PROGRESS_TIMEOUT):
                await callback(done, total, f"background: {message}")
        except Exception:  # noqa: BLE001 - the client went away: stop telling it
            pending.progress = None

    return forward
