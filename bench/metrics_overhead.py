"""What Prometheus metrics cost a warm retrieve_chunks: the same server with metrics on and off.

    .venv/bin/python bench/metrics_overhead.py [--rounds 7] [--queries 40] [--fake-models]

Three server processes run side by side with the same settings (bundled MiniLM) and the Redbook
PDF's index warm: one with metrics on, two with ``MCP_METRICS_ENABLED=false`` ("off" and "off 2",
the control: two identical servers show how far apart noise alone puts them). Each round sends
``--queries`` warm ``retrieve_chunks`` calls to every server, rotating call by call (so load from
elsewhere on the machine falls on all alike), and takes each server's p50. A scrape of /metrics
runs between rounds, as Prometheus would.

The table gives the medians over the rounds and two estimates of the overhead against "off", each
next to the same estimate for the control: the median of the per-round p50 ratios and the median
difference of calls sent back to back over the p50 (goal: < 2%). A last line times the recording
itself, in this process, without HTTP: everything a warm call records (tool counter and histogram,
three cache lookups, two stage timings, the warm counter), metrics on minus off, per call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import DOCS, load_average  # noqa: E402
from bench.servers import FileServer, mcp_session, payload, server_env, server_process  # noqa: E402

DOCUMENT = "pdf/redp5110_sampled.pdf"
QUERIES = ["How is row access controlled?", "What does RCAC stand for?", "Who can define column masks?",
           "What is a permission?", "How are masks applied to columns?", "What is the audit trail?"]
SIDES = ("on", "off", "off 2")  # metrics on; off; off again (the control)


async def rotating_round(mcp_urls: dict[str, str], url: str, count: int) -> dict[str, list[float]]:
    """``count`` warm calls to every server, one after the other, the first one rotating: latencies (ms)."""
    latencies: dict[str, list[float]] = {side: [] for side in SIDES}
    async with AsyncExitStack() as stack:
        sessions = {side: await stack.enter_async_context(mcp_session(mcp_urls[side])) for side in SIDES}
        for n in range(count):
            query = QUERIES[n % len(QUERIES)]
            for side in SIDES[n % 3:] + SIDES[:n % 3]:
                started = time.perf_counter()
                result = await sessions[side].call_tool("retrieve_chunks", {"document_url": url, "query": query})
                latencies[side].append((time.perf_counter() - started) * 1000)
                if result.is_error or not payload(result)["cached"]:
                    raise RuntimeError(f"not a warm answer: {payload(result)}")
    return latencies


def recording_microseconds(repeat: int = 20000) -> float:
    """The record calls of one warm retrieve_chunks, timed in this process (plain registry): the
    time with metrics on minus the time of the same calls switched off."""
    from mcp_server import metrics
    from mcp_server.core.settings import Settings

    @metrics.tool_calls
    async def run(*, tool: str) -> None:
        metrics.cache_lookup("download", "memory", True)
        metrics.cache_lookup("document", "memory", True)
        metrics.index_lookup("memory")
        metrics.search_timed(0.01, 0.002)
        metrics.retrieval("pdf", warm=True)

    async def many() -> float:
        started = time.perf_counter()
        for _ in range(repeat):
            await run(tool="retrieve_chunks")
        return (time.perf_counter() - started) / repeat * 1e6

    def median_with(enabled: bool) -> float:
        metrics.configure(Settings(_env_file=None, log_dir=None, metrics_enabled=enabled,
                                   metrics_multiproc_dir=None))
        return statistics.median(asyncio.run(many()) for _ in range(5))

    return median_with(True) - median_with(False)


async def _cold(mcp_url: str, url: str) -> None:
    async with mcp_session(mcp_url) as client:
        result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": QUERIES[0]})
        if result.is_error:
            raise RuntimeError(payload(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--queries", type=int, default=40, help="warm calls per server and round")
    parser.add_argument("--fake-models", action="store_true", help="fake embedder: less work per call, so a "
                        "larger share for metrics (an upper bound)")
    args = parser.parse_args()
    files = FileServer(DOCS)
    url = files.url(DOCUMENT)
    env = server_env(MCP_LOAD_MODELS="false" if args.fake_models else "true")
    p50: dict[str, list[float]] = {side: [] for side in SIDES}
    calls: dict[str, list[float]] = {side: [] for side in SIDES}
    with ExitStack() as stack:
        urls = {}
        for side in SIDES:
            index_dir = stack.enter_context(tempfile.TemporaryDirectory())
            _, base = stack.enter_context(server_process(
                env={**env, "MCP_INDEX_DIR": index_dir, "MCP_METRICS_ENABLED": str(side == "on").lower()}))
            urls[side] = f"{base}/mcp"
            asyncio.run(_cold(urls[side], url))  # the build, outside the measurement
        for _ in range(args.rounds):
            got = asyncio.run(rotating_round(urls, url, args.queries))
            for side, values in got.items():
                p50[side].append(statistics.median(values))
                calls[side] += values
            httpx.get(urls["on"].removesuffix("/mcp") + "/metrics", timeout=30).raise_for_status()
    files.close()
    record_us = recording_microseconds()

    def ratio_of_p50s(side: str) -> float:
        return statistics.median(a / b for a, b in zip(p50[side], p50["off"], strict=True)) - 1

    def paired(side: str) -> float:
        differences = [a - b for a, b in zip(calls[side], calls["off"], strict=True)]
        return statistics.median(differences) / statistics.median(calls["off"])

    off = statistics.median(p50["off"])
    models = "fake embedder" if args.fake_models else "bundled MiniLM"
    print(f"\nwarm retrieve_chunks, Redbook PDF, {models}: {args.rounds} rounds x {args.queries} calls per server, "
          f"medians; {os.cpu_count()} cores, load average {load_average()}\n")
    print("| server | p50 (ms) | per-round p50s (ms) |")
    print("|---|---:|---|")
    for side in SIDES:
        label = {"on": "metrics on", "off": "metrics off", "off 2": "metrics off (control)"}[side]
        print(f"| {label} | {statistics.median(p50[side]):.2f} | {', '.join(f'{v:.1f}' for v in p50[side])} |")
    print("\n| vs metrics off | metrics on (goal < 2%) | control (noise) |")
    print("|---|---:|---:|")
    for name, estimate in (("median of per-round p50 ratios", ratio_of_p50s),
                           ("median back-to-back difference / p50", paired)):
        print(f"| {name} | {100 * estimate('on'):+.1f}% | {100 * estimate('off 2'):+.1f}% |")
    print(f"\nrecording alone, per warm call (in process): {record_us:.1f} us = {100 * record_us / 1000 / off:.2f}% "
          "of the p50 without metrics")


if __name__ == "__main__":
    main()
