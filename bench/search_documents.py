"""search_documents on financebench-dev: one search over all 12 filings, its cold time, shelves warm and cold.

    .venv/bin/python bench/search_documents.py [--index-dir DIR] [--questions N]
    .venv/bin/python bench/search_documents.py --cold [--runs 2] [--set skewed|even]
    .venv/bin/python bench/search_documents.py --shelves --index-dir DIR [--questions 15] [--baseline /work/main]
                                               [--pool 70] [--build-only]
    .venv/bin/python bench/search_documents.py --cold-shelf 20 [--index-dir EMPTY_DIR] [--first-only]

Quality (default): a real server process, ``../shared/corpus/qa/financebench-dev/docs`` served on
127.0.0.1. Every question goes to ``search_documents`` over all 12 PDFs at once (the question
does not say which filing; top_k=10), and, as the single-document reference, to
``retrieve_chunks`` on the question's own filing (top_k=5). A hit needs the right document AND a
result on a gold evidence page (``location.pages``). Prints hit@5, hit@10, MRR@10, how often the
right filing comes first and how often it is among the top 10 at all; with ``--named``, for the
plain questions and for the same questions naming their document (``questions_named.jsonl``).
Nothing is cached across runs except the index folder when ``--index-dir`` is given (documents
are still downloaded and parsed). A big filing's first search answers from a partial index: the
questions wait until every background build has ended.

Cold (``--cold``): five filings, each searched alone (``search_documents`` with one URL) and then
all five in one call, each measurement on a fresh server process with an empty index folder (the
time to the first answer: a big filing answers from a partial index, ``documents[].index``).
Prints the medians and the ratio of the 5-document call to the slowest single document (goal
<= 1.3), with the sum of the single times (what one after another would cost).

Shelves (``--shelves``): the filings of financebench-dev and -dev2 (~35 PDFs), with ``--pool N`` filled up to N
documents with the corpus's other documents (docs/, wild-dev/, largest first; those that fail are left out), on a
running server whose index folder (``--index-dir``, kept between runs: the first run, or ``--build-only``, builds
every index, minutes per 10-K) holds them all. Each server first searches every document once (its download and
index become known), then each question goes to ``search_documents`` over four shelves: its own filing and 19 others
drawn from the pool (anew per question, the same draws for every server), a fixed 20, the 12 dev filings and its
filing with 49 others drawn (``--big``; within the server's maxItems). With ``--baseline CHECKOUT`` a second server
runs that checkout's code on the same index folder and the calls alternate between the two, so the machine's load
falls on both alike. Prints warm p50/p95 per server and shelf, the GETs the file server answered after the warm-up
(in brackets those answered 304 Not Modified: a conditional request once a URL is older than
MCP_REVALIDATE_AFTER_S), the servers' peak RSS (the server process, and with its parser workers), hit@5 (the right
filing on a gold page) and how often the right filing comes first, on the questions whose filing the shelf holds.

Cold shelf (``--cold-shelf N``): N filings drawn with ``--seed``, never seen (a fresh index folder), one call: the
time to its first answer (the documents not ready by then are reported TIMEOUT and go on loading), to every index
complete, the progress notifications, and the LangChain reference's serial cold build of the same files.

The questions are CC BY-NC and stay in ../shared: nothing here copies them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import random
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
    percentile,
    qa_set,
)
from bench.servers import (  # noqa: E402
    FileServer,
    RssSampler,
    call_tool,
    mcp_session,
    payload,
    server_env,
    server_process,
    wait_for_builds,
)

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
            async with mcp_session(mcp) as client:  # big filings answered from partial indexes: built first
                await wait_for_builds(client)
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


SHELF_SETS = ("financebench-dev", "financebench-dev2")
# a pool beyond the filings: the corpus's other documents, largest first (images left out: OCR is not a shelf's
# reading; the README and manifest describe the folders)
OTHER_FOLDERS = {"docs": "docs", "wild": "wild-dev/files"}
NOT_SHELVED = {".png", ".jpg", ".jpeg", ".gif", ".tif", ".tiff", ".bmp", ".webp"}


def other_documents() -> list[tuple[str, Path]]:
    """(link name, file) of every document under the corpus's docs/ and wild-dev/ that is not a filing, one per
    content (wild-dev repeats some of docs/), largest first."""
    corpus, seen, out = QA.parent, set(), []
    files = [(prefix, path) for prefix, folder in OTHER_FOLDERS.items() for path in (corpus / folder).rglob("*")
             if path.is_file() and path.suffix.lower() not in NOT_SHELVED and path.name != "README.md"]
    for prefix, path in sorted(files, key=lambda pair: -pair[1].stat().st_size):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            out.append((f"{prefix}__{path.parent.name}__{path.name}", path))
    return out


class Shelved:
    """One server under measurement: its file server (to count what it downloads), its latencies,
    its quality figures (over the questions whose filing the shelf holds) and its peak RSS."""

    def __init__(self, name: str, mcp: str, files: FileServer, rss: RssSampler) -> None:
        self.name, self.mcp, self.files, self.rss = name, mcp, files, rss
        self.seconds: dict[str, list[float]] = {}
        self.ranks: dict[str, list[int | None]] = {}
        self.first: dict[str, int] = {}
        self.chars: dict[str, list[int]] = {}
        self.gets_after_warmup = 0
        self.max_documents = 0

    async def ask(self, shelf: str, names: list[str], question: dict[str, Any], own: str) -> None:
        urls, doc_url = [self.files.url(n) for n in names], self.files.url(own)
        started = time.perf_counter()
        found = await call(self.mcp, "search_documents", {"document_urls": urls, "query": question["question"],
                                                         "top_k": 10})
        self.seconds.setdefault(shelf, []).append(time.perf_counter() - started)
        self.chars.setdefault(shelf, []).extend(len(r["text"]) for r in found["results"][:5])
        if own not in names:  # a fixed shelf without the question's filing: timed, not scored
            return
        pages = {e["page"] for e in question["evidence"]}
        self.ranks.setdefault(shelf, []).append(first_hit(found["results"], doc_url, pages))
        self.first[shelf] = self.first.get(shelf, 0) + bool(
            found["results"] and found["results"][0]["document_url"] == doc_url)


async def _warm_up(servers: list[Shelved], names: list[str], pool: int) -> list[str]:
    """Every document searched once, alone (built if the index folder misses it: a big one answers from a
    partial index, so its background build is waited for), by every server in turn: none stays idle
    long enough for its idle trim (MCP_IDLE_TRIM_SECONDS) while another warms up. A filing must answer; another
    document that fails on a server (encrypted, corrupt, no text) is left out, until ``pool`` answered.
    Returns the documents kept."""
    kept = []
    for name in names:
        if len(kept) >= pool:
            break
        statuses = []
        for server in servers:
            try:
                body = await call(server.mcp, "search_documents", {"document_urls": [server.files.url(name)],
                                                                   "query": "total revenue", "top_k": 1})
            except Exception as exc:  # noqa: BLE001 - the tool's error (its only document failed), in a task group's group
                statuses.append({"status": "error", "error": str(exc)[:200]})
                continue
            statuses.append(body["documents"][0])
        failed = [status for status in statuses if status["status"] != "ok"]
        if failed and "__" not in name:
            raise RuntimeError(f"{name} failed: {failed}")
        if not failed:
            kept.append(name)
        print(f"  {len(kept)}/{pool} {name}: {'left out, ' + str(failed[0].get('error'))[:80] if failed else 'ok'}",
              flush=True)
    for server in servers:
        async with mcp_session(server.mcp) as client:
            # a document not indexed yet answered from a partial index: its complete build ends first
            await wait_for_builds(client)
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        server.max_documents = tools["search_documents"].input_schema["properties"]["document_urls"]["maxItems"]
        server.gets_after_warmup = server.files.gets
    return kept


def _shelf_folder(folder: Path, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Links in ``folder`` to the filings (and, with --pool, the other documents in the order they are tried);
    returns (filings, others)."""
    filings = []
    for qa in SHELF_SETS:
        for pdf in (qa_set(qa) / "docs").glob("*.pdf"):
            if args.docs is None or (args.docs / pdf.name).exists():
                os.symlink(pdf, folder / pdf.name)
                filings.append(pdf.name)
    if args.filings:  # the smallest ones (an index folder still being built holds those first)
        filings = sorted(filings, key=lambda n: (folder / n).stat().st_size)[: args.filings]
    others = []
    if args.pool > len(filings):
        for link, path in other_documents():
            if args.others_max_mb is not None and path.stat().st_size > args.others_max_mb * 2**20:
                continue
            os.symlink(path, folder / link)
            others.append(link)
    return sorted(filings), others


async def shelves(args: argparse.Namespace) -> None:
    questions = [q for qa in SHELF_SETS for q in jsonl(qa_set(qa) / "questions.jsonl")]
    dev = {p.name for p in (qa_set("financebench-dev") / "docs").glob("*.pdf")}
    with tempfile.TemporaryDirectory(prefix="bench-shelves-docs-") as docs:
        filings, others = _shelf_folder(Path(docs), args)
        questions = [q for q in questions if Path(q["doc"]).name in filings]
        asked = random.Random(args.seed).sample(questions, min(args.questions, len(questions)))
        codes = {"this": Path(__file__).resolve().parent.parent}
        if args.baseline and not args.build_only:
            codes["baseline"] = args.baseline
        env = {**SERVER_ENV, "MCP_INDEX_DIR": str(args.index_dir)}
        if args.memory_budget_mb is not None:  # shelves that outgrow what a worker keeps in memory
            env["MCP_MEMORY_BUDGET_MB"] = str(args.memory_budget_mb)
        with contextlib.ExitStack() as stack:
            measured = []
            for name, code in codes.items():
                files = stack.enter_context(FileServer(Path(docs)))
                process = stack.enter_context(server_process(env=env, code=code, ready_timeout=600))
                rss = stack.enter_context(RssSampler(process.process.pid))
                measured.append(Shelved(name, process.mcp_url, files, rss))
            names = await _warm_up(measured, filings + others, max(args.pool, len(filings)))
            if args.build_only:
                print(f"index folder {args.index_dir} holds {len(names)} documents")
                return
            await _ask_shelves(args, measured, names, asked, sorted(dev & set(names)))
    _report(measured, names, filings)


async def _ask_shelves(args: argparse.Namespace, measured: list[Shelved], names: list[str],
                       asked: list[dict[str, Any]], dev: list[str]) -> None:
    """Per question, every shelf on every server in turn (the same shelves for all): one drawn from the pool
    with the question's filing, a fixed one (the asked questions' filings, filled up once from the pool), the
    12 dev filings, and a bigger one drawn with the question's filing (--big, within the servers' limit)."""
    print(f"{len(names)} documents, {len(asked)} questions; warm-up done, load average {load_average()}",
          flush=True)
    size, big = min(args.shelf, len(names)), min(args.big, len(names), *(s.max_documents for s in measured))
    owns = list(dict.fromkeys(Path(q["doc"]).name for q in asked))[:size]
    fixed = owns + random.Random(args.seed).sample([n for n in names if n not in owns], size - len(owns))
    for i, question in enumerate(asked):
        own = Path(question["doc"]).name
        draw = random.Random(args.seed * 1000 + i)
        shelves = {f"drawn {size} of {len(names)}": [own, *draw.sample([n for n in names if n != own], size - 1)],
                   f"fixed {size}": fixed, f"{len(dev)} dev filings": dev,
                   f"drawn {big} in one call": [own, *draw.sample([n for n in names if n != own], big - 1)]}
        for label, shelf in shelves.items():
            for server in measured:  # the same shelf for every server, one after the other
                await server.ask(label, shelf, question, own)
        print(f"  question {i + 1}: " + "; ".join(f"{s.name} " + " ".join(f"{v[-1]:.2f}" for v in s.seconds.values())
                                                   for s in measured) + f" (load {load_average()})", flush=True)


def _report(measured: list[Shelved], names: list[str], filings: list[str]) -> None:
    print(f"\nload average {load_average()} at the end; {os.cpu_count()} cores; {len(names)} documents indexed, "
          f"{len(set(names) & set(filings))} of them filings\n")
    print("| server | shelf | calls | warm p50 s | warm p95 s | scored | hit@5 | right filing first | characters per "
          "result (top 5) | GETs after the warm-up (304s) | peak RSS GB: server / process tree |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in measured[0].seconds:
        for server in measured:
            seconds, ranks = server.seconds[label], server.ranks.get(label, [])
            again = f"{server.files.gets - server.gets_after_warmup} ({server.files.not_modified})"
            print(f"| {server.name} | {label} | {len(seconds)} | {statistics.median(seconds):.2f} | "
                  f"{percentile(seconds, 0.95):.2f} | {len(ranks)} | {hit_rate(ranks, 5) if ranks else 0:.3f} | "
                  f"{server.first.get(label, 0) / max(len(ranks), 1):.3f} | "
                  f"{statistics.mean(server.chars[label] or [0]):.0f} | {again} | "
                  f"{server.rss.peak / 2**30:.2f} / {server.rss.peak_tree / 2**30:.2f} |")
    for server in measured:
        print(f"\n{server.name}: seconds "
              + "; ".join(f"{label}: " + " ".join(f"{s:.1f}" for s in seconds)
                          for label, seconds in server.seconds.items()), end="")
    print()


async def _every_index(client: Any, files: FileServer, names: list[str]) -> float:
    """Seconds until every document of a cold shelf has its complete index: the documents a first answer left
    loading in the background (its cold wait) and the background builds; each searched again once loaded."""
    started = time.perf_counter()
    while True:
        await wait_for_builds(client, poll=1.0)
        body = await call_tool(client, "search_documents", {"document_urls": [files.url(n) for n in names],
                                                            "query": "total revenue", "top_k": 1})
        if all(d["status"] == "ok" and d.get("index", "complete") == "complete" for d in body["documents"]):
            return time.perf_counter() - started
        await asyncio.sleep(1.0)


async def cold_shelf(args: argparse.Namespace) -> None:
    """A shelf of filings never seen (a fresh index folder): one search_documents call over all of them, the
    time to its answer (big filings from partial indexes) and until every index is complete, the progress
    notifications it sent; then the LangChain reference's serial cold build of the same files in this process."""
    from bench._langchain_ref import build_reference, embeddings

    paths = {pdf.name: pdf for qa in SHELF_SETS for pdf in (qa_set(qa) / "docs").glob("*.pdf")}
    names = sorted(random.Random(args.seed).sample(sorted(paths), min(args.cold_shelf, len(paths))))
    notes: list[tuple[float, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((time.perf_counter() - started, message or ""))

    with tempfile.TemporaryDirectory(prefix="bench-cold-shelf-") as docs, contextlib.ExitStack() as stack:
        # --index-dir keeps the indexes (a --shelves pool then needs them no more); it must start empty
        index_dir = str(args.index_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-cold-idx-")))
        if args.index_dir is not None and args.index_dir.exists() and any(args.index_dir.iterdir()):
            raise SystemExit(f"--cold-shelf needs a fresh index folder: {args.index_dir} is not empty")
        for name in names:
            os.symlink(paths[name], Path(docs) / name)
        with FileServer(Path(docs)) as files, \
                server_process(env={**SERVER_ENV, "MCP_INDEX_DIR": index_dir,
                                    **({"MCP_LOG_DIR": str(args.server_log)} if args.server_log else {})},
                               ready_timeout=600,
                               code=args.baseline) as server, \
                RssSampler(server.process.pid) as rss:
            megabytes = sum(paths[n].stat().st_size for n in names) / 2**20
            print(f"cold shelf of {len(names)} filings ({megabytes:.0f} MB), load average {load_average()}", flush=True)
            async with mcp_session(server.mcp_url, read_timeout=None) as client:
                started = time.perf_counter()
                result = await client.call_tool("search_documents", {
                    "document_urls": [files.url(n) for n in names], "query": "What was the total revenue?"},
                    progress_callback=on_progress)
                first = time.perf_counter() - started
                body = payload(result)
                if result.is_error or any(d["status"] != "ok" and d["error"]["code"] != "TIMEOUT"
                                          for d in body["documents"]):
                    raise RuntimeError(f"the cold shelf failed: {body}")
                partial = sum(d.get("index") == "partial" for d in body["documents"])
                ready = sum(d["status"] == "ok" for d in body["documents"])
                print(f"  first answer after {first:.1f} s ({ready} of {len(names)} ready, {partial} partial), "
                      f"load {load_average()}", flush=True)
                if args.first_only:
                    return
                complete = first + await _every_index(client, files, names)
            print(f"  every index complete after {complete:.1f} s, load {load_average()}", flush=True)
    if args.no_reference:
        return
    embeddings()  # loaded and warmed once before the clock, as a server loads its model
    reference = 0.0
    for name in names:
        reference += build_reference(paths[name]).timings.total_s
    print(f"  reference serial build {reference:.1f} s, load {load_average()}", flush=True)
    print(f"\n| cold shelf of {len(names)} filings, one call (load {load_average()} at the end; {os.cpu_count()} "
          "cores) | seconds |\n|---|---:|")
    print(f"| first answer (goal <= 60 s; {ready} of {len(names)} ready, {partial} of them from a partial index) "
          f"| **{first:.1f}** |")
    print(f"| every index complete | {complete:.1f} |")
    print(f"| LangChain reference, serial build of the same files | {reference:.1f} |")
    print(f"| ratio complete / reference (goal <= 0.5) | **{complete / reference:.2f}** |")
    print(f"| progress notifications during the call (first after) | {len(notes)} "
          f"({notes[0][0] if notes else float('nan'):.1f} s) |")
    print(f"| peak RSS GB, server / process tree | {rss.peak / 2**30:.2f} / {rss.peak_tree / 2**30:.2f} |")
    print("\nfilings: " + ", ".join(names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-dir", type=Path, help="reuse this index folder across runs (quality mode)")
    parser.add_argument("--named", action="store_true",
                        help="also ask each question as it names its document (questions_named.jsonl)")
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions (--shelves: N drawn, "
                        "15 if not given)")
    parser.add_argument("--cold", action="store_true", help="measure cold time instead of quality")
    parser.add_argument("--set", choices=sorted(SETS), default="skewed", help="the five documents of --cold")
    parser.add_argument("--runs", type=int, default=1, help="runs of --cold (medians)")
    parser.add_argument("--cold-shelf", type=int, default=0, help="a cold shelf of N filings (drawn with --seed) in "
                        "one call on a fresh index folder, against the reference's serial build")
    parser.add_argument("--first-only", action="store_true", help="--cold-shelf: stop at the first answer")
    parser.add_argument("--no-reference", action="store_true", help="--cold-shelf: no reference build")
    parser.add_argument("--server-log", type=Path, help="--cold-shelf: the server's log folder (MCP_LOG_DIR)")
    parser.add_argument("--others-max-mb", type=float, help="--pool: leave out other documents larger than this")
    parser.add_argument("--shelves", action="store_true", help="warm shelves of 20 and of every filing")
    parser.add_argument("--baseline", type=Path, help="--shelves: also a server on this checkout's code; "
                        "--cold-shelf: the server on this checkout's code instead")
    parser.add_argument("--seed", type=int, default=47, help="--shelves: the questions' and shelves' draws")
    parser.add_argument("--shelf", type=int, default=20, help="--shelves: documents per drawn and fixed shelf")
    parser.add_argument("--big", type=int, default=50, help="--shelves: documents per bigger drawn shelf")
    parser.add_argument("--pool", type=int, default=0, help="--shelves: index this many documents, the filings "
                        "first, then the corpus's other documents, largest first (docs/, wild-dev/)")
    parser.add_argument("--build-only", action="store_true", help="--shelves: only fill the index folder (one server)")
    parser.add_argument("--filings", type=int, default=0, help="--shelves: only the N smallest filings")
    parser.add_argument("--docs", type=Path, help="--shelves: only the filings this folder names (e.g. those whose "
                        "index the folder already holds)")
    parser.add_argument("--memory-budget-mb", type=int, help="--shelves: MCP_MEMORY_BUDGET_MB of every server")
    args = parser.parse_args()
    qa_set("financebench-dev")
    if args.cold_shelf:
        asyncio.run(cold_shelf(args))
        return
    if args.shelves:
        if args.index_dir is None:
            parser.error("--shelves needs --index-dir (kept between runs: the first run builds every index)")
        args.questions = args.questions or 15
        asyncio.run(shelves(args))
        return
    asyncio.run(cold(args) if args.cold else quality(args))


if __name__ == "__main__":
    main()
