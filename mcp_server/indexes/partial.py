"""What a query on a partially indexed document searches (the first answers on a big document).

The document's base index has BM25 over every chunk and no vectors. A query adds vectors for its
candidates — its best BM25 chunks, the first chunks when fewer match — and, of each candidate,
only the few sentences whose shared query terms weigh the most (idf over the candidates,
``retrieval/focus.py``): a chunk's dense score is then the best cosine among those, as the
complete index weighs its candidates, at a fraction of the cost of embedding whole candidates
(bench/partial_quality.py measures both the quality and the cost).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from mcp_server.core.concurrency import Progress, off_loop
from mcp_server.core.models import Chunk
from mcp_server.core.settings import Settings
from mcp_server.embedding.runner import ModelRunner
from mcp_server.encoders.embedders import Embedder
from mcp_server.indexes.builds import IndexBuilder, PendingBuild
from mcp_server.retrieval.focus import SENTENCES_PER_CANDIDATE, best_sentences, topped_up
from mcp_server.retrieval.index import DocumentIndex, extended, reads_foreign, with_known

__all__ = [
    "PARTIAL_SECONDS", "SENTENCES_PER_CANDIDATE", "FirstAnswers", "answer_partial", "best_sentences",
    "partial_candidates", "partial_view",
]

# (index, complete, timings in ms): what one query on a document whose complete index builds is answered from
Answer = tuple[DocumentIndex, bool, dict[str, float]]

# What a first answer may spend embedding, at the embedder's nominal speed (not the measured one:
# the same query on the same document embeds the same units whatever the machine's load): the
# units of the lowest-ranked candidates are left out past it. MiniLM's selected units fit well
# within it; the multilingual model, five times slower, keeps its first answers in seconds this way.
PARTIAL_SECONDS = 2.5

def partial_candidates(index: DocumentIndex, query: str, n: int) -> list[int]:
    """The chunks a partial answer embeds for ``query``: its ``n`` best BM25 matches; when fewer
    chunks match, the first chunks fill up (a title or summary is the best guess without a
    match). Filling always would put unrelated first chunks into every query's dense ranking."""
    best = index.bm25_top(query, n)
    chosen = set(best)
    fill = [pos for pos in range(min(n, len(index))) if pos not in chosen][: n - len(best)]
    return best + fill


def partial_view(
    base: DocumentIndex, query: str, embedder: Embedder, candidates: int, *,
    per_chunk: int = SENTENCES_PER_CANDIDATE, seconds: float = PARTIAL_SECONDS,
    progress: Callable[[int, int, str], None] | None = None, foreign: bool = False,
) -> DocumentIndex:
    """``base`` plus vectors for this query's candidates (``per_chunk`` 0: all their sentences;
    ``foreign``, a question in another language, whose words pick no sentence: the budget left
    embeds its best candidates whole). Built afresh per query from the vector-less base (repeated sentences
    come from the embedder's cache), so every query's dense ranking holds its own candidates only."""
    # candidates by what the question asks: the words naming the document would fill them with
    # its cover page, certifications and exhibit index (retrieval/naming.py), and their
    # sentences by the question without a clause that only names the document
    chosen = partial_candidates(base, base.dense_query(query), candidates)
    ranks, max_chars = {pos: rank for rank, pos in enumerate(chosen)}, seconds * embedder.prior_chars_per_second
    select = None
    if per_chunk > 0:
        select = best_sentences(base.asked(query), per_chunk, languages=base.languages, ranks=ranks,
                                max_chars=max_chars)
        if foreign:
            select = topped_up(select, ranks, max_chars)
    return extended(base, chosen, embedder, progress=progress, select=select)


async def answer_partial(
    pending: PendingBuild, query: str, runner: ModelRunner, candidates: int, *, wait: float,
    stored: Callable[[str], DocumentIndex | None], progress: Progress | None = None, location: str = "",
    foreign: bool | None = None,
) -> Answer:
    """(index, complete, timings in ms) for ``query`` on a document whose complete index builds.

    A question in another language than the document's (``foreign``; found here when None) shares
    no words with it, so BM25 cannot choose its candidates: it waits up to ``wait`` seconds for the
    complete index (``stored`` finds it by key) when the build should end by then; else, or past
    the wait, its partial view also holds every sentence the build has embedded so far."""
    base = pending.base.named(location)
    timings: dict[str, float] = {}
    if foreign is None:
        foreign = await off_loop(reads_foreign, base, query)
    if foreign:
        started = time.perf_counter()
        complete = await _complete_within(pending, wait, stored)
        timings["foreign_wait"] = round((time.perf_counter() - started) * 1000, 2)
        if complete is not None:
            return complete, True, timings
    report = runner.progress(progress)
    started = time.perf_counter()

    def answer() -> DocumentIndex:
        with pending.embedder.urgent():  # not behind the document's own background build
            view = partial_view(base, query, pending.embedder, candidates, progress=report, foreign=foreign)
        # what the build has embedded of the chunks BM25 could not choose costs nothing
        return with_known(view, pending.embedder) if foreign else view

    view = await runner.run(answer)  # BM25 scoring and the embedding both stay off the loop
    timings["partial_embed"] = round((time.perf_counter() - started) * 1000, 2)
    return view, False, timings


async def _complete_within(
    pending: PendingBuild, wait: float, stored: Callable[[str], DocumentIndex | None],
) -> DocumentIndex | None:
    """The complete index of ``pending`` when its build is estimated to end within ``wait``
    seconds and does (None otherwise, or when the build failed)."""
    done, total = pending.embedded
    left = 1.0 - done / total if total else 1.0
    chars = left * sum(len(chunk.text) for chunk in pending.base.chunks)
    if wait <= 0 or pending.embedder.estimate_seconds(int(chars)) > wait:
        return None
    with anyio.move_on_after(wait):
        await pending.done.wait()
    return stored(pending.key) if pending.done.is_set() else None


class FirstAnswers:
    """The first answers on a big document: when its complete build is estimated past
    ``progressive_budget`` seconds, a vector-less base (BM25 over every chunk), the complete build
    started in the background (``IndexBuilder.start``), and each query's partial view until it ends.
    The manager calls it under the key's lock, with the chunks the pipeline made."""

    def __init__(self, settings: Settings, runner: ModelRunner, builder: IndexBuilder,
                 stored: Callable[[str], DocumentIndex | None]) -> None:
        self.runner, self.builder, self.stored = runner, builder, stored  # ``stored``: the memory layer's get
        self.budget = settings.progressive_budget
        self.candidates = settings.progressive_candidates
        self.foreign_wait = settings.progressive_foreign_wait

    def build_now(self, chunks: list[Chunk], embedder: Embedder) -> bool:
        """Build completely in the call when there is no background runner or the build is
        estimated within the budget. (A partial answer embeds a few sentences per candidate, so
        it is the cheaper first answer for any document that misses the budget.)"""
        if not self.builder.background or not chunks:
            return True
        return embedder.estimate_seconds(sum(len(chunk.text) for chunk in chunks)) <= self.budget

    async def start(
        self, key: str, chunker_version: str, chunks: list[Chunk], embedder: Embedder, query: str, *,
        progress: Progress | None, location: str, reserved: int, release: Callable[[int], None],
    ) -> Answer:
        """The first answer to ``query``, and the complete build started; ``reserved`` bytes of the
        memory budget go to the build, or back (``release``) when it cannot start."""
        # BM25 over every chunk, no vectors yet: a second or so for a 3 MB book, off the loop
        started = time.perf_counter()
        handed = False  # whether the build owns ``reserved`` (it gives it back when it ends)
        try:
            base = await off_loop(_partial_base, chunks, embedder)
            base.key = key  # passage ids of partial answers name the key the complete index will have
            lexical = round((time.perf_counter() - started) * 1000, 2)
            pending = PendingBuild(key=key, base=base, embedder=embedder, progress=progress, reserved=reserved)
            foreign = await off_loop(reads_foreign, base.named(location), query)
            # a question in another language waits for the build: it starts first
            handed = foreign and self.builder.start(key, chunker_version, chunks, pending)
            index, complete, timings = await self.answer(pending, query, progress, location, foreign=foreign)
        except BaseException:
            if not handed:
                release(reserved)
            raise
        timings["bm25_index"] = lexical
        if not foreign:
            self.builder.start(key, chunker_version, chunks, pending)
        return index, complete, timings

    async def answer(
        self, pending: PendingBuild, query: str, progress: Progress | None, location: str = "",
        foreign: bool | None = None,
    ) -> Answer:
        return await answer_partial(pending, query, self.runner, self.candidates, wait=self.foreign_wait,
                                    stored=self.stored, progress=progress, location=location, foreign=foreign)


def _partial_base(chunks: list[Chunk], embedder: Embedder) -> DocumentIndex:
    """BM25 over every chunk, no vectors yet, and its template passages: every partial answer's
    fusion reads them, so they are found here, once, before the complete build takes the cores."""
    base = DocumentIndex.embed(chunks, embedder, only=())
    base.templates  # noqa: B018 - found now, shared by every partial index of the document
    return base
