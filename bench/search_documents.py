"""search_documents on financebench-dev: one search over all 12 filings, and its cold time.

    .venv/bin/python bench/search_documents.py [--index-dir DIR] [--questions N]
    .venv/bin/python bench/search_documents.py --cold [--runs 2] [--set skewed|even]

Quality (default): a real server process, ``../shared/corpus/qa/financebench-dev/docs`` served on
127.0.0.1. Every question goes to ``search_documents`` over all 12 PDFs at once (the question
does not say which filing; top_k=10), and, as the single-document reference, to
``retrieve_chunks`` on the question's own filing (top_k=5). A hit needs the right document AND a
result on a gold evidence page (``location.pages``). Prints hit@5, hit@10, MRR@10, how often the
right filing comes first and how often it is among the top 10 at all; with ``--named``, for the
plain questions and for the same questions naming their document (``questions_named.jsonl``).
Nothing is cached across runs except the index folder when ``--index-dir`` is given (documents
are still downloaded and parsed).

Cold (``--cold``): five filings, each searched alone (``search_documents`` with one URL) and then
all five in one call, each measurement on a fresh server process with an empty index folder.
Prints the medians and the ratio of the 5-document call to the slowest single document (goal
<= 1.3), with the sum of the single times (what one after another would cost).

The questions are CC BY-NC and stay in ../shared: nothing here copies them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import (  # noqa: E402
    QA,
    financebench_questions,
    first_rank,
    hit_rate,
    jsonl,
    load_average,
    mrr,
    qa_set,
)
from bench.servers import FileServer, call_tool, mcp_session, server_env, server_process  # noqa: E402

FINANCEBENCH = QA / "financebench-dev"  # not in the repository: RAG_CORPUS_DIR or ../shared
SETS = {
    # an annual report next to four short releases and filings: the common "compare these" call
    "skewed": ["BESTBUY_2023_10K.pdf", "ULTABEAUTY_2023Q4_EARNINGS.pdf", "AMCOR_2023Q4_EARNINGS.pdf",
               "MGMRESORTS_2022Q4_EARNINGS.pdf", "JOHNSON_JOHNSON_2023_8K_dated-2023-08-30.pdf"],
    # five documents of similar size: on 2 cores they cannot all run at once
    "even": ["ULTABEAUTY_2023Q4_EARNINGS.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "MGMRESORTS_2022Q4_EARNINGS.pdf",
             "JOHNSON_JOHNSON_2023_8K_dated-2023-08-30.pdf", "BESTBUY_2024Q2_10Q.pdf"],
}
# the 252-page 10-K's parse needs more than the default 120 s
SERVER_ENV = server_env(MCP_RATE_LIMIT_RPM="100000", MCP_PARSE_TIMEOUT="1800", MCP_TIMEOUT_DOCUMENT="3600")


def first_hit(results: list[dict[str, Any]], doc_url: str, pages: set[int]) -> int | None:
    """Rank of the first result from the right document on a gold evidence page."""
    return first_rank(results, lambda result: result.get("document_url", doc_url) == doc_url
                      and bool(pages & set(result["location"].get("pages", []))))


async def call(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # a cold call over 12 filings sends nothing for minutes: no read timeout
    async with mcp_session(url, read_timeout=None) as client:
        return await call_tool(client, tool, arguments)


async def quality(args: argparse.Namespace) -> None:
    questions = financebench_questions()
    questions = questions[: args.questions] if args.questions else questions
    sets = {"plain": questions}
    if args.named:
        named = {q["id"]: q for q in jsonl(qa_set("financebench-dev") / "questions_named.jsonl")}
        sets["named"] = [named[q["id"]] for q in questions]
    files = FileServer(FINANCEBENCH)
    docs = sorted(p.name for p in (FINANCEBENCH / "docs").glob("*.pdf"))
    urls = [files.url(f"docs/{name}") for name in docs]
    index_dir = args.index_dir or tempfile.mkdtemp(prefix="bench-search-")
    env = {**SERVER_ENV, "MCP_INDEX_DIR": str(index_dir)}
    try:
        with server_process(env=env, ready_timeout=600) as server:
            mcp = server.mcp_url
            started = time.perf_counter()
            first = await call(mcp, "search_documents", {"document_urls": urls, "query": "total revenue", "top_k": 1})
            ready = time.perf_counter() - started
            failed = [d for d in first["documents"] if d["status"] != "ok"]
            if failed:
                raise RuntimeError(f"documents failed: {failed}")
            chunks = sum(d["chunks"] for d in first["documents"])
            measured = {}
            for phrasing, asked in sets.items():
                measured[phrasing] = await ask_all(mcp, files, urls, asked)
    finally:
        files.close()
    n = len(questions)
    print(f"financebench-dev: {n} questions, {len(docs)} PDFs, {chunks} chunks; first (cold or index-dir) "
          f"search_documents over all {len(docs)}: {ready:.1f} s; load average {load_average()}")
    print()
    print("| call | questions | hit@5 | hit@10 | MRR@10 | right filing first | right filing in the results "
          "| warm p50 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for phrasing, m in measured.items():
        print(f"| search_documents, all {len(docs)} PDFs, top_k=10 | {phrasing} | **{hit_rate(m['multi'], 5):.3f}** | "
              f"{hit_rate(m['multi'], 10):.3f} | {mrr(m['multi']):.3f} | **{m['first'] / n:.3f}** | "
              f"{m['right'] / n:.3f} | {statistics.median(m['latencies']) * 1000:.0f} |")
        print(f"| retrieve_chunks, own filing, top_k=5 | {phrasing} | {hit_rate(m['single5'], 5):.3f} | – | "
              f"{mrr(m['single5']):.3f} | 1 (given) | 1 (given) | – |")


async def ask_all(mcp: str, files: FileServer, urls: list[str], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question to search_documents over every URL and to retrieve_chunks on its own filing."""
    out: dict[str, Any] = {"multi": [], "single5": [], "first": 0, "right": 0, "latencies": []}
    for q in questions:
        doc_url = files.url(q["doc"])
        pages = {e["page"] for e in q["evidence"]}
        started = time.perf_counter()
        found = await call(mcp, "search_documents", {"document_urls": urls, "query": q["question"], "top_k": 10})
        out["latencies"].append(time.perf_counter() - started)
        out["multi"].append(first_hit(found["results"], doc_url, pages))
        out["right"] += any(r["document_url"] == doc_url for r in found["results"])
        out["first"] += bool(found["results"]) and found["results"][0]["document_url"] == doc_url
        own = await call(mcp, "retrieve_chunks", {"document_url": doc_url, "query": q["question"], "top_k": 5})
        out["single5"].append(first_hit(own["results"], doc_url, pages))
    return out


async def cold_once(urls: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as index_dir, \
            server_process(env={**SERVER_ENV, "MCP_INDEX_DIR": index_dir}, ready_timeout=600) as server:
        started = time.perf_counter()
        body = await call(server.mcp_url, "search_documents", {"document_urls": urls, "query": "net revenue"})
        seconds = time.perf_counter() - started
    if any(d["status"] != "ok" or d["cached"] for d in body["documents"]):
        raise RuntimeError(f"not a clean cold run: {body['documents']}")
    return seconds


async def cold(args: argparse.Namespace) -> None:
    names = SETS[args.set]
    files = FileServer(FINANCEBENCH / "docs")
    try:
        singles: dict[str, list[float]] = {name: [] for name in names}
        together: list[float] = []
        for _ in range(args.runs):  # interleaved, so load changes on the machine hit both alike
            for name in names:
                singles[name].append(await cold_once([files.url(name)]))
            together.append(await cold_once([files.url(name) for name in names]))
    finally:
        files.close()
    medians = {name: statistics.median(times) for name, times in singles.items()}
    slowest = max(medians.values())
    print(f"cold search_documents, set '{args.set}', median of {args.runs} run(s), fresh server and index folder "
          f"per measurement, {os.cpu_count()} CPU cores")
    print()
    print("| call | cold seconds |")
    print("|---|---:|")
    for name, seconds in medians.items():
        print(f"| {name} alone | {seconds:.1f} |")
    print(f"| sum of the five alone (one after another) | {sum(medians.values()):.1f} |")
    print(f"| **all five in one call** | **{statistics.median(together):.1f}** |")
    print(f"| ratio to the slowest alone (goal <= 1.3) | {statistics.median(together) / slowest:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-dir", type=Path, help="reuse this index folder across runs (quality mode)")
    parser.add_argument("--named", action="store_true",
                        help="also ask each question as it names its document (questions_named.jsonl)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions")
    parser.add_argument("--cold", action="store_true", help="measure cold time instead of quality")
    parser.add_argument("--set", choices=sorted(SETS), default="skewed", help="the five documents of --cold")
    parser.add_argument("--runs", type=int, default=1, help="runs of --cold (medians)")
    args = parser.parse_args()
    qa_set("financebench-dev")
    asyncio.run(cold(args) if args.cold else quality(args))


if __name__ == "__main__":
    main()
