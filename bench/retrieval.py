"""Speed of retrieve_chunks, measured through MCP over streamable HTTP against a real server process.

    .venv/bin/python bench/retrieval.py [--sections cold,restart,big,warm] [--warm-queries 100]

Sections (each prints a Markdown table; every ratio is measured in this run, on this machine):

  cold     every FinanceBench dev PDF (../shared/corpus/qa/financebench-dev/docs): the first
           retrieve_chunks on a running server with an empty index folder (download, parse in the
           parser pool, chunk, BM25, dense vectors for the query's candidates, search; bigger
           documents answer from a partial index) next to the LangChain reference's cold build
           of the same file in this process (PyMuPDF text, RecursiveCharacterTextSplitter 2,250,
           MiniLM, FAISS.from_documents). Goal: <= 0.7x. The parse column is the server's own
           ``timings_ms.process``. After each document the background build is awaited (so the
           next measurement runs on a quiet machine) and its time to a complete index is shown.
  restart  the 3M 10-K after a restart (a new server process, same index folder): the first call
           finds the index by the bytes' hash, without parsing (goal < 1 s).
  big      War and Peace (3.2 MB) and the 872-page handbook: the first answer (goal <= 3 s), the
           time until the complete index is ready (not with --first-only), then a complete
           answer; the peak RSS of the server process meanwhile (goal <= 1.2 GB; parser workers
           apart).
  warm     p50 / p95 of warm calls on the 18-page Redbook (goal: no worse than 32-44 ms).

Nothing here is asserted by the test suite. The LangChain reference is bench/_langchain_ref.py's
``build_reference`` (the one bench/financebench.py measures quality with).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._langchain_ref import build_reference, embeddings  # noqa: E402
from bench.data import DOCS, QA, load_average, percentile, qa_set  # noqa: E402
from bench.servers import (  # noqa: E402
    FileServer,
    RssSampler,
    call_tool,
    cpu_seconds,
    mcp_session,
    server_env,
    server_process,
    wait_for_builds,
)

FINANCEBENCH = QA / "financebench-dev" / "docs"  # not in the repository: RAG_CORPUS_DIR or ../shared
BIG = {"war-and-peace.txt (3.2 MB)": ("txt/book-war-and-peace-1225p.txt", "What did Pierre do at the battle?"),
       "handbook-872p.docx": ("docx/handbook-872p.docx", "Who may file a claim?")}
RESTART_PDF = "3M_2022_10K.pdf"
PDF_QUERY = "What was the total revenue for the fiscal year?"
WARM = "pdf/redp5110_sampled.pdf"
WARM_QUERIES = ["Who may file a claim?", "What happened at the battle?", "How is row access controlled?",
                "What are the trustee's duties?", "Where did Pierre go?", "What does RCAC stand for?"]
# a 10-K's parse takes minutes: the parse and tool timeouts leave room for it
SERVER_ENV = server_env(MCP_TIMEOUT_DOCUMENT="1800", MCP_PARSE_TIMEOUT="1200")
CODE = [ROOT]  # the checkout the measured server runs from (--code)


@contextlib.contextmanager
def server(index_dir: str, code: Path | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``python -m mcp_server`` from the checkout ``code`` (--code by default; or a baseline):
    (its process, its MCP URL)."""
    with server_process(env={**SERVER_ENV, "MCP_INDEX_DIR": index_dir}, code=code or CODE[0]) as running:
        yield running.process, running.mcp_url


async def ask(mcp_url: str, url: str, query: str) -> tuple[float, dict[str, Any]]:
    """(seconds, result) of one retrieve_chunks in a session of its own."""
    async with mcp_session(mcp_url) as client:
        started = time.perf_counter()
        body = await call_tool(client, "retrieve_chunks", {"document_url": url, "query": query})
        return time.perf_counter() - started, body


async def until_complete(mcp_url: str, limit: float = 3600) -> float:
    """Seconds until no background build runs."""
    async with mcp_session(mcp_url) as client:
        return await wait_for_builds(client, limit=limit)


def status(body: dict[str, Any]) -> str:
    index = body["index"]
    return "complete" if index["status"] == "complete" else f"partial {index['dense_coverage']:.0%}"


def cold_section(index_dir: str) -> None:
    qa_set("financebench-dev")
    files = FileServer(FINANCEBENCH)
    pdfs = sorted(p.name for p in FINANCEBENCH.glob("*.pdf"))
    rows = []
    with server(index_dir) as (proc, mcp_url):
        warm_up = FileServer(DOCS)  # the parser pool's first task starts its workers: not a document's cost
        asyncio.run(ask(mcp_url, warm_up.url("pdf/multi_page.pdf"), "warm-up"))
        warm_up.close()
        embeddings()  # loaded and warmed once, before any cold build is timed
        for name in pdfs:
            cpu_before = cpu_seconds(proc.pid)
            seconds, body = asyncio.run(ask(mcp_url, files.url(name), PDF_QUERY))
            cpu = cpu_seconds(proc.pid) - cpu_before
            complete = asyncio.run(until_complete(mcp_url))
            cpu_before = time.process_time()
            timings = build_reference(FINANCEBENCH / name).timings
            reference = {"total": timings.total_s, "cpu": time.process_time() - cpu_before}
            rows.append((name, body, seconds, cpu, complete, reference))
            print(f"  {name}: {seconds:.2f}s ({status(body)}), reference {reference['total']:.2f}s", flush=True)
    files.close()
    print("\n| PDF | chunks | first answer (s) | of which parse | index | complete after (s) "
          "| LangChain cold build (s) | ratio (goal <= 0.7) | CPU s: server / reference |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for name, body, seconds, cpu, complete, reference in rows:
        parse = body["timings_ms"].get("process", 0) / 1000
        print(f"| {name} | {body['total_chunks_indexed']} | {seconds:.2f} | {parse:.2f} | {status(body)} | "
              f"{complete:.1f} | {reference['total']:.2f} | {seconds / reference['total']:.2f} | "
              f"{cpu:.1f} / {reference['cpu']:.1f} |")
    ratios = [seconds / reference["total"] for _, _, seconds, _, _, reference in rows]
    without_parse = [(s - b["timings_ms"].get("process", 0) / 1000) / r["total"] for _, b, s, _, _, r in rows]
    print(f"\nmedian ratio {statistics.median(ratios):.2f}; without the server's parse "
          f"{statistics.median(without_parse):.2f}; median parse "
          f"{statistics.median(b['timings_ms'].get('process', 0) / 1000 for _, b, _, _, _, _ in rows):.2f}s")


def restart_section(index_dir: str) -> None:
    qa_set("financebench-dev")
    files = FileServer(FINANCEBENCH)
    url = files.url(RESTART_PDF)
    with server(index_dir) as (_, mcp_url):  # a no-op when the cold section already built it
        cold, _ = asyncio.run(ask(mcp_url, url, PDF_QUERY))
        asyncio.run(until_complete(mcp_url))
    times, cpus, stages = [], [], []
    for _ in range(3):
        with server(index_dir) as (proc, mcp_url):
            cpu_before = cpu_seconds(proc.pid)
            seconds, body = asyncio.run(ask(mcp_url, url, PDF_QUERY))
            cpus.append(cpu_seconds(proc.pid) - cpu_before)
            if "process" in body["timings_ms"] or body["index"]["status"] != "complete":
                raise RuntimeError(f"the restarted server parsed or rebuilt: {body['timings_ms']}")
            times.append(seconds)
            stages.append(body["timings_ms"])
    files.close()
    middle = stages[times.index(statistics.median(times))]
    print(f"\n| {RESTART_PDF}, first call after a restart (3 restarts) | median {statistics.median(times):.2f} s "
          f"(goal < 1), CPU {statistics.median(cpus):.2f} s | no parse, index from disk "
          f"({body['total_chunks_indexed']} chunks): " + ", ".join(f"{k} {v:.0f} ms" for k, v in middle.items()) + " |")


def big_section(index_dir: str, wait_complete: bool = True) -> None:
    files = FileServer(DOCS)
    rows = []
    with server(index_dir) as (proc, mcp_url):
        idle = psutil.Process(proc.pid).memory_info().rss
        with RssSampler(proc.pid) as rss:
            for name, (relative, query) in BIG.items():
                cpu_before = cpu_seconds(proc.pid)
                first, body = asyncio.run(ask(mcp_url, files.url(relative), query))
                cpu = cpu_seconds(proc.pid) - cpu_before
                if not wait_complete:  # the first answer only: the server stops with the build unfinished
                    rows.append((name, body, first, cpu, float("nan"), float("nan"), {}))
                    print(f"  {name}: first {first:.2f}s ({status(body)})", flush=True)
                    continue
                complete = asyncio.run(until_complete(mcp_url))
                later, after = asyncio.run(ask(mcp_url, files.url(relative), query))
                rows.append((name, body, first, cpu, complete, later, after))
                print(f"  {name}: first {first:.2f}s ({status(body)}), complete after {complete:.0f}s", flush=True)
    files.close()
    print("\n| document | chunks | first answer (s, goal <= 3) | CPU seconds of it | index | stages (ms) "
          "| complete index after (s) | complete answer (s) |")
    print("|---|---:|---:|---:|---|---|---:|---:|")
    for name, body, first, cpu, complete, later, after in rows:
        stages = ", ".join(f"{k} {v:.0f}" for k, v in body["timings_ms"].items())
        print(f"| {name} | {body['total_chunks_indexed']} | {first:.2f} | {cpu:.2f} | {status(body)} | {stages} | "
              f"{complete:.0f} | {later:.3f} ({status(after) if after else 'not waited for'}) |")
    print(f"\n| peak RSS of the server process (goal <= 1.2 GB) | {rss.peak / 2**30:.2f} GB | idle with models "
          f"{idle / 2**30:.2f} GB | parser workers together {rss.peak_children / 2**30:.2f} GB |")


def warm_section(index_dir: str, count: int, baseline: Path | None) -> None:
    files = FileServer(DOCS)
    url = files.url(WARM)

    async def run(mcp_url: str) -> list[float]:
        latencies = []
        async with mcp_session(mcp_url) as client:
            await client.call_tool("retrieve_chunks", {"document_url": url, "query": "warm-up"})
            for n in range(count):
                started = time.perf_counter()
                await call_tool(client, "retrieve_chunks", {"document_url": url,
                                                            "query": WARM_QUERIES[n % len(WARM_QUERIES)]})
                latencies.append((time.perf_counter() - started) * 1000)
        return latencies

    def measure(code: Path, folder: str) -> list[float]:
        with server(folder, code) as (_, mcp_url):
            asyncio.run(ask_any(mcp_url, url, "build"))
            if code == CODE[0]:
                asyncio.run(until_complete(mcp_url))
            return asyncio.run(run(mcp_url))

    rows = [(f"this checkout ({CODE[0]})", measure(CODE[0], index_dir))]
    if baseline is not None:
        with tempfile.TemporaryDirectory(prefix="bench-baseline-index-") as folder:
            rows.append((f"baseline {baseline}", measure(baseline, folder)))
    files.close()
    print(f"\n| warm retrieve_chunks, {count} queries (redbook) | p50 | p95 |\n|---|---:|---:|")
    for name, warm in rows:
        print(f"| {name} | {statistics.median(warm):.1f} ms | {percentile(warm, 0.95):.1f} ms |")


async def ask_any(mcp_url: str, url: str, query: str) -> None:
    """One call that may be answered by a server without the ``index`` field (a baseline)."""
    async with mcp_session(mcp_url) as client:
        await call_tool(client, "retrieve_chunks", {"document_url": url, "query": query})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="cold,restart,big,warm")
    parser.add_argument("--warm-queries", type=int, default=100)
    parser.add_argument("--first-only", action="store_true",
                        help="big: measure the first answers only, not the time to the complete index")
    parser.add_argument("--code", type=Path, default=ROOT, help="run the server from this checkout (e.g. a "
                        "merge preview); the default is this one")
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. /work/main) whose warm calls are "
                        "measured in the same run")
    args = parser.parse_args()
    sections = set(re.split(r"[,\s]+", args.sections.strip()))
    CODE[0] = args.code.resolve()
    print(f"retrieve_chunks through MCP over streamable HTTP; server code {CODE[0]}; {os.cpu_count()} cores, "
          f"load average {load_average()} at the start")
    with tempfile.TemporaryDirectory(prefix="bench-pdf-index-") as pdf_index:
        if "cold" in sections:
            cold_section(pdf_index)
        if "restart" in sections:
            restart_section(pdf_index)
    if "big" in sections:
        with tempfile.TemporaryDirectory(prefix="bench-big-index-") as index_dir:
            big_section(index_dir, wait_complete=not args.first_only)
    if "warm" in sections:
        with tempfile.TemporaryDirectory(prefix="bench-warm-index-") as index_dir:
            warm_section(index_dir, args.warm_queries, args.baseline)


if __name__ == "__main__":
    main()
