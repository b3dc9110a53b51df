"""What a query on a partially indexed document searches (the first answers on a big document).

The document's base index has BM25 over every chunk and no vectors. A query adds vectors for its
candidates — its best BM25 chunks, the first chunks when fewer match — and, of each candidate,
only the few sentences whose shared query terms weigh the most (idf over the candidates,
``retrieval/focus.py``): a chunk's dense score is then the best cosine among those, as the
complete index weighs its candidates, at a fraction of the cost of embedding whole candidates
(bench/partial_quality.py measures both the quality and the cost).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import anyio
import numpy as np

from mcp_server.core.concurrency import Progress, off_loop
from mcp_server.core.models import Chunk
from mcp_server.core.settings import Settings
from mcp_server.embedding.runner import ModelRunner
from mcp_server.encoders.embedders import Embedder
from mcp_server.indexes.builds import IndexBuilder, PendingBuild
from mcp_server.retrieval.focus import SENTENCES_PER_CANDIDATE, best_sentences, topped_up
from mcp_server.retrieval.index import DocumentIndex, extended, reads_foreign, with_vectors
from mcp_server.retrieval.vectors import UnitSelect
from mcp_server.text.sentences import sentence_units

__all__ = [
    "PARTIAL_SECONDS", "SENTENCES_PER_CANDIDATE", "FirstAnswers", "answer_partial", "behind", "best_sentences",
    "complete_within", "evenly", "partial_candidates", "partial_view", "refined", "skimmed", "spread_order",
]

# (index, complete, timings in ms): what one query on a document whose complete index builds is answered from
Answer = tuple[DocumentIndex, bool, dict[str, float]]

# What a first answer may spend embedding, at the embedder's nominal speed (not the measured one:
# the same query on the same document embeds the same units whatever the machine's load): the
# units of the lowest-ranked candidates are left out past it. MiniLM's selected units fit well
# within it; the multilingual model, five times slower, keeps its first answers in seconds this way.
PARTIAL_SECONDS = 2.5

# A foreign question's wait for the complete build checks the build's pace this often (seconds),
# from this long on, and gives up when even this many times that pace would not end it in time.
WAIT_POLL, WAIT_OBSERVE, WAIT_SLACK = 0.5, 3.0, 1.5

# A foreign question's partial view spends this share of the budget its BM25 candidates leave on
# units spread evenly over the document, and the rest in rounds on the next unit of this share of
# the chunks that rank best so far (bench/HISTORY.md, 2026-11-29).
SPREAD_SHARE, ROUND_SHARE = 0.6, 0.3


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
    progress: Callable[[int, int, str], None] | None = None, foreign: bool = False, known: bool = False,
) -> DocumentIndex:
    """``base`` plus vectors for this query's candidates (``per_chunk`` 0: all their sentences;
    ``foreign``, a question in another language, whose words pick no candidate: ``skimmed``, with
    what the embedder holds when ``known``). Built afresh per query from the vector-less base (repeated sentences
    come from the embedder's cache), so every query's dense ranking holds its own candidates only."""
    # candidates by what the question asks: the words naming the document would fill them with
    # its cover page, certifications and exhibit index (retrieval/naming.py), and their
    # sentences by the question without a clause that only names the document
    max_chars = seconds * embedder.prior_chars_per_second
    if foreign and per_chunk > 0:
        return skimmed(base, query, embedder, candidates, max_chars, progress, free=known)
    chosen = partial_candidates(base, base.dense_query(query), candidates)
    ranks = {pos: rank for rank, pos in enumerate(chosen)}
    select = None
    if per_chunk > 0:
        select = best_sentences(base.asked(query), per_chunk, languages=base.languages, ranks=ranks,
                                max_chars=max_chars)
    return extended(base, chosen, embedder, progress=progress, select=select)


def skimmed(
    base: DocumentIndex, query: str, embedder: Embedder, candidates: int, max_chars: float,
    progress: Callable[[int, int, str], None] | None = None, *, free: bool = False,
) -> DocumentIndex:
    """The partial view for a question in another language than the document's, whose words
    choose few candidates: of the budget, the share of its words the document holds goes to its
    BM25 candidates (a name or a number they share: their best units, then whole in rank order);
    of the rest, ``SPREAD_SHARE`` to units spread evenly over the whole document (``evenly``), which
    the multilingual model ranks, and the last to more units of the chunks that rank best so far
    (``refined``) once every chunk has a unit; ``free``: with every unit the embedder already holds,
    from the build under way."""
    asked = base.asked(query)
    chosen = partial_candidates(base, base.dense_query(query), candidates)
    ranks = {pos: rank for rank, pos in enumerate(chosen)}
    lexical = base.lexical.coverage(asked) * max_chars
    matched = topped_up(best_sentences(asked, SENTENCES_PER_CANDIDATE, languages=base.languages, ranks=ranks,
                                       max_chars=lexical), ranks, lexical)
    order = spread_order(len(base), first=base.bm25_top(query, candidates))
    texts, owners = sentence_units(base.chunks)
    keep = np.zeros(len(texts), dtype=np.bool_)
    mine = np.flatnonzero(np.isin(owners, chosen))
    if len(mine):
        keep[mine] = matched([texts[i] for i in mine], owners[mine])
    left = max(max_chars - sum(len(texts[i]) for i in np.flatnonzero(keep)), 0.0)
    if free:
        keep |= embedder.known(texts)[0]
    # the rounds start once every chunk has a unit: a document the budget cannot cover is skimmed as before
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if len(owners) else np.zeros(0, np.int64)
    breadth = sum(len(texts[i]) for i in firsts if not keep[i])
    spread = evenly(order, min(left, max(left * SPREAD_SHARE, breadth)), lambda _texts, _owners: keep)(texts, owners)
    left -= sum(len(texts[i]) for i in np.flatnonzero(spread & ~keep))
    held = np.flatnonzero(spread)
    if not len(held):
        return base
    units: list[np.ndarray] = [held]
    blocks = [embedder.embed([texts[i] for i in held], progress=progress, unit="sentences")]
    if left > 0:
        query_vec = base.query_vector(query, embedder.embed_query)
        sims = np.full(len(texts), -np.inf, dtype=np.float32)
        sims[held] = blocks[0] @ query_vec
        more, vectors = refined(texts, owners, spread, sims, query_vec, left,
                                lambda batch: embedder.embed(batch, progress=progress, unit="sentences"))
        units.append(np.asarray(more, dtype=np.int64))
        blocks.append(vectors)
    unit_ids = np.concatenate(units)
    in_text = np.argsort(unit_ids, kind="stable")  # text order, as the view's units are read
    return with_vectors(base, np.concatenate(blocks)[in_text], owners[unit_ids[in_text]])


def refined(
    texts: list[str], owners: np.ndarray, held: np.ndarray, sims: np.ndarray, query_vec: np.ndarray,
    max_chars: float, embed: Callable[[list[str]], np.ndarray], *, share: float = ROUND_SHARE,
) -> tuple[list[int], np.ndarray]:
    """Spend ``max_chars`` in rounds, each on the next unit not ``held`` (in text order) of the
    ``share`` of the chunks whose best held unit is nearest ``query_vec``: a chunk whose first units
    come near the question gets more of its units looked at than one whose units do not. ``held``
    and ``sims`` (one per unit of ``texts``: its cosine with ``query_vec``, -inf while not held) are
    updated in place; returned: the units embedded here and their vectors, one row each (only
    those: a long document's unread units take no memory)."""
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])  # each chunk's units: starts[g]:ends[g]
    ends = np.r_[starts[1:], len(owners)]
    done: list[int] = []
    blocks: list[np.ndarray] = []

    def first_open(group: int) -> int:
        unit = int(starts[group])
        while unit < ends[group] and held[unit]:
            unit += 1
        return unit

    following = np.array([first_open(group) for group in range(len(starts))], dtype=np.int64)
    while max_chars > 0:
        open_ = np.flatnonzero(following < ends)
        if not len(open_):
            break
        best = np.maximum.reduceat(sims, starts)
        ranked = open_[np.argsort(-best[open_], kind="stable")][: max(1, math.ceil(len(open_) * share))]
        batch = []
        for group in ranked.tolist():
            unit = int(following[group])
            if len(texts[unit]) <= max_chars:
                batch.append(unit)
                max_chars -= len(texts[unit])
        if not batch:
            break
        vectors = embed([texts[i] for i in batch])
        sims[batch] = vectors @ query_vec
        held[batch] = True
        done += batch
        blocks.append(vectors)
        for group in ranked.tolist():
            following[group] = first_open(group)
    width = len(query_vec)
    return done, (np.concatenate(blocks) if blocks else np.zeros((0, width), dtype=np.float32))


def spread_order(n: int, *, first: Sequence[int] = ()) -> list[int]:
    """Positions ``0..n-1``, ``first`` first, then the rest so that every prefix covers the range
    evenly (0, n/2, n/4, 3n/4, ...)."""
    order = list(dict.fromkeys(pos for pos in first if 0 <= pos < n))
    seen = set(order)
    step = 1 << max(n - 1, 0).bit_length()
    while step:
        for pos in range(0, n, step):
            if pos not in seen:
                order.append(pos)
                seen.add(pos)
        step //= 2
    return order


def evenly(order: Sequence[int], max_chars: float, kept: UnitSelect | None = None) -> UnitSelect:
    """Units within ``max_chars`` spread over the chunks: every chunk's first unit (the chunks in
    ``order``), then every chunk's second, and so on; a unit past what is left is passed over for
    the shorter ones after it. The units ``kept`` selects come first, at no cost."""
    place = {pos: i for i, pos in enumerate(order)}

    def select(texts: list[str], owners: np.ndarray) -> np.ndarray:
        n = len(texts)
        keep = kept(texts, owners).copy() if kept is not None and n else np.zeros(n, dtype=np.bool_)
        if not n:
            return keep
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        nth = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))  # a unit's place in its chunk
        where = np.array([place.get(int(pos), len(place)) for pos in owners])
        spent = 0
        for i in np.lexsort((where, nth)).tolist():
            if not keep[i] and spent + len(texts[i]) <= max_chars:
                keep[i], spent = True, spent + len(texts[i])
        return keep

    return select


async def answer_partial(
    pending: PendingBuild, query: str, runner: ModelRunner, candidates: int, *, wait: float,
    stored: Callable[[str], DocumentIndex | None], progress: Progress | None = None, location: str = "",
    foreign: bool | None = None,
) -> Answer:
    """(index, complete, timings in ms) for ``query`` on a document whose complete index builds.

    A question in another language than the document's (``foreign``; found here when None) shares
    no words with it, so BM25 cannot choose its candidates: it waits up to ``wait`` seconds for the
    complete index (``stored`` finds it by key) when the build should end by then; else, or past
    the wait, its partial view (``skimmed``: units spread evenly over the document) also holds every
    sentence the build has embedded so far."""
    base = pending.base.named(location)
    timings: dict[str, float] = {}
    if foreign is None:
        foreign = await off_loop(reads_foreign, base, query)
    if foreign:
        started = time.perf_counter()
        complete = await complete_within(pending, wait, stored)
        timings["foreign_wait"] = round((time.perf_counter() - started) * 1000, 2)
        if complete is not None:
            return complete, True, timings
    report = runner.progress(progress)
    started = time.perf_counter()

    def answer() -> DocumentIndex:
        with pending.embedder.urgent():  # not behind the document's own background build
            # a foreign question's view holds what the build has embedded so far at no cost
            return partial_view(base, query, pending.embedder, candidates, progress=report, foreign=foreign,
                                known=foreign)

    view = await runner.run(answer)  # BM25 scoring and the embedding both stay off the loop
    timings["partial_embed"] = round((time.perf_counter() - started) * 1000, 2)
    return view, False, timings


async def complete_within(
    pending: PendingBuild, wait: float, stored: Callable[[str], DocumentIndex | None], *,
    poll: float = WAIT_POLL, observe: float = WAIT_OBSERVE,
) -> DocumentIndex | None:
    """The complete index of ``pending`` when its build is estimated to end within ``wait``
    seconds and does (None otherwise, or when the build failed). Every ``poll`` seconds, once it
    has watched the build move for ``observe`` seconds (its first batch, which may load the
    model, not counted), the wait ends early when the build's own pace says it cannot end in time
    (``behind``): the partial answer it would get past the wait comes now."""
    done, total = pending.embedded
    left = 1.0 - done / total if total else 1.0
    chars = left * sum(len(chunk.text) for chunk in pending.base.chunks)
    if wait <= 0 or pending.embedder.estimate_seconds(int(chars)) > wait:
        return None
    pending.wanted.set()  # a build held for its first call's answer starts now: this call waits for it
    deadline = anyio.current_time() + wait
    moved: tuple[float, int] | None = None  # when the build was first seen to move, and how far it was
    while not pending.done.is_set() and anyio.current_time() < deadline:
        with anyio.move_on_after(min(poll, deadline - anyio.current_time())):
            await pending.done.wait()
        now, (embedded, total) = anyio.current_time(), pending.embedded
        if moved is None:
            moved = (now, embedded) if embedded != done else None  # its pace counts from its first batch
        elif not pending.done.is_set() and now - moved[0] >= observe and behind(
                now - moved[0], embedded - moved[1], total - embedded, deadline - now):
            break
    return stored(pending.key) if pending.done.is_set() else None


def behind(elapsed: float, progressed: int, left: int, remaining: float) -> bool:
    """Whether a build that embedded ``progressed`` units in ``elapsed`` seconds cannot embed its
    ``left`` ones within ``remaining`` seconds, even ``WAIT_SLACK`` times faster (a build that has
    not moved yet, a model still loading, is not judged)."""
    return progressed > 0 and left * elapsed / progressed > remaining * WAIT_SLACK


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
            # passage ids of partial answers name the key the complete index will have
            base = await off_loop(_partial_base, chunks, embedder, key)
            lexical = round((time.perf_counter() - started) * 1000, 2)
            pending = PendingBuild(key=key, base=base, embedder=embedder, progress=progress, reserved=reserved)
            foreign = await off_loop(reads_foreign, base.named(location), query)
            # a question in another language waits for the build: it starts first, at once
            handed = foreign and self.builder.start(key, chunker_version, chunks, pending)
            index, complete, timings = await self.answer(pending, query, progress, location, foreign=foreign)
        except BaseException:
            if not handed:
                release(reserved)
            raise
        timings["bm25_index"] = lexical
        if not foreign:  # once this call's answer is out (ranked, flagged, sent), or ANSWER_WAIT at the latest
            self.builder.start(key, chunker_version, chunks, pending, hold=True)
        return index, complete, timings

    async def answer(
        self, pending: PendingBuild, query: str, progress: Progress | None, location: str = "",
        foreign: bool | None = None,
    ) -> Answer:
        return await answer_partial(pending, query, self.runner, self.candidates, wait=self.foreign_wait,
                                    stored=self.stored, progress=progress, location=location, foreign=foreign)


def _partial_base(chunks: list[Chunk], embedder: Embedder, key: str) -> DocumentIndex:
    """BM25 over every chunk, no vectors yet, and its template passages: every partial answer's
    fusion reads them, so they are found here, once, before the complete build takes the cores."""
    # the templates found now (from the words BM25 reads), shared by every partial index of the document
    return DocumentIndex.embed(chunks, embedder, only=(), key=key, templates_now=True)
