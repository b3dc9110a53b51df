"""Bounded load run on 127.0.0.1: N concurrent MCP clients for a fixed time, mixed tools on corpus files.

    .venv/bin/python bench/load.py [--clients 16] [--duration 20] [--workers 1,4] [--backends memory,redis]
                                   [--models] [--limits] [--memory] [--hosts 2 [--runs 3]]

Per (workers, backend) it starts ``python -m mcp_server --workers W`` (and, for redis, a private
redis-server on a free loopback port), warms every document once, then runs the clients until the
deadline and prints throughput, p50/p95/p99 latency and the error count (goal: 0).

``--limits`` checks that the global rate limit is exact across 4 workers: a burst of requests beyond
the global budget from several API keys, on fresh connections (so they land on every worker);
exactly the excess must be refused with Redis. ``--memory`` loads the real models and prints the
resident memory of each worker and of the whole process tree. Fake embeddings unless ``--models``.

``--hosts 2`` starts two servers with their own index folders sharing indexes through one Redis
(``MCP_INDEX_STORE=redis``, real models, every document built in the call) and times, per document,
host A's first retrieve_chunks (its cold build) against host B's first call on the same document
afterwards (loaded from the shared store), after clearing every cache between runs; median of
``--runs``. Goal: B <= 0.1 x A.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import CORPUS, percentile  # noqa: E402
from bench.servers import FileServer, mcp_session, payload, redis_server, server_env, server_process  # noqa: E402

DOCS = ["docs/html/what_is_haystack.html", "docs/txt/norwich-city.txt", "docs/pdf/multi_page.pdf",
        "docs/docx/word_sample.docx", "docs/pptx/powerpoint_sample.pptx", "docs/csv/stanley-cups.csv"]
QUERIES = ["What is this document about?", "Which table lists the totals?", "When was it founded?"]


@contextlib.contextmanager
def corpus_server() -> Iterator[str]:
    files = FileServer(CORPUS)
    try:
        yield files.base
    finally:
        files.close()


@contextlib.contextmanager
def mcp_server(workers: int, env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with server_process(["--workers", str(workers)], env={"MCP_LOG_LEVEL": "WARNING", **env},
                        ready_timeout=600) as (proc, base):
        yield base, proc


def session(base: str, key: str | None = None, keepalive: bool = True) -> Any:
    return mcp_session(f"{base}/mcp", headers={"Authorization": f"Bearer {key}"} if key else None,
                       keepalive=keepalive)


def mixed_calls(corpus: str) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, doc in enumerate(DOCS):
        url = f"{corpus}/{doc}"
        calls.append(("process_document", {"document_url": url}))
        calls.append(("retrieve_chunks", {"document_url": url, "query": QUERIES[i % len(QUERIES)]}))
    calls.append(("query_spreadsheet", {"document_url": f"{corpus}/docs/csv/stanley-cups.csv", "search_value": "1"}))
    calls.append(("detect_language", {"text": "Ceci est une phrase écrite en français pour le test."}))
    calls.append(("get_system_health", {}))
    return calls


async def run_load(base: str, calls: list[tuple[str, dict[str, Any]]], clients: int,
                   duration: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + duration

    async def client_task(n: int) -> None:
        async with session(base) as client:
            i = n
            while time.monotonic() < deadline:
                tool, args = calls[i % len(calls)]
                i += 1
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, args)
                    if result.is_error:
                        errors.append(f"{tool}: {result.content[0].text[:200]}")  # type: ignore[union-attr]
                except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the run
                    errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                latencies.append(time.perf_counter() - started)

    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for n in range(clients):
            group.start_soon(client_task, n)
    elapsed = time.monotonic() - started
    ms = [1000 * seconds for seconds in latencies] or [0.0]
    return {"requests": len(latencies), "rps": len(latencies) / elapsed, "p50": percentile(ms, 0.5),
            "p95": percentile(ms, 0.95), "p99": percentile(ms, 0.99), "errors": len(errors), "first_errors": errors[:3]}


async def warm(base: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    async with session(base) as client:
        for tool, args in calls:
            await client.call_tool(tool, args)


def load_env(corpus: str, redis_url: str | None, models: bool, index_dir: str) -> dict[str, str]:
    env = server_env(MCP_INDEX_DIR=index_dir, MCP_LOAD_MODELS="true" if models else "false")
    if redis_url:
        env["MCP_REDIS_URL"] = redis_url
    return env


def load_table(args: argparse.Namespace) -> None:
    print(f"load: {args.clients} clients x {args.duration:g} s, mixed tools on {len(DOCS)} corpus documents, "
          f"{'real' if args.models else 'fake'} embeddings")
    print(f"{'workers':>7} {'backend':>8} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'errors':>6}")
    with corpus_server() as corpus:
        calls = mixed_calls(corpus)
        for workers in args.workers:
            for backend in args.backends:
                with contextlib.ExitStack() as stack:
                    url = stack.enter_context(redis_server()) if backend == "redis" else None
                    index_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rag-load-"))
                    base, _ = stack.enter_context(mcp_server(workers, load_env(corpus, url, args.models, index_dir)))
                    anyio.run(warm, base, calls)
                    r = anyio.run(run_load, base, calls, args.clients, args.duration)
                print(f"{workers:>7} {backend:>8} {r['requests']:>9} {r['rps']:>8.1f} {r['p50']:>8.1f} "
                      f"{r['p95']:>8.1f} {r['p99']:>8.1f} {r['errors']:>6}", flush=True)
                for line in r["first_errors"]:
                    print(f"        error: {line}")


async def burst(base: str, keys: list[str], per_key: int) -> tuple[int, int, int, set[int]]:
    """(allowed, refused by the global bucket, other errors, worker pids that allowed one)."""
    allowed = refused = other = 0
    pids: set[int] = set()

    ready = 0
    go = anyio.Event()
    count = len(keys) * per_key

    async def one(key: str) -> None:
        nonlocal allowed, refused, other, ready
        async with session(base, key, keepalive=False) as client:
            await client.list_tools()  # the client validates results against these schemas
            ready += 1
            if ready == count:
                go.set()
            await go.wait()  # every session is open: the calls leave together
            result = await client.call_tool("get_system_health", {})
        body = payload(result)  # errors carry their JSON as text only
        if not result.is_error:
            allowed += 1
            pids.add(int(body["worker"]["pid"]))
        elif body.get("code") == "RATE_LIMITED" and "global" in str(body.get("error")):
            refused += 1
        else:
            other += 1

    async with anyio.create_task_group() as group:
        for _ in range(per_key):
            for key in keys:
                group.start_soon(one, key)
    return allowed, refused, other, pids


def limits_check(args: argparse.Namespace) -> None:
    rpm, multiplier, keys, per_key = 30, 2.0, ["k1", "k2", "k3", "k4"], 20
    budget = int(rpm * multiplier)
    total = len(keys) * per_key
    print(f"global limit: budget {budget} (rpm {rpm} x {multiplier:g}), {total} requests from {len(keys)} keys "
          f"at once, 4 workers; refill {budget / 60:g}/s")
    print(f"{'backend':>8} {'allowed':>8} {'refused':>8} {'other':>6} {'workers':>8} {'seconds':>8}  verdict")
    with corpus_server() as corpus:
        for backend in ("memory", "redis"):
            with contextlib.ExitStack() as stack:
                url = stack.enter_context(redis_server()) if backend == "redis" else None
                index_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rag-limits-"))
                env = {**load_env(corpus, url, False, index_dir), "MCP_RATE_LIMIT_RPM": str(rpm),
                       "MCP_GLOBAL_RATE_MULTIPLIER": str(multiplier), "MCP_API_KEYS": ",".join(keys)}
                base, _ = stack.enter_context(mcp_server(4, env))
                started = time.monotonic()
                allowed, refused, other, pids = anyio.run(burst, base, keys, per_key)
                elapsed = time.monotonic() - started  # an upper bound: includes opening the sessions
            refill = int(elapsed * budget / 60)
            exact = allowed == budget and refused == total - budget and other == 0
            verdict = "exact" if exact else (
                f"within refill (+{refill})" if budget <= allowed <= budget + refill and other == 0 else "NOT held")
            print(f"{backend:>8} {allowed:>8} {refused:>8} {other:>6} {len(pids):>8} {elapsed:>8.2f}  {verdict}",
                  flush=True)


def memory_report(args: argparse.Namespace) -> None:
    workers = max(args.workers)
    with tempfile.TemporaryDirectory(prefix="rag-mem-") as index_dir, corpus_server() as corpus, \
            mcp_server(workers, load_env(corpus, None, True, index_dir)) as (base, proc):
        anyio.run(warm, base, mixed_calls(corpus))
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        rss = {p.pid: p.memory_info().rss / 2**20 for p in tree}
        worker_pids = {p.pid for p in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(p.cmdline())}
        worker_pids = worker_pids or {proc.pid}  # one worker: uvicorn serves in the main process
    print(f"memory, real models, {workers} workers, after one pass over the mix:")
    for pid in sorted(worker_pids):
        print(f"  worker {pid}: {rss[pid]:.0f} MB RSS")
    print(f"  whole process tree ({len(tree)} processes: supervisor, workers, parser pools): "
          f"{sum(rss.values()):.0f} MB RSS")


HOST_DOCS = ["docs/txt/norwich-city.txt", "docs/pdf/multi_page.pdf", "docs/txt/UDHR_first_article_all.txt"]


async def first_call(base: str, url: str) -> float:
    async with session(base) as client:
        started = time.perf_counter()
        result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": QUERIES[0]})
        elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(result.content[0].text[:300])  # type: ignore[union-attr]
    return elapsed


async def clear(bases: list[str]) -> None:
    for base in bases:
        async with session(base) as client:
            await client.call_tool("manage_cache", {"action": "clear"})


def hosts_table(args: argparse.Namespace) -> None:
    import redis

    print(f"{args.hosts} hosts, one Redis, real models; median of {args.runs} runs, every cache cleared between runs")
    print(f"{'document':<34} {'A cold build s':>14} {'B first call s':>14} {'B / A':>7} {'index bytes':>12}")
    with corpus_server() as corpus, redis_server() as url, contextlib.ExitStack() as stack:
        bases = []
        for _ in range(args.hosts):
            index_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rag-hosts-"))
            # a cold call builds the whole index in the call: the time another host saves
            env = {**load_env(corpus, url, True, index_dir), "MCP_INDEX_STORE": "redis",
                   "MCP_PROGRESSIVE_BUDGET": "100000"}
            bases.append(stack.enter_context(mcp_server(1, env))[0])
        client = redis.Redis.from_url(url)
        for doc in HOST_DOCS:
            cold, loaded, size = [], [], 0
            for _ in range(args.runs):
                anyio.run(clear, bases)
                cold.append(anyio.run(first_call, bases[0], f"{corpus}/{doc}"))
                loaded.append(min(anyio.run(first_call, base, f"{corpus}/{doc}") for base in bases[1:]))
                size = sum(int(client.memory_usage(key) or 0) for key in client.keys("rag:default:index:v1:e:*"))
            a, b = statistics.median(cold), statistics.median(loaded)
            print(f"{doc:<34} {a:>14.2f} {b:>14.3f} {b / a:>7.3f} {size:>12}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--duration", type=float, default=20)
    parser.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4])
    parser.add_argument("--backends", type=lambda s: s.split(","), default=["memory", "redis"])
    parser.add_argument("--models", action="store_true", help="load the real embedding models")
    parser.add_argument("--limits", action="store_true", help="only the global rate-limit check")
    parser.add_argument("--memory", action="store_true", help="only the memory-per-worker report")
    parser.add_argument("--hosts", type=int, default=0, help="cold build on one host vs load on the others (>= 2)")
    parser.add_argument("--runs", type=int, default=3, help="runs per document with --hosts")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"corpus not found at {CORPUS} (set RAG_CORPUS_DIR)")
    if args.limits:
        limits_check(args)
    elif args.memory:
        memory_report(args)
    elif args.hosts >= 2:
        hosts_table(args)
    else:
        load_table(args)


if __name__ == "__main__":
    main()
