"""SQuAD-v2-small through the real tool: retrieve_chunks over MCP streamable HTTP.

    .venv/bin/python bench/squad_mcp.py [--k 5]

Starts ``python -m mcp_server`` (the defaults of ``make serve``: bundled MiniLM, and whatever
reranker loads), serves the two articles from a loopback HTTP server, asks all 293 answerable
questions with retrieve_chunks and scores the results as ``bench/squad.py`` does
(``bench/data.py``'s ``squad_scores``: hit, strict hit, MRR). Also prints the latency of these
warm calls (distinct questions). The questions are asked once every index is complete.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import (  # noqa: E402
    SQUAD_REFERENCES,
    Retrieved,
    percentile,
    qa_set,
    squad_questions,
    squad_scores,
    table,
)
from bench.servers import (  # noqa: E402
    FileServer,
    call_tool,
    mcp_session,
    server_env,
    server_process,
    wait_for_builds,
)


async def ask_all(mcp_url: str, files: FileServer, questions: list[dict[str, Any]], k: int
                  ) -> tuple[dict[tuple[str, str], Retrieved], list[float], dict[str, Any]]:
    answers: dict[tuple[str, str], Retrieved] = {}
    latencies: list[float] = []
    async with mcp_session(mcp_url) as client:
        for doc in sorted({q["doc"] for q in questions}):  # build each index once before timing
            await client.call_tool("retrieve_chunks", {"document_url": files.url(doc), "query": "warm-up"})
        # every question meets the complete index (a first call may answer from a partial one while
        # the complete one builds; how fast that build is would then change the figures)
        await wait_for_builds(client)
        for q in questions:
            started = time.perf_counter()
            body = await call_tool(client, "retrieve_chunks", {"document_url": files.url(q["doc"]),
                                                               "query": q["question"], "top_k": k})
            latencies.append((time.perf_counter() - started) * 1000)
            answers[(q["doc"], q["question"])] = [
                (r["text"], r["location"]["start_char"], r["location"]["end_char"]) for r in body["results"]
            ]
        health = await call_tool(client, "get_system_health", {})
    return answers, latencies, health


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    questions = squad_questions()
    with FileServer(qa_set("squad-v2-small")) as files, tempfile.TemporaryDirectory() as index_dir, \
            server_process(env=server_env(MCP_INDEX_DIR=index_dir)) as server:
        answers, latencies, health = asyncio.run(ask_all(server.mcp_url, files, questions, args.k))
    scores = squad_scores(questions, lambda doc, question, k: answers[(doc, question)][:k], k=args.k)
    reranker = health["models"]["roles"]["reranker"]
    print(f"\nSQuAD-v2-small, {len(questions)} answerable questions, k={args.k}, through retrieve_chunks over MCP")
    embedder = health['models']['roles']['fast']['weights']
    print(f"(reranker: {reranker.get('weights') or 'none'}; embedder: {embedder})\n")
    rows = [[f"{name} (reference)", f"{hit:.3f}", "-" if strict is None else f"{strict:.3f}", f"{mrr:.3f}"]
            for name, (hit, strict, mrr) in SQUAD_REFERENCES.items()]
    rows.append(["**retrieve_chunks (this server)**", *(f"**{scores[key]:.3f}**" for key in ("hit", "strict", "mrr"))])
    print(table(["retriever", "hit", "strict", "MRR"], rows, "lrrr"))
    print(f"\nwarm retrieve_chunks latency over {len(latencies)} distinct questions: "
          f"p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms")


if __name__ == "__main__":
    main()
