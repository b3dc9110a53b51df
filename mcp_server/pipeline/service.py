"""The document pipeline behind the tools: fetch -> process -> chunk -> index/search, with caches.

Its cache layers come from the worker's registry (``caches/registry.py``): downloads by URL,
processed documents by content key, indexes by content key in memory, on disk and in the shared
store (``indexes.IndexManager``). Keys of the last two hash the *bytes*, so one document at two
URLs is processed and embedded once, and new bytes at an old URL never meet stale results. A web
page's two views (its main content, the whole page) have two keys; every other format one,
whatever the view asked for. A fourth, small layer remembers failed parses per content key for
``failure_ttl`` seconds.

``retrieve`` goes bytes -> content key -> index: a document with an index in memory or on disk
is never parsed (nor its processed form decoded) again; only a missing index parses and chunks.

Freshness: a stale cached download is revalidated before use (``downloads.py``): a 304 keeps the
bytes, hence the content key and the index; new bytes are a new content key, parsed and indexed
anew. Parsing and the memory of failed parses are ``parsing.py``'s.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_server import metrics
from mcp_server.caches.layers import CacheLayer, cache_delete, cache_get
from mcp_server.caches.registry import CacheRegistry
from mcp_server.chunking import CHUNKER_VERSION, ChunkParams, chunk_document, chunk_params_for
from mcp_server.core.concurrency import Background, Progress, SmallestFirst, off_loop, start_thread
from mcp_server.core.errors import ValidationError
from mcp_server.core.failures import FailedParse
from mcp_server.core.models import Chunk, FetchedDocument, ProcessedDocument, SearchHit
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.embedding.runner import ModelRunner
from mcp_server.fetch import Fetcher
from mcp_server.indexes.manager import IndexManager, IndexView
from mcp_server.pipeline.downloads import Downloads, Known
from mcp_server.pipeline.flags import Flagger, Scorer
from mcp_server.pipeline.parsing import Parsing, Sniffing
from mcp_server.pipeline.style_sheets import with_style_sheets
from mcp_server.processors import DocumentInput, ProcessOptions, View
from mcp_server.processors.sandbox import ParserPool
from mcp_server.processors.sheet_search import search_spreadsheet
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.text.analysis import warm_analyzers

__all__ = ["DocumentService", "Indexed", "Processed", "Retrieval", "Source", "View"]

# Bump when processor output changes in a way cached documents and indexes must not survive.
# 2: invisible code points removed, hidden text flagged (processors/_visibility.py); 3: hidden text from
# style sheets, Word styles, cell colours, speaker notes, covered shapes, OCR layers (a document cached
# under 2 would lack those flags, and under drop still hold that text); 4: PDF text under a shape drawn
# after it; 5: more hidden text (HTML clip, scale(0), collapsed boxes, tiny and faint text; Word specVanish
# and theme colours; cells of 1 pt or a ";;;" format; slide runs of 1 pt, transparent or coloured like their
# fill) and more invisible code points (U+2061-2064, U+180E, U+034F, runs of variation selectors); 6: PDF text
# under an image drawn after it, a scan's OCR layer read against the scan, metadata fields' flags
PROCESSING_VERSION = "6"
# Bump when a web page's main content changes (the whole-page view keeps PROCESSING_VERSION's keys).
MAIN_CONTENT_VERSION = "2"  # 2: images' alt text


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """Which bytes answered: their hash and when they were downloaded and last confirmed."""

    sha256: str = ""
    fetched_at: float = 0.0  # epoch seconds
    validated_at: float = 0.0

    @classmethod
    def of(cls, fetched: FetchedDocument) -> Source:
        return cls(sha256=fetched.sha256, fetched_at=fetched.fetched_at, validated_at=fetched.validated_at)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Located:
    """A document downloaded and sniffed, not parsed: enough to look its index up."""

    input: DocumentInput
    content_key: str  # hash of bytes + processing options: the document and index cache key
    timings_ms: dict[str, float]
    source: Source
    options: ProcessOptions  # the service's, with the view asked for
    page_url: str = ""  # the address that answered (a web page's linked style sheets are resolved on it)


@dataclass(frozen=True, kw_only=True, slots=True)
class Processed:
    doc_type: str  # sniffed
    document: ProcessedDocument
    cached: bool  # parsed earlier: from the document cache
    content_key: str = ""  # hash of bytes + processing options (read cursors and quote indexes name it)
    source: Source = Source()


@dataclass(frozen=True, kw_only=True, slots=True)
class Indexed:
    """The document's index as one call found it: the manager's ``IndexView`` (the index and its
    status, carried as is to the tool result), the document's type and source, the stages' timings."""

    view: IndexView
    doc_type: str
    timings_ms: dict[str, float]
    source: Source = Source()


@dataclass(frozen=True, kw_only=True, slots=True)
class Retrieval:
    hits: list[SearchHit]
    indexed: Indexed  # the index searched and its status
    timings_ms: dict[str, float]  # the stages' and the search's


# Sniffed types remembered per content and transport headers: a warm call does not sniff again.


def _content_key(sha256: str, options: ProcessOptions, doc_type: str, view: View) -> str:
    parts = [PROCESSING_VERSION, sha256, options.ocr_languages, *_policy_parts(options)]
    if doc_type == "html" and view == "main":  # the whole page keeps the key it always had
        parts.append(f"html-main/{MAIN_CONTENT_VERSION}")
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


_DEFAULT_COVER_CHECK = ProcessOptions().pdf_cover_check_pages
_DEFAULT_LAYER_OCR = ProcessOptions().pdf_layer_ocr_pages


def _policy_parts(options: ProcessOptions) -> list[str]:
    """What a reader cannot see, kept unmarked or dropped, is other content (``flag`` keeps the plain key)."""
    parts = [] if options.hidden_text == "flag" else [f"hidden-{options.hidden_text}"]
    if options.pdf_cover_check_pages != _DEFAULT_COVER_CHECK:  # the default keeps the key
        parts.append(f"cover-{options.pdf_cover_check_pages}")
    if options.pdf_layer_ocr_pages != _DEFAULT_LAYER_OCR:
        parts.append(f"layer-{options.pdf_layer_ocr_pages}")
    return parts


def _wrong_type(url: str, doc_type: str, expect: Sequence[str], tool: str) -> ValidationError:
    # "ole" is let through for the processors' own message (encrypted); it is no format to ask for
    named = [t.upper() for t in expect if t != "ole"] or [t.upper() for t in expect]
    wanted = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
    return ValidationError(
        f"{tool or 'this tool'} needs a {wanted} document, but {url} is "
        f"{doc_type.upper() if doc_type != 'unknown' else 'of an unknown type'}; process_document handles every format",
        argument="document_url", document_type=doc_type,
    )


class Chunking:
    """A processed document cut for the model that will embed it: chunk parameters from its
    language's model window, token counts by that model's tokenizer, off the loop."""

    def __init__(self, models: ModelRegistry) -> None:
        self.models = models
        # one document at a time, smallest first: side by side on threads, a cold shelf's documents share
        # the GIL and all finish late together
        self._turns = SmallestFirst(1)

    def params(self, document: ProcessedDocument) -> ChunkParams:
        window = self.models.max_tokens_for(document.detected_language)
        return chunk_params_for(document.doc_type, len(document.content), window)

    def config(self) -> str:
        """Everything besides the content key and the models that decides the chunks, and that
        is known before parsing: the chunk parameters are a function of the processed content
        (a function of the content key: its language too) and of the model windows, so the
        windows stand for them."""
        multilingual = self.models.multilingual
        return f"window{self.models.max_tokens}" + (f"/{multilingual.max_tokens}" if multilingual else "")

    def chunk(self, document: ProcessedDocument) -> list[Chunk]:
        """Chunks measured with the tokenizer of the model that will embed them."""
        counter = self.models.token_counter_for(document.detected_language)
        return chunk_document(document, self.params(document), counter)

    async def chunked(self, document: ProcessedDocument) -> list[Chunk]:
        async with self._turns.slot(len(document.content)):
            return await off_loop(metrics.timed("chunk")(self.chunk), document)


class DocumentService:
    def __init__(
        self,
        settings: Settings,
        *,
        fetcher: Fetcher,
        parsers: ParserPool,
        models: ModelRegistry,
        indexes: IndexManager,
        caches: CacheRegistry | None = None, scorer: Scorer | None = None, background: Background | None = None,
    ) -> None:
        self.settings, self.fetcher, self.parsers = settings, fetcher, parsers
        self.background = background or Background()  # the lifespan's (running); inactive without one
        self.models, self.indexes = models, indexes
        self.chunking = Chunking(models)
        self.flagger = Flagger(scorer, threshold=settings.instruction_threshold, runner=indexes.runner)
        self.options = ProcessOptions.from_settings(settings)
        # the lifespan's registry (every layer of the worker, Redis swapped in); a test's own otherwise
        self.caches = caches or CacheRegistry(settings)
        self.downloads: CacheLayer[FetchedDocument] = self.caches["download"]
        self.documents: CacheLayer[ProcessedDocument] = self.caches["document"]
        self.failures: CacheLayer[FailedParse] = self.caches["failure"]
        self.budget = self.caches.budget
        self.sniffing = Sniffing()
        self._downloads = Downloads(self.downloads, settings.revalidate_after_s)
        self._parsing = Parsing(self.documents, self.failures, settings.failure_ttl)
        self.caches.own("download", self._downloads)  # what each URL answered goes with the downloads
        self.caches.own("index", indexes)  # memory, disk and the shared store

    @property
    def runner(self) -> ModelRunner:
        """Model work, and the text work around it (sniffing, chunking, windows): off the loop."""
        return self.indexes.runner

    @property
    def process_runs(self) -> int:
        """Documents actually parsed (tests use it to prove coalescing)."""
        return self._parsing.runs

    # --- stages -----------------------------------------------------------------------
    async def fetch(self, url: str) -> FetchedDocument:
        return await self._downloads.fetch(self.fetcher, url)

    async def drop(self, url: str) -> dict[str, int]:
        """Forget one URL's download (the next call downloads it again) and a remembered failed
        parse of its bytes; indexes stay, keyed by content: the same bytes find theirs again."""
        cached = await cache_get(self.downloads, url)
        removed = {"download": int(await self._downloads.drop(url)), "failure": 0}
        if cached is not None:  # under either view's key (a web page's main content has its own)
            for key in {self.content_key(cached), self.content_key(cached, "html", "main")}:
                removed["failure"] += int(await cache_delete(self.failures, key))
        return removed

    def content_key(self, fetched: FetchedDocument, doc_type: str = "", view: View = "full") -> str:
        """The document and index cache key of the bytes (and of a web page's view)."""
        return _content_key(fetched.sha256, self.options, doc_type, view)

    async def _locate(self, url: str, *, expect: Sequence[str] = (), tool: str = "", progress: Progress | None = None,
                      view: View | None = None, fetched: FetchedDocument | None = None) -> _Located:
        """Download (or take from the cache, or ``fetched``) and sniff; ``expect`` limits the types."""
        started = time.perf_counter()
        fetched = fetched or await self.fetch(url)
        timings = {"download": _ms(started)}
        inp = await self.sniffing.sniff(fetched)
        if expect and inp.doc_type not in expect:
            raise _wrong_type(url, inp.doc_type, expect, tool)
        if progress is not None:
            await progress(1, None, f"downloaded {len(fetched.data)} bytes")
        chosen = view or self.options.html_view  # the server's default (``html_view``) unless asked
        options = self.options if chosen == self.options.html_view else dataclasses.replace(
            self.options, html_view=chosen)
        content_key = self.content_key(fetched, inp.doc_type, chosen)
        self._downloads.learn(url, chosen, fetched, content_key, inp.doc_type)
        return _Located(input=inp, content_key=content_key, timings_ms=timings, source=Source.of(fetched),
                        page_url=fetched.final_url,
                        options=options)

    async def process(
        self, url: str, *, expect: Sequence[str] = (), tool: str = "", progress: Progress | None = None,
        view: View | None = None,
    ) -> Processed:
        """Download and (unless cached) parse in a worker process; ``expect`` limits the types;
        ``view``: a web page's main content or the whole page (default: the setting)."""
        located = await self._locate(url, expect=expect, tool=tool, progress=progress, view=view)
        document, cached = await self._parsing.parse(self.parsers, located.content_key, located.input,
                                                     located.options, self._sheets(located))
        if progress is not None:
            await progress(2, None, f"processed {len(document.content)} characters")
        return Processed(doc_type=located.input.doc_type, document=document, cached=cached,
                         content_key=located.content_key, source=located.source)

    def _sheets(self, located: _Located) -> Callable[[DocumentInput], Awaitable[DocumentInput]]:
        """Before a web page's parse: its linked style sheets (pipeline/style_sheets.py)."""
        return functools.partial(with_style_sheets, self.fetcher, page_url=located.page_url)

    def index_key(self, content_key: str) -> str:
        """The key of the index of that content: passage ids name it."""
        return self.indexes.index_key(content_key, CHUNKER_VERSION, self.chunking.config())

    async def chunks(self, url: str, *, view: View | None = None) -> tuple[Processed, list[Chunk]]:
        processed = await self.process(url, view=view)
        return processed, await self.chunking.chunked(processed.document)

    async def retrieve(
        self, url: str, query: str, *, top_k: int, neighbors: int = 0, progress: Progress | None = None,
        view: View | None = None,
    ) -> Retrieval:
        indexed = await self.index(url, query=query, progress=progress, view=view)
        found, timings = indexed.view, dict(indexed.timings_ms)
        # searched under its URL: the file name's words that name the document say which (naming.py)
        hits, search_timings = await self.indexes.searcher.search(found.index.named(url), query, top_k,
                                                                  neighbors=neighbors)
        timings.update(search_timings)
        metrics.retrieval(indexed.doc_type, warm=found.cached)
        return Retrieval(hits=hits, indexed=indexed, timings_ms=timings)

    async def index(self, url: str, *, query: str | None = None, progress: Progress | None = None,
                    view: View | None = None) -> Indexed:
        """The document's search index, bytes -> content key -> index: from memory or disk when
        known (no parse), else parsed, chunked and built. With ``query``, a big document may get a
        partial index (vectors for that query's candidates) while the complete one builds in the
        background; without, always the complete one. A known URL's stored index needs no download."""
        if isinstance(stored := await _stored(self, url, view or self.options.html_view), Indexed):
            return stored
        located = await self._locate(url, progress=progress, view=view, fetched=stored)
        timings = dict(located.timings_ms)

        async def make_chunks() -> Sequence[Chunk]:
            started = time.perf_counter()
            document, _ = await self._parsing.parse(self.parsers, located.content_key, located.input, located.options,
                                                    self._sheets(located))
            timings["process"] = _ms(started)
            # the analyzers BM25 will need load while the document is chunked
            start_thread(warm_analyzers, document.content, name="analyzers-warm-up")
            if progress is not None:
                await progress(2, None, f"processed {len(document.content)} characters")
            started = time.perf_counter()
            made = await self.chunking.chunked(document)
            timings["chunk"] = _ms(started)
            if progress is not None:
                await progress(3, None, f"chunked into {len(made)} chunks")
            return made

        connected = True  # a background build may outlive this call: its progress then goes nowhere

        async def embed_progress(done: float, total: float | None, message: str) -> None:
            if progress is not None and connected:
                await progress(3 + done, None if total is None else 3 + total,
                               message or f"embedded {done:g}/{total}")

        started = time.perf_counter()
        try:
            # found without chunks, or built from the chunks made here under the key's lock (ten identical
            # cold calls parse once): the pipeline hands its chunks down, indexes/ never calls back up
            async with self.indexes.opening(located.content_key, CHUNKER_VERSION, self.chunking.config(),
                                            query=query, progress=embed_progress, location=url) as found:
                opened: IndexView = found.view or await self.indexes.build(found, await make_chunks())
        finally:
            connected = False  # MCP allows progress only while the request runs
        timings["index"] = _ms(started)
        timings.update(opened.timings_ms)
        return Indexed(view=opened, doc_type=_doc_type(opened.index, located.input.doc_type), timings_ms=timings,
                       source=located.source)

    async def query_spreadsheet(self, url: str, search_value: str, column: str | None) -> dict[str, Any]:
        inp = await self.sniffing.sniff(await self.fetch(url))
        return await self.parsers.run(search_spreadsheet, inp, self.options, search_value, column)

    # --- housekeeping -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {
            **self.caches.stats(),
            "memory_budget": self.budget.stats() if self.budget is not None else None,
            "upload": self.fetcher.uploads.stats(),  # reported, never cleared here: uploads expire
        }

    async def clear(self) -> dict[str, Any]:
        return await self.caches.clear()


async def _stored(service: DocumentService, url: str, view: View) -> Indexed | FetchedDocument | None:
    """The index of what ``url`` held when last downloaded, if still fresh (or confirmed by a 304)
    and in memory or on disk: found without downloading, sniffing or parsing; else the new bytes a
    conditional request brought, or None."""
    started = time.perf_counter()
    known = await service._downloads.known(service.fetcher, url, view)
    if not isinstance(known, Known):
        return known
    found = await service.indexes.stored(known.content_key, CHUNKER_VERSION, service.chunking.config())
    if found is None:
        return None
    source = Source(sha256=known.sha256, fetched_at=known.fetched_at, validated_at=known.validated_at)
    return Indexed(view=found, doc_type=_doc_type(found.index, known.doc_type),
                   timings_ms={"download": 0.0, "index": _ms(started)}, source=source)


def _doc_type(index: DocumentIndex, sniffed: str) -> str:
    """The document's type: the processor's, which its chunks carry; the sniffed one when it has none."""
    return index.chunks[0].doc_type if index.chunks else sniffed
