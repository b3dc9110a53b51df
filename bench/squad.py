"""Retrieval quality on SQuAD-v2-small (293 answerable questions over 2 documents), k=5.

    .venv/bin/python bench/squad.py [--sizes 600,800,1000,1200] [--k 5] [--rrf-k 60]
    .venv/bin/python bench/squad.py --sizes 0 --ranker a.json   # + a candidate learned ranker's row

Metrics per (chunk size, mode):
  hit     a returned chunk contains one of the gold answer strings
  strict  ... and that chunk overlaps the gold paragraph [paragraph_char_start, paragraph_char_end)
  MRR     1 / rank of the first chunk counted by ``hit`` (0 when none)

Modes: dense (sentence-MaxSim: a chunk scores as its best sentence), bm25 (bm25s only), hybrid
(reciprocal rank fusion), hybrid+learned (its head ordered by the learned ranker,
``retrieval/learned.py``), and hybrid+rerank when a cross-encoder loads (offline there is none:
the row says n/a). Every mode runs the same relevance-preserving diversity pass as the server.

The scores are ``bench/data.py``'s ``squad_scores``, which takes any ``retrieve(doc_path,
question, k) -> [(text, start_char, end_char)]`` callable (``bench/squad_mcp.py`` measures the
tool with it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import SQUAD_REFERENCES, Retrieved, qa_set, squad_questions, squad_scores  # noqa: E402
from mcp_server.chunking import chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import Chunk, ChunkLocation, ProcessedDocument  # noqa: E402
from mcp_server.core.settings import Settings  # noqa: E402
from mcp_server.embedding.registry import ModelRegistry  # noqa: E402
from mcp_server.retrieval import ranking  # noqa: E402
from mcp_server.retrieval.index import DocumentIndex  # noqa: E402
from mcp_server.retrieval.learned import LearnedRanker, bundled  # noqa: E402


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

    def __init__(self, models: ModelRegistry, size: int | str | None, mode: str, rerank: bool,
                 ranker: LearnedRanker | None = None) -> None:
        self.models, self.size, self.mode, self.rerank, self.ranker = models, size, mode, rerank, ranker
        self.indexes: dict[str, DocumentIndex] = {}
        self.search_seconds: list[float] = []

    def index(self, doc: str) -> DocumentIndex:
        if doc not in self.indexes:
            text = (qa_set("squad-v2-small") / doc).read_text(encoding="utf-8")
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
        if hasattr(self.ranker, "gate"):  # a gated candidate (--ranker) reads the question's vector
            self.ranker.vector = query_vec  # type: ignore[union-attr]
        hits = idx.search(query_vec, question, k, mode=self.mode,  # type: ignore[arg-type]
                          reranker=self.models.reranker if self.rerank else None, ranker=self.ranker)
        self.search_seconds.append(time.perf_counter() - started)
        return [(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char) for h in hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0,600,800,1000,1500,para",
                        help="chunk sizes in characters; 0 = the chunker's default, para = one per paragraph")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rrf-k", type=int, default=ranking.RRF_K)
    parser.add_argument("--ranker", type=Path, help="a candidate learned-ranker file: a hybrid+candidate row")
    args = parser.parse_args()
    qa_set("squad-v2-small")
    ranking.RRF_K = args.rrf_k

    started = time.perf_counter()
    models = ModelRegistry.load(Settings())
    print(f"models loaded in {time.perf_counter() - started:.1f}s: "
          f"{json.dumps(models.health()['roles'], indent=None)[:400]}")
    questions = squad_questions()
    modes = [("dense", False), ("bm25", False), ("hybrid", False), ("hybrid+learned", False), ("hybrid+rerank", True)]
    candidate = None
    if args.ranker is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
        import ranker_gate

        candidate = ranker_gate.load(args.ranker)
        modes.append(("hybrid+candidate", False))
    print(f"\nSQuAD-v2-small, {len(questions)} answerable questions, k={args.k}, RRF k={args.rrf_k}\n")
    print(f"{'size':>6} {'chunks':>7} {'mode':<14} {'hit':>6} {'strict':>7} {'MRR':>6} {'ms/query':>9}")
    for size_text in args.sizes.split(","):
        size: int | str | None = size_text if size_text == "para" else (int(size_text) or None)
        shared: dict[str, DocumentIndex] = {}
        for mode, rerank in modes:
            if rerank and not models.rerank_available:
                print(f"{size or 'dflt':>6} {'':>7} {mode:<14} {'n/a (no cross-encoder loaded)':>30}")
                continue
            retriever = LocalRetriever(models, size, mode.split("+")[0], rerank,
                                       bundled() if mode.endswith("+learned") else
                                       candidate if mode.endswith("+candidate") else None)
            retriever.indexes = shared  # same chunks and vectors for every mode
            result = squad_scores(questions, retriever, args.k)
            n_chunks = sum(len(i) for i in shared.values())
            ms = statistics.median(retriever.search_seconds) * 1000
            print(f"{size or 'dflt':>6} {n_chunks:>7} {mode:<14} {result['hit']:>6.3f} "
                  f"{result['strict']:>7.3f} {result['mrr']:>6.3f} {ms:>9.1f}")
    print()
    for name, (h, s, m) in SQUAD_REFERENCES.items():
        strict = "–" if s is None else f"{s:.3f}"
        print(f"{'':>6} {'':>7} {name[:14]:<14} {h:>6.3f} {strict:>7} {m:>6.3f}")


if __name__ == "__main__":
    main()
