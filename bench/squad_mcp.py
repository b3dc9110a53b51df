"""SQuAD-v2-small through the real tool: retrieve_chunks over MCP streamable HTTP.

    .venv/bin/python bench/squad_mcp.py [--k 5]

Starts ``python -m mcp_server`` (the defaults of ``make serve``: bundled MiniLM, and whatever
reranker loads), serves the two articles from a loopback HTTP server, asks all 293 answerable
questions with retrieve_chunks and scores the results with ``bench/squad.py``'s ``evaluate``
(hit, strict hit, MRR). Also prints the latency of these warm calls (distinct questions).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from squad import REFERENCES, SQUAD, evaluate, load_questions  # noqa: E402

from tests.conftest import FileServer  # noqa: E402
from tests.mcp_harness import http_client, payload, server_process  # noqa: E402

Retrieved = list[tuple[str, int, int]]


async def ask_all(mcp_url: str, files: FileServer, questions: list[dict[str, Any]], k: int
                  ) -> tuple[dict[tuple[str, str], Retrieved], list[float], dict[str, Any]]:
    answers: dict[tuple[str, str], Retrieved] = {}
    latencies: list[float] = []
    async with http_client(mcp_url) as client:
        for doc in sorted({q["doc"] for q in questions}):  # build each index once before timing
            await client.call_tool("retrieve_chunks", {"document_url": files.url(doc), "query": "warm-up"})
        for q in questions:
            started = time.perf_counter()
            result = await client.call_tool("retrieve_chunks", {"document_url": files.url(q["doc"]),
                                                                "query": q["question"], "top_k": k})
            latencies.append((time.perf_counter() - started) * 1000)
            body = payload(result)
            if result.isError:
                raise RuntimeError(body)
            answers[(q["doc"], q["question"])] = [
                (r["text"], r["location"]["start_char"], r["location"]["end_char"]) for r in body["results"]
            ]
        health = payload(await client.call_tool("get_system_health", {}))
    return answers, latencies, health


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    if not SQUAD.is_dir():  # the QA sets are not carried in the repository (tests/corpus/README.md)
        raise SystemExit(f"QA set squad-v2-small not found at {SQUAD}: set RAG_CORPUS_DIR to a corpus "
                         "folder holding qa/squad-v2-small")
    questions = load_questions()
    files = FileServer(SQUAD)
    with tempfile.TemporaryDirectory() as index_dir, server_process(
        [], env={"MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_INDEX_DIR": index_dir, "MCP_RATE_LIMIT_RPM": "1000000"}
    ) as (_, base):
        answers, latencies, health = asyncio.run(ask_all(f"{base}/mcp", files, questions, args.k))
    files.close()
    scores = evaluate(questions, lambda doc, question, k: answers[(doc, question)][:k], k=args.k)
    reranker = health["models"]["roles"]["reranker"]
    print(f"\nSQuAD-v2-small, {len(questions)} answerable questions, k={args.k}, through retrieve_chunks over MCP")
    embedder = health['models']['roles']['fast']['weights']
    print(f"(reranker: {reranker.get('weights') or 'none'}; embedder: {embedder})\n")
    print("| retriever | hit | strict | MRR |")
    print("|---|---:|---:|---:|")
    for name, (hit, strict, mrr) in REFERENCES.items():
        print(f"| {name} (reference) | {hit:.3f} | {'-' if strict is None else f'{strict:.3f}'} | {mrr:.3f} |")
    print(f"| **retrieve_chunks (this server)** | **{scores['hit']:.3f}** | **{scores['strict']:.3f}** | "
          f"**{scores['mrr']:.3f}** |")
    ordered = sorted(latencies)
    print(f"\nwarm retrieve_chunks latency over {len(latencies)} distinct questions: "
          f"p50 {statistics.median(ordered):.1f} ms, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.1f} ms")


if __name__ == "__main__":
    main()
