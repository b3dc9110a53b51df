"""Retrieval quality on long real filings: FinanceBench dev (40 questions over 12 PDFs), k=5.

    .venv/bin/python bench/financebench.py                    # reference + in-process modes, all docs
    .venv/bin/python bench/financebench.py --split dev        # tune here ...
    .venv/bin/python bench/financebench.py --split holdout    # ... and check here
    .venv/bin/python bench/financebench.py --mcp              # + retrieve_chunks over MCP (the published figure)
    .venv/bin/python bench/financebench.py --mcp --settled    # + the same questions once each index is complete
    .venv/bin/python bench/financebench.py --docs 3M_2022_10K,ULTABEAUTY_2023Q4_EARNINGS --per-doc
    .venv/bin/python bench/financebench.py --set dev2         # financebench-dev2: 30 questions, 23 other filings
    .venv/bin/python bench/financebench.py --modes hybrid --ranker a.json   # + a candidate learned ranker's row

A question is a hit when a returned result's pages include one of its 1-based evidence pages;
MRR uses the rank of the first such result (``../shared/corpus/qa/financebench-dev/README.md``).
Every row also gives the median and mean characters per returned result: a gain counts only
at no more text per result than the reference returns (~2,200 characters).

Rows:
  LangChain FAISS   the reference built by ``bench/_langchain_ref.py`` in this run (PyMuPDF
                    page text, RecursiveCharacterTextSplitter 2250/200, MiniLM, FAISS similarity)
  LangChain BM25    bm25s over the same splits
  server <mode>     the server's own code in process: processor registry -> chunk_document with
                    the service's chunk parameters -> DocumentIndex.embed -> search(mode=...), for
                    every value of ``SearchMode`` (new modes appear by themselves)
  MCP retrieve_chunks  (``--mcp``) a real server process, documents served on 127.0.0.1; every
                    question asked at once, so big documents answer from a partial index
  ... (complete index)  (``--settled``) the same questions again once the document's complete
                    index is built: what an agent's later calls on the document get

Re-runs are fast: parsed documents, embeddings and the reference indexes are cached under
bench/results/cache (keyed by content and code hashes; ``--no-cache`` bypasses it). Results
go to bench/results/financebench-*.json (question ids, ranks and pages; no question text).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # --code puts another checkout's mcp_server ahead of it

from bench.data import (  # noqa: E402
    QA,
    RESULTS,
    chars_per_result,
    hit_rate,
    jsonl,
    mrr,
    page_rank,
    percentile,
    qa_set,
)

FINANCEBENCH = QA / "financebench-dev"  # --set dev2 points it at financebench-dev2 (same format, no named file)
SETS = {"dev": "financebench-dev", "dev2": "financebench-dev2"}
CACHE = RESULTS / "cache"
K = 5
DEEP = 20  # hit@20 (a second search at top_k=20): the right page found at all, ranking vs recall
NAMED = "#named"  # suffix of a named question's id (questions_named.jsonl holds the same ids)
REPORTED_REFERENCE = (0.425, 0.322)  # the LangChain reference's hit@5 / MRR as first reported
GOAL = (0.65, 0.50)

# Documents, not questions, are split, so tuning on dev never sees a holdout page. Each half
# holds 10-K annual reports, a 10-Q and earnings material; ~20 questions each.
DEV = ["3M_2022_10K", "ADOBE_2022_10K", "BOEING_2022_10K", "BESTBUY_2024Q2_10Q",
       "AMCOR_2023Q4_EARNINGS", "JOHNSON_JOHNSON_2023_8K_dated-2023-08-30"]
HOLDOUT = ["AMCOR_2023_10K", "BESTBUY_2023_10K", "PFIZER_2021_10K", "Pfizer_2023Q2_10Q",
           "MGMRESORTS_2022Q4_EARNINGS", "ULTABEAUTY_2023Q4_EARNINGS"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Result:
    text: str
    pages: tuple[int, ...]


@dataclass(kw_only=True)
class Row:
    name: str
    ranks: dict[str, int | None] = field(default_factory=dict)  # question id -> 1-based rank of first hit
    ranks20: dict[str, int | None] = field(default_factory=dict)  # the same within DEEP results (recall)
    texts: dict[str, list[str]] = field(default_factory=dict)  # question id -> its results' texts (chars per result)
    templates: dict[str, list[bool | None]] = field(default_factory=dict)  # per result: a template passage?
    pages: dict[str, list[list[int]]] = field(default_factory=dict)  # question id -> pages per result
    doc_seconds: dict[str, float] = field(default_factory=dict)  # cold seconds per document
    notes: dict[str, str] = field(default_factory=dict)  # per document: errors, cache state
    latencies_ms: list[float] = field(default_factory=list)  # warm per-question latency

    def record(self, question: dict[str, Any], results: Sequence[Result], deep: Sequence[Result] | None = None,
               templates: Callable[[str], bool | None] = lambda _: None) -> None:
        results = list(results)[:K]
        gold = [e["page"] for e in question["evidence"]]
        self.ranks[question["id"]] = page_rank((r.pages for r in results), gold)
        if deep is not None:
            self.ranks20[question["id"]] = page_rank((r.pages for r in list(deep)[:DEEP]), gold)
        self.texts[question["id"]] = [r.text for r in results]
        self.templates[question["id"]] = [templates(r.text) for r in results]
        self.pages[question["id"]] = [list(r.pages) for r in results]

    def metrics(self, questions: Sequence[dict[str, Any]]) -> dict[str, float | None]:
        ids = [q["id"] for q in questions]
        ranks = [self.ranks.get(i) for i in ids]
        chars_median, chars_mean = chars_per_result([t for i in ids for t in self.texts.get(i, [])])
        flags = [f for i in ids for f in self.templates.get(i, []) if f is not None]
        deep = [self.ranks20.get(i) for i in ids if i in self.ranks20]
        return {"hit": hit_rate(ranks), "hit20": hit_rate(deep) if len(deep) == len(ids) else None,
                "mrr": mrr(ranks), "chars_median": chars_median, "chars_mean": chars_mean,
                "templates": sum(flags) / len(flags) if flags else None, "n": len(ranks)}


def doc_name(question: dict[str, Any]) -> str:
    return Path(question["doc"]).stem


def load_questions(split: str, docs: Sequence[str] = (), named: bool = False) -> list[dict[str, Any]]:
    """The split's questions; with ``named``, each followed by its named phrasing (id + NAMED).
    The dev/holdout split is financebench-dev's: another set has only ``all``."""
    questions = jsonl(FINANCEBENCH / "questions.jsonl")
    if named:
        phrased = {q["id"]: q for q in jsonl(FINANCEBENCH / "questions_named.jsonl")}
        questions = [p for q in questions for p in (q, {**phrased[q["id"]], "id": q["id"] + NAMED})]
    names = set(map(doc_name, questions))
    if FINANCEBENCH.name != SETS["dev"]:
        if split != "all":
            raise SystemExit(f"{FINANCEBENCH.name} has no dev/holdout split: use --split all")
    elif set(DEV) | set(HOLDOUT) != names or set(DEV) & set(HOLDOUT):
        raise SystemExit(f"the dev/holdout lists no longer partition the documents: {sorted(names)}")
    wanted = {"dev": set(DEV), "holdout": set(HOLDOUT), "all": names}[split]
    if docs:
        unknown = set(docs) - names
        if unknown:
            raise SystemExit(f"unknown documents {sorted(unknown)}; known: {sorted(names)}")
        wanted &= set(docs)
    return [q for q in questions if doc_name(q) in wanted]


def by_document(questions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        grouped.setdefault(doc_name(q), []).append(q)
    return grouped


CANDIDATE = "+candidate"  # a mode's suffix: searched with --ranker's model
CANDIDATE_RANKER: list[Any] = []


def search_modes() -> list[str]:
    """Every mode the index offers (``SearchMode`` as a Literal or an Enum)."""
    from mcp_server.retrieval.index import SearchMode

    values = typing.get_args(SearchMode)
    if not values and isinstance(SearchMode, type):
        values = tuple(m.value for m in SearchMode)  # type: ignore[attr-defined]
    return [str(v) for v in values]


# --- the LangChain reference ----------------------------------------------------------------
def reference_rows(grouped: dict[str, list[dict[str, Any]]], use_cache: bool) -> list[Row]:
    """The reference's inputs never change: with the cache, its results per question are saved
    beside its index and a re-run loads neither the index nor the model."""
    from bench._langchain_ref import build_reference, cache_folder, saved_timings

    faiss_row, bm25_row = Row(name="LangChain FAISS (reference)"), Row(name="LangChain BM25 (bm25s)")
    for name, questions in grouped.items():
        path = FINANCEBENCH / questions[0]["doc"]
        folder = cache_folder(CACHE / "langchain", path) if use_cache else None
        saved_file = folder / f"results-k{K}.json" if folder is not None else None
        saved = json.loads(saved_file.read_text()) if saved_file is not None and saved_file.exists() else {}
        keys = {q["id"]: hashlib.sha256(q["question"].encode()).hexdigest()[:16] for q in questions}
        timings = saved_timings(folder) if folder is not None else None
        cached = timings is not None and all(key in saved for key in keys.values())
        if not cached:
            ref = build_reference(path, cache_dir=CACHE / "langchain" if use_cache else None)
            timings = ref.timings
            for q in questions:
                started = time.perf_counter()
                found = ref.search(q["question"], K)
                faiss_row.latencies_ms.append((time.perf_counter() - started) * 1000)
                saved[keys[q["id"]]] = {"faiss": [[h.text, list(h.pages)] for h in found],
                                        "bm25": [[h.text, list(h.pages)] for h in ref.search_bm25(q["question"], K)]}
            if saved_file is not None:
                saved_file.write_text(json.dumps(saved))
        assert timings is not None
        for row, kind in ((faiss_row, "faiss"), (bm25_row, "bm25")):
            row.doc_seconds[name] = timings.total_s
            row.notes[name] = f"{timings.pages} pages, {timings.splits} splits" + (" (cached)" if cached else "")
            for q in questions:
                row.record(q, [Result(text=text, pages=tuple(pages)) for text, pages in saved[keys[q["id"]]][kind]])
    return [faiss_row, bm25_row]


# --- the server's pipeline in process -------------------------------------------------------
class ServerPipeline:
    """The server's stages, called as ``DocumentService`` calls them (see mcp_server/pipeline/service.py)."""

    def __init__(self, use_cache: bool) -> None:
        from bench._fbcache import EmbeddingStore, PickleCache, processing_fingerprint
        from mcp_server.core.settings import Settings
        from mcp_server.embedding.registry import ModelRegistry
        from mcp_server.processors import ProcessOptions

        self.settings = Settings(log_dir=None)
        self.options = ProcessOptions.from_settings(self.settings)
        started = time.perf_counter()
        self.models = ModelRegistry.load(self.settings)
        self.models_seconds = time.perf_counter() - started
        self.fingerprint = processing_fingerprint(self.options)
        self.processed = PickleCache(CACHE, "processed") if use_cache else None
        self.chunked = PickleCache(CACHE, "chunks") if use_cache else None
        self.store = EmbeddingStore(CACHE / "embeddings.sqlite") if use_cache else None
        self._wrapped: dict[int, Any] = {}
        self.ranker = None
        if getattr(self.settings, "learned_ranking", False):
            from mcp_server.retrieval.learned import bundled

            self.ranker = bundled()

    def embedder(self, inner: Any) -> Any:
        from bench._fbcache import CachedEmbedder

        if self.store is None:
            return inner
        return self._wrapped.setdefault(id(inner), CachedEmbedder(inner, self.store))

    def process(self, path: Path) -> tuple[Any, str, float, bool]:
        """(ProcessedDocument, its cache key, parse seconds, from cache)."""
        from mcp_server.core.models import FetchedDocument
        from mcp_server.processors import document_input, process_document

        data = path.read_bytes()
        key = f"{hashlib.sha256(data).hexdigest()[:24]}-{self.fingerprint}"
        if self.processed is not None and (hit := self.processed.get(key)) is not None:
            return hit[0], key, hit[1], True
        fetched = FetchedDocument(data=data, url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
        started = time.perf_counter()
        document = process_document(document_input(fetched), self.options)
        seconds = time.perf_counter() - started
        if self.processed is not None:
            self.processed.put(key, (document, seconds))
        return document, key, seconds, False

    def chunks(self, document: Any, document_key: str) -> tuple[list[Any], bool]:
        from bench._fbcache import chunking_fingerprint
        from mcp_server.chunking import chunk_document
        from mcp_server.pipeline.service import Chunking

        # The service's own rule, so a change to how it picks parameters is followed here.
        params = Chunking(self.models).params(document)
        key = f"{document_key}-{chunking_fingerprint(document_key, params, self.models.index_model_id)}"
        if self.chunked is not None and (hit := self.chunked.get(key)) is not None:
            return hit, True
        chunks = chunk_document(document, params, self.models.token_counter)
        if self.chunked is not None:
            self.chunked.put(key, chunks)
        return chunks, False

    def index(self, document: Any, document_key: str) -> tuple[Any, dict[str, Any]]:
        from mcp_server.retrieval.index import DocumentIndex

        t0 = time.perf_counter()
        chunks, chunks_cached = self.chunks(document, document_key)
        t1 = time.perf_counter()
        embedder = self.embedder(self.models.embedder_for(len(chunks)))
        calls, hits = getattr(embedder, "model_calls", 0), getattr(embedder, "disk_hits", 0)
        index = DocumentIndex.embed(chunks, embedder)
        t2 = time.perf_counter()
        return index, {"chunk_s": t1 - t0, "index_s": t2 - t1, "chunks": len(chunks),
                       "chunks_cached": chunks_cached, "vectors": int(index.faiss.ntotal),
                       "embedded": getattr(embedder, "model_calls", index.faiss.ntotal) - calls,
                       "disk_hits": getattr(embedder, "disk_hits", 0) - hits}

    def search(self, index: Any, question: str, mode: str, k: int = K) -> list[Result]:
        # as the manager embeds it (an older checkout embeds the question itself)
        embed_query = self.embedder(self.models.embedder_by_id(index.model_id)).embed_query
        query_vec = index.query_vector(question, embed_query) if hasattr(index, "query_vector") else \
            embed_query(question)
        # the learned ranker as the manager applies it (MCP_LEARNED_RANKING; absent in older checkouts)
        extra = {"ranker": self.ranker} if self.ranker is not None else {}
        # and the reranker (MCP_RERANKER) as the manager passes it
        if getattr(self.models, "reranker", None) is not None:
            extra["reranker"] = self.models.reranker
        if mode.endswith(CANDIDATE):  # --ranker: the candidate model instead of the bundled one
            mode, extra["ranker"] = mode.removesuffix(CANDIDATE), CANDIDATE_RANKER[0]
            if hasattr(extra["ranker"], "gate"):  # a gated model reads the question's vector
                extra["ranker"].vector = query_vec
        hits = index.search(query_vec, question, k, mode=mode, **extra)
        return [Result(text=h.text or h.chunk.text, pages=tuple(h.chunk.location.pages)) for h in hits]

    def template_test(self, path: Path) -> Callable[[str], bool | None]:
        """Whether a result's text is one of the document's template chunks (this checkout's
        ``text/templates.py``, so that every checkout is measured alike); None when the text
        is none of its chunks."""
        document, key, _, _ = self.process(path)
        chunks, _ = self.chunks(document, key)
        mask = _templates_module().template_mask([c.text for c in chunks])
        flags = {_norm(c.text): bool(m) for c, m in zip(chunks, mask, strict=True)}
        return lambda text: flags.get(_norm(text))


def _norm(text: str) -> str:
    return " ".join(text.split())


def _templates_module() -> Any:
    """``text/templates.py`` of this checkout, whichever ``mcp_server`` --code imports."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_templates", ROOT / "mcp_server/text/templates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TemplateTests = dict[str, Callable[[str], bool | None]]  # document name -> is this result text a template passage?


def template_tests(grouped: dict[str, list[dict[str, Any]]], use_cache: bool) -> TemplateTests:
    pipeline = ServerPipeline(use_cache)
    return {name: pipeline.template_test(FINANCEBENCH / qs[0]["doc"]) for name, qs in grouped.items()}


def server_rows(grouped: dict[str, list[dict[str, Any]]], modes: Sequence[str], use_cache: bool,
                log: Callable[[str], None], tests: TemplateTests) -> list[Row]:
    pipeline = ServerPipeline(use_cache)
    log(f"server models loaded in {pipeline.models_seconds:.1f}s")
    rows = {mode: Row(name=f"server {mode} (in process)") for mode in modes}
    for name, questions in grouped.items():
        document, key, parse_s, cached = pipeline.process(FINANCEBENCH / questions[0]["doc"])
        index, stats = pipeline.index(document, key)
        if hasattr(index, "named"):  # searched under its file name, as the server searches a URL
            index = index.named(questions[0]["doc"])
        note = (f"parse {parse_s:.1f}s{' (cached)' if cached else ''}, "
                f"chunk {stats['chunk_s']:.1f}s{' (cached)' if stats['chunks_cached'] else ''}, "
                f"index {stats['index_s']:.1f}s, {stats['chunks']} chunks, {stats['vectors']} vectors, "
                f"{stats['embedded']} embedded now")
        log(f"  {name}: {note}")
        is_template = tests[name] = pipeline.template_test(FINANCEBENCH / questions[0]["doc"])
        for mode, row in rows.items():
            # cold only when nothing came from the bench's caches
            if not cached and not stats["chunks_cached"] and not stats["disk_hits"]:
                row.doc_seconds[name] = parse_s + stats["chunk_s"] + stats["index_s"]
            row.notes[name] = note
            for q in questions:
                started = time.perf_counter()
                found = pipeline.search(index, q["question"], mode)
                row.latencies_ms.append((time.perf_counter() - started) * 1000)
                row.record(q, found, pipeline.search(index, q["question"], mode, DEEP), is_template)
    return list(rows.values())


# --- retrieve_chunks over MCP --------------------------------------------------------------
def mcp_rows(grouped: dict[str, list[dict[str, Any]]], parse_timeout: float | None, settled: bool,
             log: Callable[[str], None], tests: TemplateTests) -> list[Row]:
    import asyncio

    from bench._fbmcp import mcp_results

    found = asyncio.run(mcp_results(FINANCEBENCH / "docs", grouped, K, parse_timeout=parse_timeout, log=log,
                                    settled=settled, deep=DEEP))
    row = Row(name="MCP retrieve_chunks" + (" (first answers)" if settled else ""))
    row.doc_seconds = found["cold_s"]
    row.notes = {name: f"error: {message}" for name, message in found["errors"].items()}
    row.latencies_ms = found["warm_ms"]
    partial = found["partial"]
    log(f"answers from a partial index: {sum(partial.values())} of {sum(map(len, grouped.values()))} "
        f"({', '.join(f'{name} {count}' for name, count in partial.items()) or 'none'})")
    later = Row(name="MCP retrieve_chunks (complete index)", notes=dict(row.notes))
    for name, questions in grouped.items():
        for q in questions:
            deep = [Result(text=text, pages=pages) for text, pages in found["deep"].get(q["id"], [])]
            row.record(q, [Result(text=text, pages=pages) for text, pages in found["questions"][q["id"]]],
                       deep, tests.get(name, lambda _: None))
            if settled:
                later.record(q, [Result(text=text, pages=pages) for text, pages in found["settled"].get(q["id"], [])])
    return [row, later] if settled else [row]


# --- output ---------------------------------------------------------------------------------
def table(rows: Sequence[Row], questions: Sequence[dict[str, Any]]) -> str:
    """One line per row, or per row and phrasing when the named questions were asked too."""
    sets = {"": list(questions)}
    if any(q["id"].endswith(NAMED) for q in questions):
        sets = {" · plain": [q for q in questions if not q["id"].endswith(NAMED)],
                " · named": [q for q in questions if q["id"].endswith(NAMED)]}
    lines = [f"| row | hit@{K} | hit@{DEEP} | MRR | chars/result median | mean | template share of top {K} "
             "| cold s/doc median | query ms p50 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        for suffix, subset in sets.items():
            m = row.metrics(subset)
            cold = f"{statistics.median(row.doc_seconds.values()):.1f}" if row.doc_seconds else "–"
            query = f"{statistics.median(row.latencies_ms):.0f}" if row.latencies_ms else "–"
            hit20 = f"{m['hit20']:.3f}" if m["hit20"] is not None else "–"
            share = f"{m['templates']:.3f}" if m["templates"] is not None else "–"
            lines.append(f"| {row.name}{suffix} | {m['hit']:.3f} | {hit20} | {m['mrr']:.3f} | "
                         f"{m['chars_median']:,.0f} | {m['chars_mean']:,.0f} | {share} | {cold} | {query} |")
    return "\n".join(lines)


def per_doc_table(rows: Sequence[Row], grouped: dict[str, list[dict[str, Any]]]) -> str:
    import pymupdf

    head = "| document | pages | q | " + " | ".join(f"{r.name} hits / cold s" for r in rows) + " |"
    lines = [head, "| --- | ---: | ---: |" + " ---: |" * len(rows)]
    for name, questions in grouped.items():
        with pymupdf.open(FINANCEBENCH / questions[0]["doc"]) as pdf:
            pages = pdf.page_count
        cells = []
        for row in rows:
            hits = sum(row.ranks.get(q["id"]) is not None for q in questions)
            seconds = row.doc_seconds.get(name)
            cell = f"{hits} / {seconds:.1f}" if seconds is not None else f"{hits} / –"
            cells.append(cell + (" (error)" if row.notes.get(name, "").startswith("error") else ""))
        lines.append(f"| {name} | {pages} | {len(questions)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save(rows: Sequence[Row], questions: Sequence[dict[str, Any]], args: argparse.Namespace,
         seconds: float) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"financebench-{args.qa}-{args.split}-{stamp}.json"
    body = {
        "when": stamp, "set": FINANCEBENCH.name, "split": args.split, "docs": args.docs, "k": K,
        "seconds": round(seconds, 1),
        "rows": [{"name": r.name, **r.metrics(questions), "ranks": r.ranks, "pages": r.pages,
                  "doc_seconds": r.doc_seconds, "notes": r.notes,
                  "latency_ms_median": statistics.median(r.latencies_ms) if r.latencies_ms else None,
                  "latency_ms_p95": percentile(r.latencies_ms, 0.95) if r.latencies_ms else None}
                 for r in rows],
    }
    path.write_text(json.dumps(body, indent=1))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="qa", choices=sorted(SETS), default="dev",
                        help="the QA set: financebench-dev (default) or financebench-dev2")
    parser.add_argument("--split", choices=["dev", "holdout", "all"], default="all")
    parser.add_argument("--docs", default="", help="comma-separated document names (file stems) to keep")
    parser.add_argument("--modes", default="", help="comma-separated server modes (default: every SearchMode)")
    parser.add_argument("--named", action="store_true",
                        help="also ask each question as it names its document (questions_named.jsonl): "
                             "a plain and a named line per row")
    parser.add_argument("--no-reference", action="store_true", help="skip the LangChain rows")
    parser.add_argument("--no-inprocess", action="store_true", help="skip the in-process server rows")
    parser.add_argument("--per-doc", action="store_true", help="also print hits and cold seconds per document")
    parser.add_argument("--no-cache", action="store_true", help="parse, embed and build everything afresh")
    parser.add_argument("--mcp", action="store_true",
                        help="also measure retrieve_chunks over MCP on a real server (always cold: a fresh index)")
    parser.add_argument("--settled", action="store_true",
                        help="with --mcp: once a document's index is complete, ask its questions again "
                             "(a second row: the answers of later calls)")
    parser.add_argument("--parse-timeout", type=float, default=None,
                        help="the server's MCP_PARSE_TIMEOUT for --mcp (default: the server's own, 120 s)")
    parser.add_argument("--ranker", type=Path,
                        help="a candidate learned-ranker file (scripts/train_ranker.py --out; gated or not): "
                             "a 'hybrid+candidate' row beside the modes")
    parser.add_argument("--code", type=Path, help="import mcp_server from this folder (e.g. an export of main)")
    args = parser.parse_args()
    global FINANCEBENCH
    FINANCEBENCH = qa_set(SETS[args.qa])
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
        # the --mcp server process imports it too; PYTHONSAFEPATH keeps ``-m`` from putting the
        # worktree (its working directory) ahead of it
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.code.resolve()),
                                                                 os.environ.get("PYTHONPATH")]))
        os.environ["PYTHONSAFEPATH"] = "1"

    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    questions = load_questions(args.split, [d for d in args.docs.split(",") if d], named=args.named)
    grouped = by_document(questions)
    log(f"{len(questions)} questions over {len(grouped)} documents ({args.split})")
    modes = [m for m in args.modes.split(",") if m] or search_modes()
    if args.ranker is not None:
        sys.path.insert(0, str(ROOT / "scripts"))
        import ranker_gate

        CANDIDATE_RANKER.append(ranker_gate.load(args.ranker))
        modes.append("hybrid" + CANDIDATE)
    rows: list[Row] = []
    if not args.no_reference:
        rows += reference_rows(grouped, not args.no_cache)
        log("LangChain reference done")
    tests: TemplateTests = {}
    if not args.no_inprocess:
        rows += server_rows(grouped, modes, not args.no_cache, log, tests)
        log("in-process server rows done")
    if args.mcp:
        tests = tests or template_tests(grouped, not args.no_cache)
        rows += mcp_rows(grouped, args.parse_timeout, args.settled, log, tests)
        log("MCP row done")
    seconds = time.perf_counter() - started

    print(f"\n{FINANCEBENCH.name}, split {args.split}: {len(questions)} questions over {len(grouped)} PDFs, k={K}; "
          f"reported reference {REPORTED_REFERENCE[0]} / {REPORTED_REFERENCE[1]}, goal {GOAL[0]} / {GOAL[1]}\n")
    print(table(rows, questions))
    for row in rows:
        if row.name.startswith("MCP") and row.latencies_ms:
            print(f"\n{row.name}: warm calls p50 {statistics.median(row.latencies_ms):.0f} ms, "
                  f"p95 {percentile(row.latencies_ms, 0.95):.0f} ms over {len(row.latencies_ms)} questions; "
                  f"cold seconds per document: median {statistics.median(row.doc_seconds.values()):.1f}, "
                  f"max {max(row.doc_seconds.values()):.1f}")
    if args.per_doc:
        print()
        print(per_doc_table(rows, grouped))
    path = save(rows, questions, args, seconds)
    print(f"\n{seconds:.0f}s; details in {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
