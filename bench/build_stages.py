"""Where a complete cold build of a filing spends its time, stage by stage, against the LangChain reference.

    .venv/bin/python bench/build_stages.py [--docs 3M_2022_10K,BESTBUY_2024Q2_10Q] [--rounds 2]

In process and uncached (no bench cache, a fresh index folder): for each filing, the server's stages as a
cold build runs them (``DocumentService`` and ``IndexBuilder.claim_and_build``): parse (``process_document``,
which the server runs in a parser worker), chunk (``chunk_document`` with the service's parameters), the
dense units (``sentence_units``) and their embedding by the document's embedder, the BM25 analysis and the
template mask (``DocumentIndex``'s constructor and ``templates``), the instruction detector's scores of
every chunk (``score_chunks``: a second embedding when the document's embedder is not the detector's),
and the save (``IndexStore.save`` with the sidecars); then the reference's loader, splitter and embedding
(``bench/_langchain_ref.py``). Each stage's wall and CPU seconds (the whole process's: ONNX Runtime's and
torch's threads count), medians over ``--rounds``, the rounds alternating ours and the reference's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # --code puts another checkout's mcp_server ahead of it

from bench.data import qa_set  # noqa: E402

T = TypeVar("T")
DEFAULT = "PFIZER_2021_10K,BESTBUY_2024Q2_10Q,AMCOR_2022_8K_dated-2022-07-01"


def _find(name: str) -> Path:
    for qa in ("financebench-dev", "financebench-dev2"):
        path = qa_set(qa) / "docs" / f"{name}.pdf"
        if path.exists():
            return path
    raise SystemExit(f"no filing {name}")


def _timed(stages: dict[str, list[tuple[float, float]]], name: str, fn: Callable[[], T]) -> T:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    stages[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return out


def ours(path: Path, models: Any, options: Any, stages: dict[str, list[tuple[float, float]]]) -> dict[str, int]:
    from mcp_server.chunking import chunk_document
    from mcp_server.core.models import FetchedDocument
    from mcp_server.indexes.builds import profile
    from mcp_server.indexes.instructions import score_chunks, store_scores
    from mcp_server.indexes.store import IndexStore
    from mcp_server.pipeline.service import Chunking
    from mcp_server.processors import document_input, process_document
    from mcp_server.retrieval.index import DocumentIndex
    from mcp_server.text.sentences import sentence_units

    data = path.read_bytes()
    fetched = FetchedDocument(data=data, url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
    document = _timed(stages, "parse", lambda: process_document(document_input(fetched), options))
    params = Chunking(models).params(document)
    chunks = _timed(stages, "chunk", lambda: chunk_document(document, params, models.token_counter))
    embedder = models.embedder_for(*profile(chunks))
    texts, _ = _timed(stages, "units", lambda: sentence_units(chunks))
    for model in {id(e): e for e in (embedder, models.embedder_for(1), getattr(models.instructions, "embedder", None))
                  if e is not None}.values():
        model.clear_cache()  # a cold build: no vector of an earlier round
    vectors = _timed(stages, f"embed units ({embedder.model_id.split('/')[-1]})",
                     lambda: embedder.embed(texts, unit="sentences"))
    # the index as the build makes it (its embedding again, now from the embedder's cache: not counted)
    built = DocumentIndex.embed(chunks, embedder)
    del vectors
    index = _timed(stages, "bm25 + templates", lambda: _lexical(DocumentIndex, chunks, built))
    detector = models.instructions
    if detector is not None:
        index.instructions = _timed(stages, "instruction scores", lambda: score_chunks(detector, chunks))
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as folder:
        store = IndexStore(folder)

        def save() -> None:
            store.save("k", index, chunker_version="bench")
            store_scores(store.path("k"), index)

        _timed(stages, "save", save)
    return {"chunks": len(chunks), "units": len(texts), "chars": len(document.content)}


def _lexical(cls: Any, chunks: Any, built: Any) -> Any:
    index = cls(chunks, built.faiss, model_id=built.model_id, owners=built.owners, key="k")
    index.templates  # noqa: B018 - found now, as the first search finds them
    return index


def reference(path: Path, stages: dict[str, list[tuple[float, float]]]) -> dict[str, int]:
    from bench._langchain_ref import _quiet, embeddings, page_text, split

    with _quiet():
        from langchain_community.vectorstores import FAISS

        emb = embeddings()
        text, _ = _timed(stages, "ref parse", lambda: page_text(path))
        docs = _timed(stages, "ref split", lambda: split(text))
        _timed(stages, "ref embed", lambda: FAISS.from_documents(docs, emb))
    return {"splits": len(docs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", default=DEFAULT, help="comma-separated filing names")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    from bench._langchain_ref import embeddings
    from mcp_server.core.settings import Settings
    from mcp_server.embedding.registry import ModelRegistry
    from mcp_server.processors import ProcessOptions

    settings = Settings(log_dir=None)
    models = ModelRegistry.load(settings)
    options = ProcessOptions.from_settings(settings)
    if not args.no_reference:
        embeddings()
    for name in args.docs.split(","):
        path = _find(name)
        stages: dict[str, list[tuple[float, float]]] = defaultdict(list)
        sizes: dict[str, int] = {}
        for _ in range(args.rounds):
            sizes |= ours(path, models, options, stages)
            if not args.no_reference:
                sizes |= reference(path, stages)
        print(f"\n{name} ({path.stat().st_size / 2**20:.2f} MB; " + ", ".join(f"{k} {v:,}" for k, v in sizes.items())
              + f"), medians of {args.rounds}, load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print("| stage | wall s | CPU s |\n|---|---:|---:|")
        totals = {"ours": [0.0, 0.0], "ref": [0.0, 0.0]}
        for stage, runs in stages.items():
            wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            side = totals["ref" if stage.startswith("ref") else "ours"]
            side[0] += wall
            side[1] += cpu
            print(f"| {stage} | {wall:.2f} | {cpu:.2f} |")
        for side, (wall, cpu) in totals.items():
            print(f"| **{side} total** | **{wall:.2f}** | **{cpu:.2f}** |")


if __name__ == "__main__":
    main()
