"""Latency at every size, in one run: the MCP floor, warm retrieve_chunks and where its time goes,
cold first calls on small and mid-size filings against the LangChain reference, first answers on big
documents with the server's peak RSS.

    .venv/bin/python bench/latency.py [--sections warm,cold,big] [--rounds 5] [--queries 30]
                                      [--cold-runs 1] [--xquad en,de,es]

Every figure comes from a real ``python -m mcp_server`` process over streamable HTTP, through the
Python SDK's client (bench/servers.py's ``mcp_session``), with one client session held open as an agent
would. The machine is shared: compare the ratios measured within the run, and read the load average
printed beside every table.

  warm   the floor: p50 of ``detect_language`` on a short text and of ``get_system_health`` (a tool
         call that does almost nothing); warm ``retrieve_chunks`` p50/p95 on the Pfizer 10-Q
         (FinanceBench dev) and on the SQuAD articles (each question on its own), each query distinct (the server caches
         query vectors: a repeated query would skip the embedding). Rounds interleave the three, so
         load from elsewhere falls on all alike; the table gives the median of the per-round
         figures. Stages: the server's ``timings_ms`` (download = URL cache + sniff, index = lookup,
         embed = query vector, search = FAISS + BM25 + fusion), and the rest of the client's time
         (protocol, guard, validation, serialisation, thread hops). With --xquad en,de,es, also
         the XQuAD dev document of each language (its distinct questions): English goes to MiniLM,
         other languages to the multilingual model.
  cold   the first retrieve_chunks on each of five filings (ULTABEAUTY, AMCOR, MGM earnings, the BOEING
         10-K, the Pfizer 10-Q) on a running server with an empty index folder, next to the LangChain
         reference's cold build of the same file (bench/_langchain_ref.py) in this process; goal <= 0.7x.
         With --cold-runs N, a fresh server and index folder per run; the ratio is the median.
  big    the first answer on War and Peace and on the 872-page handbook (goal <= 3 s), each on a fresh
         server, and the server's peak RSS meanwhile (goal <= 1.2 GB); with --complete, until the
         complete index is built. Each run's line gives the first answer's CPU and hits (chunk, score),
         to check that two checkouts (--code) answer the same.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import (  # noqa: E402
    DOCS,
    financebench_questions,
    load_average,
    percentile,
    qa_set,
    squad_questions,
    xquad,
)
from bench.retrieval import (  # noqa: E402
    BIG,
    CODE,
    FINANCEBENCH,
    PDF_QUERY,
    ask,
    server,
    status,
    until_complete,
)
from bench.servers import FileServer, RssSampler, cpu_seconds, mcp_session, timed_call  # noqa: E402

TENQ = "Pfizer_2023Q2_10Q.pdf"
COLD = ["ULTABEAUTY_2023Q4_EARNINGS.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "MGMRESORTS_2022Q4_EARNINGS.pdf",
        "BOEING_2022_10K.pdf", TENQ]
# Distinct 10-Q questions: the FinanceBench ones about Pfizer, then one per metric and phrasing.
METRICS = ["total revenues", "net income", "research and development expenses", "cost of sales",
           "Comirnaty revenues", "Paxlovid revenues", "diluted earnings per share", "cash and equivalents",
           "long-term debt", "selling, informational and administrative expenses", "income tax provision",
           "acquired in-process research and development", "restructuring charges", "goodwill",
           "inventories", "dividends paid", "share repurchases", "operating cash flow",
           "revenues in the United States", "international revenues", "Eliquis revenues",
           "Prevnar family revenues", "Vyndaqel revenues", "Ibrance revenues", "amortization of intangibles",
           "other income", "total assets", "shareholders' equity", "contingencies and legal proceedings",
           "effective tax rate"]
PHRASINGS = ["What were Pfizer's {} in the second quarter of 2023?", "How did {} change year over year?",
             "Where does the 10-Q report {}?", "What drove the change in {} in the first six months?",
             "What is said about {} compared with 2022?", "Give the figure for {} as of July 2, 2023."]
FLOOR_TOOLS = {"detect_language": {"text": "hello"}, "get_system_health": {}}


def tenq_questions() -> list[str]:
    own = [q["question"] for q in financebench_questions() if q["doc"].endswith(TENQ)]
    return own + [p.format(m) for p in PHRASINGS for m in METRICS]


def squad_pairs() -> list[tuple[str, str]]:
    """(article, question) for every distinct answerable question, the two articles alternating."""
    per_article: dict[str, dict[str, None]] = {}
    for row in squad_questions():
        per_article.setdefault(Path(row["doc"]).name, {}).setdefault(row["question"], None)
    lists = [[(article, q) for q in questions] for article, questions in sorted(per_article.items())]
    return [pair for group in itertools.zip_longest(*lists) for pair in group if pair is not None]


def per_call(before: tuple[float, float], pid: int, calls: int) -> tuple[float, float]:
    """CPU ms per call since ``before`` (server process with its children, this process)."""
    return ((cpu_seconds(pid) - before[0]) * 1000 / calls, (time.process_time() - before[1]) * 1000 / calls)


def warm_section(rounds: int, queries: int, baseline: Path | None = None,
                 languages: Sequence[str] = ()) -> dict[str, float]:
    print(f"\n## warm (load average {load_average()} at the start)", flush=True)
    fb_files, squad_files = FileServer(FINANCEBENCH), FileServer(qa_set("squad-v2-small") / "docs")
    # (document URL, query) per call; every query distinct (a repeated one would skip the embedding)
    docs = {"10-Q": [(fb_files.url(TENQ), q) for q in tenq_questions()],
            "SQuAD": [(squad_files.url(article), q) for article, q in squad_pairs()]}
    xquad_files = FileServer(qa_set("xquad-dev")) if languages else None
    for lang in languages:  # one document per language; other languages go to the multilingual model
        assert xquad_files is not None
        questions = list(dict.fromkeys(q["question"] for q in xquad(lang)[1]))
        docs[f"XQuAD {lang}"] = [(xquad_files.url(f"{lang}/doc.txt"), q) for q in questions]
    for doc, calls in docs.items():
        if len(calls) < rounds * queries:
            raise SystemExit(f"{doc}: {len(calls)} distinct queries, fewer than --rounds x --queries")
    codes = {"this checkout": CODE[0]} | ({f"baseline {baseline}": baseline} if baseline is not None else {})
    floors: dict[tuple[str, str], list[float]] = {}
    warm: dict[tuple[str, str], list[list[float]]] = {}
    stages: dict[tuple[str, str], dict[str, list[float]]] = {}
    # CPU milliseconds per call of the server process and of this client process: on a busy machine
    # the wall clock waits for cores, the CPU time much less
    cpu: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        urls, pids = {}, {}
        for name, code in codes.items():  # every server runs throughout: rounds alternate between them
            index_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-latency-"))
            proc, urls[name] = stack.enter_context(server(index_dir, code))
            pids[name] = proc.pid

        async def run() -> None:
            async with contextlib.AsyncExitStack() as clients:
                sessions = {name: await clients.enter_async_context(mcp_session(url)) for name, url in urls.items()}
                for name, client in sessions.items():
                    for url in {url for calls in docs.values() for url, _ in calls}:  # build each index first
                        await client.call_tool("retrieve_chunks", {"document_url": url, "query": "warm-up"})
                    await until_complete(urls[name])
                    for tool, arguments in FLOOR_TOOLS.items():  # first calls pay one-off imports
                        await client.call_tool(tool, arguments)
                for r in range(rounds):
                    for name, client in sessions.items():
                        await one_round(name, client, r)

        async def one_round(name: str, client: Any, r: int) -> None:
            for tool, arguments in FLOOR_TOOLS.items():
                before = cpu_seconds(pids[name]), time.process_time()
                floors.setdefault((name, tool), []).append(statistics.median(
                    [(await timed_call(client, tool, arguments))[0] for _ in range(queries)]))
                cpu.setdefault((name, tool), []).append(per_call(before, pids[name], queries))
            for doc, calls in docs.items():
                before = cpu_seconds(pids[name]), time.process_time()
                times = []
                for n in range(queries):
                    url, query = calls[r * queries + n]
                    ms, body = await timed_call(client, "retrieve_chunks", {"document_url": url, "query": query})
                    times.append(ms)
                    server_ms = body["timings_ms"]
                    for stage, value in server_ms.items():
                        stages.setdefault((name, doc), {}).setdefault(stage, []).append(value)
                    stages[(name, doc)].setdefault("rest: client, protocol, guard, JSON, thread hops", []).append(
                        ms - sum(server_ms.values()))
                warm.setdefault((name, doc), []).append(times)
                cpu.setdefault((name, doc), []).append(per_call(before, pids[name], queries))
            print(f"  round {r + 1}, {name}: floor {floors[(name, 'detect_language')][-1]:.1f} ms, "
                  + ", ".join(f"{d} p50 {statistics.median(warm[(name, d)][-1]):.1f} ms" for d in docs)
                  + f" (load {load_average()})", flush=True)

        asyncio.run(run())
    fb_files.close()
    squad_files.close()
    if xquad_files is not None:
        xquad_files.close()
    print(f"\n| warm calls, {rounds} rounds x {queries} distinct queries, median of the rounds (load {load_average()} "
          "at the end) | p50 (ms) | p95 (ms) | p50 - floor (ms) | CPU ms per call: server / client |"
          "\n|---|---:|---:|---:|---:|")

    def cpu_text(key: tuple[str, str]) -> str:
        return " / ".join(f"{statistics.median(c[i] for c in cpu[key]):.1f}" for i in (0, 1))

    result = {}
    for name in codes:
        floor = min(statistics.median(floors[(name, tool)]) for tool in FLOOR_TOOLS)
        result[f"{name} floor"] = floor
        for tool in FLOOR_TOOLS:
            print(f"| {name}: floor, `{tool}` | {statistics.median(floors[(name, tool)]):.1f} | | | "
                  f"{cpu_text((name, tool))} |")
        for doc in docs:
            rounds_ = warm[(name, doc)]
            p50 = statistics.median(statistics.median(t) for t in rounds_)
            p95 = statistics.median(percentile(t, 0.95) for t in rounds_)
            result[f"{name} {doc}"] = p50
            print(f"| {name}: `retrieve_chunks`, {doc} | {p50:.1f} | {p95:.1f} | {p50 - floor:+.1f} | "
                  f"{cpu_text((name, doc))} |")
    columns = list(stages)
    print("\n| where a warm call's time goes (median ms) | " + " | ".join(f"{n}, {d}" for n, d in columns)
          + " |\n|---|" + "---:|" * len(columns))
    for stage in dict.fromkeys(s for d in stages.values() for s in d):
        print(f"| {stage} | " + " | ".join(
            f"{statistics.median(stages[c][stage]):.2f}" if stage in stages[c] else "" for c in columns) + " |")
    return result


def cold_section(runs: int, names: list[str]) -> None:
    from bench._langchain_ref import build_reference, embeddings

    print(f"\n## cold (load average {load_average()} at the start)", flush=True)
    embeddings()  # loaded and warmed once, before any cold build is timed (as a server loads its model)
    files = FileServer(FINANCEBENCH)
    rows: dict[str, list[tuple[float, float, float, dict[str, Any]]]] = {name: [] for name in names}
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-latency-cold-") as index_dir, \
                server(index_dir) as (proc, mcp_url):
            warm_up = FileServer(DOCS)  # the parser pool's first task starts its workers: not a document's cost
            asyncio.run(ask(mcp_url, warm_up.url("pdf/multi_page.pdf"), "warm-up"))
            warm_up.close()
            for name in names:
                cpu_before = cpu_seconds(proc.pid)
                seconds, body = asyncio.run(ask(mcp_url, files.url(name), PDF_QUERY))
                cpu = cpu_seconds(proc.pid) - cpu_before
                asyncio.run(until_complete(mcp_url))  # the next measurement starts on a quiet server
                reference = build_reference(FINANCEBENCH / name).timings.total_s
                rows[name].append((seconds, reference, cpu, body))
                print(f"  run {run + 1} {name}: {seconds:.2f} s ({status(body)}), reference {reference:.2f} s, "
                      f"ratio {seconds / reference:.2f} (load {load_average()})", flush=True)
    files.close()
    print(f"\n| cold first call, {runs} run(s) (load {load_average()} at the end) | chunks | server (s) "
          "| reference (s) | ratio (goal <= 0.7) | server stages (ms) |\n|---|---:|---:|---:|---:|---|")
    for name, measured in rows.items():
        seconds = statistics.median(m[0] for m in measured)
        reference = statistics.median(m[1] for m in measured)
        ratio = statistics.median(m[0] / m[1] for m in measured)
        body = measured[-1][3]
        stages = ", ".join(f"{k} {v:.0f}" for k, v in body["timings_ms"].items())
        print(f"| {name} | {body['total_chunks_indexed']} | {seconds:.2f} | {reference:.2f} | {ratio:.2f} | {stages} |")


def big_section(complete: bool) -> None:
    """Each big document on a fresh server (a background build of one must not slow the other's
    first answer); the peak RSS of the server process over both."""
    print(f"\n## big (load average {load_average()} at the start)", flush=True)
    files = FileServer(DOCS)
    rows, peak, children = [], 0, 0
    for name, (relative, query) in BIG.items():
        with tempfile.TemporaryDirectory(prefix="bench-latency-big-") as index_dir, \
                server(index_dir) as (proc, mcp_url), RssSampler(proc.pid) as rss:
            cpu_before = cpu_seconds(proc.pid)
            first, body = asyncio.run(ask(mcp_url, files.url(relative), query))
            cpu = cpu_seconds(proc.pid) - cpu_before
            waited = asyncio.run(until_complete(mcp_url)) if complete else float("nan")
        peak, children = max(peak, rss.peak), max(children, rss.peak_children)
        rows.append((name, body, first, cpu, waited, rss.peak))
        hits = [(r["chunk_index"], round(r["score"], 4)) for r in body["results"]]
        print(f"  {name}: first {first:.2f} s ({status(body)}), CPU {cpu:.2f} s, load {load_average()}; "
              f"hits (chunk, score) {hits}", flush=True)
    files.close()
    print(f"\n| first answer (load {load_average()} at the end) | chunks | first answer (s, goal <= 3) | CPU s | index "
          "| stages (ms) | complete after (s) | peak RSS (GB) |\n|---|---:|---:|---:|---|---|---:|---:|")
    for name, body, first, cpu, waited, rss_peak in rows:
        stages = ", ".join(f"{k} {v:.0f}" for k, v in body["timings_ms"].items())
        print(f"| {name} | {body['total_chunks_indexed']} | {first:.2f} | {cpu:.2f} | {status(body)} | {stages} "
              f"| {waited:.0f} | {rss_peak / 2**30:.2f} |")
    print(f"\npeak RSS of the server process {peak / 2**30:.2f} GB (goal <= 1.2; "
          f"{'with' if complete else 'without'} the complete builds); parser workers apart {children / 2**30:.2f} GB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="warm,cold,big")
    parser.add_argument("--rounds", type=int, default=5, help="warm: rounds (each a fresh set of queries)")
    parser.add_argument("--queries", type=int, default=30, help="warm: calls per tool and document per round")
    parser.add_argument("--cold-runs", type=int, default=1)
    parser.add_argument("--cold-docs", default=",".join(COLD), help="cold: comma-separated file names")
    parser.add_argument("--complete", action="store_true", help="big: also wait for each complete index (the peak "
                        "RSS then covers the complete builds)")
    parser.add_argument("--code", type=Path, default=ROOT, help="run the measured server from this checkout "
                        "(e.g. an export of the commit before a change); the default is this one")
    parser.add_argument("--xquad", default="", help="warm: also the XQuAD dev documents of these languages "
                        "(comma-separated, e.g. en,de,es)")
    parser.add_argument("--baseline", type=Path, help="warm: another checkout (e.g. /work/main) measured in the "
                        "same rounds, alternating with this one")
    args = parser.parse_args()
    sections = set(re.split(r"[,\s]+", args.sections.strip()))
    CODE[0] = args.code.resolve()
    print(f"latency over MCP streamable HTTP (Python SDK client); server code {CODE[0]}; {os.cpu_count()} cores, "
          f"load average {load_average()}")
    if "warm" in sections:
        warm_section(args.rounds, args.queries, args.baseline,
                     [lang for lang in args.xquad.split(",") if lang])
    if "cold" in sections:
        cold_section(args.cold_runs, [name for name in args.cold_docs.split(",") if name])
    if "big" in sections:
        big_section(args.complete)


if __name__ == "__main__":
    main()
