"""Retrieval quality on SQuAD-v2-small (293 answerable questions over 2 documents), k=5.

    .venv/bin/python bench/squad.py [--sizes 600,800,1000,1200] [--k 5] [--rrf-k 60]

Metrics per (chunk size, mode):
  hit     a returned chunk contains one of the gold answer strings
  strict  ... and that chunk overlaps the gold paragraph [paragraph_char_start, paragraph_char_end)
  MRR     1 / rank of the first chunk counted by ``hit`` (0 when none)

Modes: dense (sentence-MaxSim: a chunk scores as its best sentence), bm25 (bm25s only), hybrid
(reciprocal rank fusion), and hybrid+rerank when a cross-encoder loads (offline there is none:
the row says n/a). Every mode runs the same relevance-preserving diversity pass as the server.

``evaluate`` takes any ``retrieve(doc_path, question, k) -> [(text, start_char, end_char)]``
callable, so an MCP-tool-driven retriever can be measured with the same code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a benchmark must never wait on a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from mcp_server.chunking import chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import Chunk, ChunkLocation, ProcessedDocument  # noqa: E402
from mcp_server.core.settings import Settings  # noqa: E402
from mcp_server.retrieval import ranking  # noqa: E402
from mcp_server.retrieval.index import DocumentIndex  # noqa: E402
from mcp_server.retrieval.models import ModelRegistry  # noqa: E402

SQUAD = Path(os.environ.get("RAG_CORPUS_DIR", ROOT.parent / "shared" / "corpus")) / "qa" / "squad-v2-small"
REFERENCES = {  # from the issue: hit / strict / MRR at k=5
    "LangChain FAISS similarity": (0.952, 0.918, 0.829),
    "Okapi BM25": (0.980, 0.952, 0.858),
    "seed v2.1": (0.812, None, 0.437),
    "goal": (0.99, 0.97, 0.90),
}

Retrieved = list[tuple[str, int, int]]
Retrieve = Callable[[str, str, int], Retrieved]


def load_questions(path: Path = SQUAD / "questions.jsonl") -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if not r.get("is_impossible") and r.get("answers")]


def evaluate(questions: Sequence[dict[str, Any]], retrieve: Retrieve, k: int = 5) -> dict[str, float]:
    hit = strict = 0
    rr = 0.0
    for q in questions:
        answers = {a["text"] for a in q["answers"]}
        lo, hi = q["paragraph_char_start"], q["paragraph_char_end"]
        results = retrieve(q["doc"], q["question"], k)[:k]
        first = next((i for i, (text, _, _) in enumerate(results) if any(a in text for a in answers)), None)
        if first is not None:
            hit += 1
            rr += 1.0 / (first + 1)
        if any(any(a in text for a in answers) and start < hi and end > lo for text, start, end in results):
            strict += 1
    n = len(questions)
    return {"hit": hit / n, "strict": strict / n, "mrr": rr / n, "n": n}


def paragraph_chunks(text: str) -> list[Chunk]:
    """One chunk per blank-line paragraph: the reference row showing what alignment is worth."""
    chunks, pos = [], 0
    for part in text.split("\n\n"):
        if part.strip():
            chunks.append(Chunk(
                text=part, chunk_index=len(chunks), total_chunks=0, token_count=0, importance_score=0.5,
                content_type="text", doc_type="txt", location=ChunkLocation(start_char=pos, end_char=pos + len(part)),
            ))
        pos += len(part) + 2
    return chunks


class LocalRetriever:
    """Chunks each document with the server's chunker (size None = its default, "para" = one
    chunk per paragraph) and searches a ``DocumentIndex`` as the server does."""

    def __init__(self, models: ModelRegistry, size: int | str | None, mode: str, rerank: bool) -> None:
        self.models, self.size, self.mode, self.rerank = models, size, mode, rerank
        self.indexes: dict[str, DocumentIndex] = {}
        self.search_seconds: list[float] = []

    def index(self, doc: str) -> DocumentIndex:
        if doc not in self.indexes:
            text = (SQUAD / doc).read_text(encoding="utf-8")
            if self.size == "para":
                chunks = paragraph_chunks(text)
            else:
                processed = ProcessedDocument(content=text, doc_type="txt")
                counter = self.models.token_counter
                size = self.size if isinstance(self.size, int) else None
                params = chunk_params_for("txt", len(text), counter.max_tokens, size_override=size)
                chunks = chunk_document(processed, params, counter)
            # the server's path: sentence vectors, a chunk scores as its best sentence
            self.indexes[doc] = DocumentIndex.embed(chunks, self.models.embedder_for(len(chunks)))
        return self.indexes[doc]

    def __call__(self, doc: str, question: str, k: int) -> Retrieved:
        idx = self.index(doc)
        started = time.perf_counter()
        query_vec = self.models.embedder_by_id(idx.model_id).embed_query(question)
        hits = idx.search(query_vec, question, k, mode=self.mode,  # type: ignore[arg-type]
                          reranker=self.models.reranker if self.rerank else None)
        self.search_seconds.append(time.perf_counter() - started)
        return [(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char) for h in hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0,600,800,1000,1500,para",
                        help="chunk sizes in characters; 0 = the chunker's default, para = one per paragraph")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rrf-k", type=int, default=ranking.RRF_K)
    args = parser.parse_args()
    if not SQUAD.is_dir():  # the QA sets are not carried in the repository (tests/corpus/README.md)
        raise SystemExit(f"QA set squad-v2-small not found at {SQUAD}: set RAG_CORPUS_DIR to a corpus "
                         "folder holding qa/squad-v2-small")
    ranking.RRF_K = args.rrf_k

    started = time.perf_counter()
    models = ModelRegistry.load(Settings())
    print(f"models loaded in {time.perf_counter() - started:.1f}s: "
          f"{json.dumps(models.health()['roles'], indent=None)[:400]}")
    questions = load_questions()
    modes = [("dense", False), ("bm25", False), ("hybrid", False), ("hybrid+rerank", True)]
    print(f"\nSQuAD-v2-small, {len(questions)} answerable questions, k={args.k}, RRF k={args.rrf_k}\n")
    print(f"{'size':>6} {'chunks':>7} {'mode':<14} {'hit':>6} {'strict':>7} {'MRR':>6} {'ms/query':>9}")
    for size_text in args.sizes.split(","):
        size: int | str | None = size_text if size_text == "para" else (int(size_text) or None)
        shared: dict[str, DocumentIndex] = {}
        for mode, rerank in modes:
            if rerank and not models.rerank_available:
                print(f"{size or 'dflt':>6} {'':>7} {mode:<14} {'n/a (no cross-encoder loaded)':>30}")
                continue
            retriever = LocalRetriever(models, size, mode.split("+")[0], rerank)
            retriever.indexes = shared  # same chunks and vectors for every mode
            result = evaluate(questions, retriever, args.k)
            n_chunks = sum(len(i) for i in shared.values())
            ms = statistics.median(retriever.search_seconds) * 1000
            print(f"{size or 'dflt':>6} {n_chunks:>7} {mode:<14} {result['hit']:>6.3f} "
                  f"{result['strict']:>7.3f} {result['mrr']:>6.3f} {ms:>9.1f}")
    print()
    for name, (h, s, m) in REFERENCES.items():
        strict = "–" if s is None else f"{s:.3f}"
        print(f"{'':>6} {'':>7} {name[:14]:<14} {h:>6.3f} {strict:>7} {m:>6.3f}")


if __name__ == "__main__":
    main()
