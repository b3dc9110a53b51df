"""Quality of the first (partial) answer next to the complete index's: SQuAD-v2-small, FinanceBench
dev and XQuAD dev in twelve languages.

    .venv/bin/python bench/partial_quality.py [--candidates 10,20] [--per-chunk 0,3] [--k 5]
                                              [--only squad|financebench|xquad] [--cache /tmp/fb-processed]
                                              [--langs de,th] [--cross en] [--every 4] [--embedding-cache]

A big document's first retrieve_chunks searches a *partial* index: BM25 over every chunk, and
vectors only for the best-matching sentences of the query's candidates (``partial_view``: its
best BM25 chunks, the first chunks when fewer match); the complete index has vectors for every
sentence of every chunk. Each question gets the partial index the server would build for it
(the server's ``partial_view``), searched by the server's ``search``. Same chunks, same
embedder, same fusion for both rows.

* SQuAD: hit / strict hit / MRR at k (``bench/data.py``'s ``squad_scores``, as ``bench/squad.py``).
* FinanceBench dev (40 questions over 12 filings, ../shared): hit@k when a result's pages hold
  an evidence page, and MRR. The PDFs are parsed by the server's processor once; ``--cache``
  keeps the parsed documents between runs (a parse of the 3M 10-K takes minutes today).
* XQuAD dev: one document per language and its questions, scored as SQuAD; the multilingual
  model embeds them (``--embedding-cache`` keeps its vectors in bench/results/ between runs).

Every set also gets a "BM25 alone" row: the same chunks ranked by the complete index's BM25 only,
the floor a first answer must not fall below.

Goal: partial hit@5 within 0.05 of complete on both sets.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import (  # noqa: E402
    RESULTS,
    financebench_questions,
    hit_rate,
    mrr,
    page_rank,
    qa_set,
    squad_questions,
    squad_scores,
    table,
    xquad,
)
from bench.multilingual import LANGS as XQUAD_LANGS  # noqa: E402
from bench.multilingual import DiskCache  # noqa: E402
from mcp_server.chunking import chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import Chunk, FetchedDocument, ProcessedDocument  # noqa: E402
from mcp_server.core.settings import Settings  # noqa: E402
from mcp_server.embedding.registry import ModelRegistry  # noqa: E402
from mcp_server.indexes.partial import PARTIAL_SECONDS, SENTENCES_PER_CANDIDATE, partial_view  # noqa: E402
from mcp_server.processors import ProcessOptions, document_input, process_document  # noqa: E402
from mcp_server.retrieval.index import DocumentIndex, reads_foreign  # noqa: E402

# candidates, sentences per candidate (0 = all), embedding budget in seconds (partial.PARTIAL_SECONDS);
# (0, 0, 0) the complete index, (-1, 0, 0) its BM25
Config = tuple[int, int, float]


class Pair:
    """The complete and the BM25-only base index of one document; a partial config builds, per
    question, the view the server's first call on it would search."""

    def __init__(self, chunks: list[Chunk], models: ModelRegistry) -> None:
        self.embedder = models.embedder_for(len(chunks), [c.language for c in chunks], [len(c.text) for c in chunks])
        self.models = models
        self.complete = DocumentIndex.embed(chunks, self.embedder)
        self.base = DocumentIndex.embed(chunks, self.embedder, only=())
        self.coverages: dict[Config, list[float]] = {}

    def search(self, question: str, k: int, config: Config) -> list[Any]:
        index = self.complete
        if config not in (COMPLETE, BM25):  # the vectors come from the embedder's cache: quality is measured
            server = config[1] < 0  # as the server does: a foreign question's every sentence, within the budget
            foreign = server and reads_foreign(self.base, question)
            index = partial_view(self.base, question, self.embedder, config[0],
                                 per_chunk=SENTENCES_PER_CANDIDATE if server else config[1], seconds=config[2],
                                 foreign=foreign)
            self.coverages.setdefault(config, []).append(index.coverage)
        query_vec = self.embedder.embed_query(question)
        return index.search(query_vec, question, k, reranker=self.models.reranker,
                            mode="bm25" if config == BM25 else "hybrid")


COMPLETE: Config = (0, 0, 0.0)
BM25: Config = (-1, 0, 0.0)


def label(config: Config) -> str:
    if config == COMPLETE:
        return "complete"
    if config == BM25:
        return "BM25 alone"
    sentences = "the server's choice of" if config[1] < 0 else config[1] or "all"
    return f"partial: {config[0]} candidates, {sentences} sentences each, {config[2]:g} s"


def mean_coverage(pairs: dict[str, Pair], config: Config) -> float:
    values = [c for p in pairs.values() for c in p.coverages.get(config, [])]
    return sum(values) / len(values) if values else 1.0


Row = tuple[str, dict[str, float], float]  # index kind, scores, mean dense coverage


def squad_rows(models: ModelRegistry, configs: list[Config], k: int) -> list[Row]:
    questions = squad_questions()
    pairs: dict[str, Pair] = {}
    for doc in sorted({q["doc"] for q in questions}):
        text = (qa_set("squad-v2-small") / doc).read_text(encoding="utf-8")
        params = chunk_params_for("txt", len(text), models.max_tokens)
        chunks = chunk_document(ProcessedDocument(content=text, doc_type="txt"), params, models.token_counter)
        pairs[doc] = Pair(chunks, models)
    rows = []
    for config in configs:
        def retrieve(doc: str, question: str, n: int, config: Config = config) -> list[tuple[str, int, int]]:
            hits = pairs[doc].search(question, n, config)
            return [(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char) for h in hits]

        scores = squad_scores(questions, retrieve, k)
        rows.append((label(config), scores, mean_coverage(pairs, config)))
    chunk_counts = ", ".join(f"{len(p.complete)}" for p in pairs.values())
    print(f"SQuAD-v2-small: {len(questions)} questions, {len(pairs)} documents ({chunk_counts} chunks)")
    return rows


def xquad_rows(models: ModelRegistry, configs: list[Config], k: int, langs: list[str],
               cross: str | None = None, every: int = 1) -> list[Row]:
    """Each language's document with its own questions; with ``cross``, that language's questions
    (the same ones, translated) over every other document instead; ``every``: each such question only."""
    from mcp_server.text.language import detect_language

    rows = []
    for lang in langs:
        text, questions = xquad(lang)
        if cross:
            if cross == lang:
                continue
            questions = [{**gold, "question": asked["question"]}
                         for gold, asked in zip(questions, xquad(cross)[1], strict=True)]
        questions = questions[::every]
        document = ProcessedDocument(content=text, doc_type="txt", detected_language=detect_language(text))
        counter = models.token_counter_for(document.detected_language)
        params = chunk_params_for("txt", len(text), counter.max_tokens)
        started = time.perf_counter()
        pair = Pair(chunk_document(document, params, counter), models)
        print(f"  indexed xquad {lang} ({len(pair.complete)} chunks, {pair.embedder.model_id}) in "
              f"{time.perf_counter() - started:.1f}s", flush=True)
        for config in configs:
            def retrieve(doc: str, question: str, n: int, config: Config = config,
                         pair: Pair = pair) -> list[tuple[str, int, int]]:
                hits = pair.search(question, n, config)
                return [(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char) for h in hits]

            scores = squad_scores(questions, retrieve, k)
            name = f"{label(config)} [{lang}{f', {cross} questions' if cross else ''}]"
            rows.append((name, scores, mean_coverage({lang: pair}, config)))
    return rows


def parsed(path: Path, settings: Settings, cache: Path | None) -> ProcessedDocument:
    stored = cache / f"{path.name}.pickle" if cache else None
    if stored is not None and stored.exists():
        with stored.open("rb") as fh:  # our own cache file, written below
            return pickle.load(fh)  # type: ignore[no-any-return]
    started = time.perf_counter()
    fetched = FetchedDocument(data=path.read_bytes(), url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
    document = process_document(document_input(fetched), ProcessOptions.from_settings(settings))
    print(f"  parsed {path.name} in {time.perf_counter() - started:.1f}s", flush=True)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        with stored.open("wb") as fh:
            pickle.dump(document, fh)
    return document


def financebench_rows(models: ModelRegistry, configs: list[Config], k: int, cache: Path | None) -> list[Row]:
    settings = Settings(log_dir=None)
    questions = financebench_questions()
    pairs: dict[str, Pair] = {}
    for doc in sorted({q["doc"] for q in questions}):
        document = parsed(qa_set("financebench-dev") / doc, settings, cache)
        params = chunk_params_for(document.doc_type, len(document.content), models.max_tokens)
        started = time.perf_counter()
        pairs[doc] = Pair(chunk_document(document, params, models.token_counter), models)
        print(f"  indexed {doc} ({len(pairs[doc].complete)} chunks) in {time.perf_counter() - started:.1f}s",
              flush=True)
    rows = []
    for config in configs:
        ranks = [page_rank((h.chunk.location.pages for h in pairs[q["doc"]].search(q["question"], k, config)),
                           (e["page"] for e in q["evidence"])) for q in questions]
        rows.append((label(config), {"hit": hit_rate(ranks), "mrr": mrr(ranks)}, mean_coverage(pairs, config)))
    print(f"FinanceBench dev: {len(questions)} questions, {len(pairs)} documents")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Settings(_env_file=None)
    parser.add_argument("--candidates", default=str(defaults.progressive_candidates),
                        help="comma-separated candidate counts to measure (the server's setting by default)")
    parser.add_argument("--per-chunk", default=str(SENTENCES_PER_CANDIDATE),
                        help="comma-separated sentences per candidate (0 = all of them; -1 = the server's choice: "
                        "3, and all within the budget for a question in another language than the document's)")
    parser.add_argument("--seconds", default=str(PARTIAL_SECONDS),
                        help="comma-separated embedding budgets of a first answer (s at the nominal speed)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--only", choices=["squad", "financebench", "xquad"])
    parser.add_argument("--cache", type=Path, help="folder keeping parsed FinanceBench documents between runs")
    parser.add_argument("--langs", default=",".join(XQUAD_LANGS), help="XQuAD languages (comma-separated)")
    parser.add_argument("--cross", help="XQuAD: this language's questions over the other documents")
    parser.add_argument("--every", type=int, default=1, help="XQuAD: every n-th question only (1: all 632)")
    parser.add_argument("--embedding-cache", action="store_true",
                        help="keep the vectors in bench/results/ between runs (tuning only)")
    args = parser.parse_args()
    for name in ("squad-v2-small", "financebench-dev", "xquad-dev"):
        qa_set(name)
    configs = [COMPLETE, BM25] + [(int(c), int(p), float(s)) for c in args.candidates.split(",")
                                  for p in args.per_chunk.split(",") for s in args.seconds.split(",")]
    models = ModelRegistry.load(Settings(log_dir=None))
    caches = [DiskCache(e, RESULTS / f"embcache-{e.model_id.replace('/', '_')}.pkl")
              for e in models.embedders] if args.embedding_cache else []
    measured: list[tuple[str, str, dict[str, float], float]] = []
    if args.only in (None, "squad"):
        measured += [("SQuAD-v2-small", *row) for row in squad_rows(models, configs, args.k)]
    if args.only in (None, "financebench"):
        measured += [("FinanceBench dev", *row) for row in financebench_rows(models, configs, args.k, args.cache)]
    if args.only in (None, "xquad"):
        langs = [lang for lang in args.langs.split(",") if lang]
        rows = xquad_rows(models, configs, args.k, langs, args.cross, max(1, args.every))
        measured += [("XQuAD dev", *row) for row in rows]
    for cache in caches:
        cache.save()
    print(f"\nfirst (partial) answers vs the complete index, k={args.k}; the server's default is "
          f"{defaults.progressive_candidates} candidates, {SENTENCES_PER_CANDIDATE} sentences each\n")
    print(table(["set", "index", "mean dense coverage", "hit@k", "strict", "MRR"], (
        [name, kind, f"{coverage:.3f}", f"{scores['hit']:.3f}",
         f"{scores['strict']:.3f}" if "strict" in scores else "–", f"{scores['mrr']:.3f}"]
        for name, kind, scores, coverage in measured), "llrrrr"))


if __name__ == "__main__":
    main()
