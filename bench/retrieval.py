"""Speed of retrieve_chunks, measured through MCP over streamable HTTP against a real server process.

    .venv/bin/python bench/retrieval.py [--runs 3] [--warm-queries 100] [--quick]

Prints one table:
  1. cold retrieve_chunks (download, parse, chunk, embed, index, search; caches and disk indexes
     cleared before every run) on the 872-page DOCX, War and Peace and the 18-page Redbook PDF,
     next to the time the same embedder alone needs for the same chunks, measured in this run
     (goal: cold <= 1.2 x embed-only);
  2. warm retrieve_chunks: p50 / p95 over N queries on a cached document (goal without the
     cross-encoder: p50 <= 15 ms, p95 <= 30 ms);
  3. peak RSS of the server process with models loaded (goal <= 1.2 GB), parser workers apart.
Medians of several runs; nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import DOCS, FileServer  # noqa: E402
from tests.mcp_harness import http_client, payload, server_process  # noqa: E402

DOCUMENTS = {
    "handbook-872p.docx": "docx/handbook-872p.docx",
    "war-and-peace.txt": "txt/book-war-and-peace-1225p.txt",
    "redbook-18p.pdf": "pdf/redp5110_sampled.pdf",
}
QUERIES = ["Who may file a claim?", "What happened at the battle?", "How is row access controlled?",
           "What are the trustee's duties?", "Where did Pierre go?", "What does RCAC stand for?"]


class RssSampler:
    """Polls the RSS of a process (and, apart, its children) until stopped; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
                children = sum(c.memory_info().rss for c in self.process.children(recursive=True))
                self.peak_children = max(self.peak_children, children)
            except psutil.Error:
                pass

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def embed_only_seconds(path: Path, runs: int) -> tuple[float, int]:
    """Median time of the embedder alone on exactly the chunks the server builds for ``path``."""
    from mcp_server.chunking import chunk_document, chunk_params_for
    from mcp_server.core.models import FetchedDocument
    from mcp_server.core.settings import Settings
    from mcp_server.processors import ProcessOptions, document_input, process_document
    from mcp_server.retrieval.models import ModelRegistry

    settings = Settings(log_dir=None)
    models = ModelRegistry.load(settings)
    data = path.read_bytes()
    fetched = FetchedDocument(data=data, url=path.as_uri(), final_url=path.as_uri(), filename=path.name)
    doc = process_document(document_input(fetched), ProcessOptions.from_settings(settings))
    params = chunk_params_for(doc.doc_type, len(doc.content), models.max_tokens)
    chunks = chunk_document(doc, params, models.token_counter)
    embedder = models.embedder_for(len(chunks))
    texts = [chunk.text for chunk in chunks]
    times = []
    for _ in range(runs):
        embedder.clear_cache()  # its content-hash cache would make every run after the first free
        started = time.perf_counter()
        embedder.embed(texts)
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(chunks)


async def cold_seconds(mcp_url: str, url: str, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        async with http_client(mcp_url) as client:
            await client.call_tool("manage_cache", {"action": "clear"})
            started = time.perf_counter()
            result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": QUERIES[0]})
            times.append(time.perf_counter() - started)
            body = payload(result)
            if result.isError or body["cached"]:
                raise RuntimeError(f"cold run was not cold: {body}")
    return times


async def warm_latencies(mcp_url: str, url: str, count: int) -> list[float]:
    latencies = []
    async with http_client(mcp_url) as client:
        await client.call_tool("retrieve_chunks", {"document_url": url, "query": "warm-up"})
        for n in range(count):
            started = time.perf_counter()
            query = QUERIES[n % len(QUERIES)]
            result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": query})
            latencies.append((time.perf_counter() - started) * 1000)
            if result.isError:
                raise RuntimeError(payload(result))
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm-queries", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="only the Redbook PDF, 1 run")
    args = parser.parse_args()
    documents = {"redbook-18p.pdf": DOCUMENTS["redbook-18p.pdf"]} if args.quick else DOCUMENTS
    runs = 1 if args.quick else args.runs
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    files = FileServer(DOCS)
    rows = []
    with tempfile.TemporaryDirectory() as index_dir, server_process(
        [], env={"MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_INDEX_DIR": index_dir, "MCP_RATE_LIMIT_RPM": "1000000"}
    ) as (proc, base), RssSampler(proc.pid) as rss:
        mcp_url = f"{base}/mcp"
        for name, relative in documents.items():
            cold = asyncio.run(cold_seconds(mcp_url, files.url(relative), runs))
            embed, chunk_count = embed_only_seconds(DOCS / relative, runs)
            rows.append((name, chunk_count, statistics.median(cold), embed))
        warm = asyncio.run(warm_latencies(mcp_url, files.url(DOCUMENTS["redbook-18p.pdf"]), args.warm_queries))
    files.close()

    print(f"\nretrieve_chunks through MCP over streamable HTTP ({runs} runs, medians; {os.cpu_count()} cores)\n")
    print("| document | chunks | cold retrieve_chunks (s) | embed-only (s) | ratio (goal <= 1.2) |")
    print("|---|---:|---:|---:|---:|")
    for name, chunk_count, cold_s, embed_s in rows:
        print(f"| {name} | {chunk_count} | {cold_s:.2f} | {embed_s:.2f} | {cold_s / embed_s:.2f} |")
    print(f"\n| warm retrieve_chunks, {len(warm)} queries (redbook) | p50 {percentile(warm, 50):.1f} ms "
          f"(goal <= 15) | p95 {percentile(warm, 95):.1f} ms (goal <= 30) |")
    print(f"| peak RSS, server process with models | {rss.peak / 2**30:.2f} GB (goal <= 1.2) | "
          f"parser workers together {rss.peak_children / 2**30:.2f} GB |")


if __name__ == "__main__":
    main()
