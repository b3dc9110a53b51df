"""Speed of read_document and verify_quote on a 250-page 10-K, through MCP against a real server process.

    .venv/bin/python bench/read_verify.py [--doc 3M_2022_10K.pdf] [--runs 3] [--quotes 60] [--pages 30]

Setup (not timed, except the first-ever verify_quote): a server with an empty index folder gets
one verify_quote (download, parse, quote index, and the search index that passage ids name: a
partial one at once, the complete one in the background), which is then awaited, so the timed
runs measure reading and verifying, not embedding.

Each run starts a fresh server process on that index folder (a restart: nothing in memory) and
measures, in this order:

  read cold      the first read_document(pages="1"): download and parse of the whole filing
                 (then per page of the filing);
  read warm      the whole filing read by cursor with max_tokens=4000 (per page of the filing),
                 and single pages (read_document(pages="N") for --pages random pages: p50);
  verify first   the first verify_quote: builds the document's quote index (the search index
                 comes from disk);
  verify warm    --quotes quotes (a third copied sentences: exact; a third with one word changed:
                 close; a third sentences of another filing: none): p50 and p95.

Each figure is the median over --runs runs. The load average is printed before and after:
the machine may be shared. Nothing here is asserted by the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import load_average, percentile, qa_set  # noqa: E402
from bench.servers import FileServer, mcp_session, server_env, server_process, timed_call, wait_for_builds  # noqa: E402

OTHER = "BOEING_2022_10K.pdf"  # sentences that are not in the measured filing


def load() -> str:
    return load_average(" / ", 2)


async def timed(session: Any, tool: str, **arguments: Any) -> tuple[float, dict[str, Any]]:
    return await timed_call(session, tool, arguments)


async def read_all(session: Any, url: str) -> tuple[float, list[dict[str, Any]]]:
    windows, cursor, total = [], None, 0.0
    while True:
        args: dict[str, Any] = {"document_url": url, "max_tokens": 4000}
        if cursor is not None:
            args["cursor"] = cursor
        elapsed, body = await timed(session, "read_document", **args)
        total += elapsed
        windows.append(body)
        cursor = body["next_cursor"]
        if cursor is None:
            return total, windows


def sentences(text: str, rng: random.Random, count: int) -> list[str]:
    found = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text)]
    found = [s for s in found if 8 <= len(s.split()) <= 40 and "|" not in s and "---" not in s]
    return rng.sample(found, min(count, len(found)))


def one_word_changed(sentence: str, rng: random.Random) -> str:
    words = sentence.split()
    choices = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 3]
    i = rng.choice(choices) if choices else 0
    words[i] = "zygote" if words[i] != "zygote" else "walrus"
    return " ".join(words)


async def setup(base: str, url: str, other_url: str) -> tuple[float, str, str]:
    async with mcp_session(f"{base}/mcp") as session:
        first, _ = await timed(session, "verify_quote", document_url=url, quote="Total net sales increased")
        await wait_for_builds(session, poll=2)
        _, ours = await read_all(session, url)
        _, theirs = await read_all(session, other_url)
    return first, "\n\n".join(w["text"] for w in ours), "\n\n".join(w["text"] for w in theirs)


async def one_run(base: str, url: str, quotes: list[tuple[str, str]], pages: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with mcp_session(f"{base}/mcp") as session:
        out["read_cold_ms"], first = await timed(session, "read_document", document_url=url, pages="1")
        assert first["cached"] is False, "the cold read found the document parsed already"
        out["read_all_ms"], windows = await read_all(session, url)
        out["windows"] = len(windows)
        single = [(await timed(session, "read_document", document_url=url, pages=str(p)))[0] for p in pages]
        out["read_page_p50_ms"] = statistics.median(single)
        out["verify_first_ms"], _ = await timed(session, "verify_quote", document_url=url, quote=quotes[0][1])
        by_kind: dict[str, list[float]] = {}
        matched: dict[str, list[str]] = {}
        for kind, quote in quotes:
            elapsed, body = await timed(session, "verify_quote", document_url=url, quote=quote)
            by_kind.setdefault(kind, []).append(elapsed)
            matched.setdefault(kind, []).append(body["match"])
        every = sorted(t for times in by_kind.values() for t in times)
        out["verify_p50_ms"] = statistics.median(every)
        out["verify_p95_ms"] = percentile(every, 0.95)
        out.update({f"verify_{kind}_p50_ms": statistics.median(times) for kind, times in by_kind.items()})
        out["matches"] = {kind: {m: found.count(m) for m in sorted(set(found))} for kind, found in matched.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--doc", default="3M_2022_10K.pdf")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quotes", type=int, default=60)
    parser.add_argument("--pages", type=int, default=30)
    args = parser.parse_args()
    import pymupdf

    docs = qa_set("financebench-dev") / "docs"
    with pymupdf.open(docs / args.doc) as pdf:
        page_count = pdf.page_count
    print(f"{args.doc}: {page_count} pages; load average (1/5/15 min) at start: {load()}")
    index_dir = tempfile.mkdtemp(prefix="bench-read-index-")
    env = server_env(MCP_INDEX_DIR=index_dir, MCP_RATE_LIMIT_RPM="100000", MCP_LOG_LEVEL="WARNING")
    files = FileServer(docs)
    url, other_url = files.url(args.doc), files.url(OTHER)
    rng = random.Random(25)
    try:
        with server_process(env=env) as (_, base):
            first_ever, text, other_text = asyncio.run(setup(base, url, other_url))
        third = max(args.quotes // 3, 1)
        copied = sentences(text, rng, 2 * third)
        quotes = [("exact", s) for s in copied[:third]] + [("close", one_word_changed(s, rng))
                                                           for s in copied[third:]]
        quotes += [("none", s) for s in sentences(other_text, rng, third)]
        rng.shuffle(quotes)
        pages = rng.sample(range(1, page_count + 1), min(args.pages, page_count))
        runs = []
        for run in range(args.runs):
            with server_process(env=env) as (_, base):
                runs.append(asyncio.run(one_run(base, url, quotes, pages)))
            print(f"run {run + 1}: {runs[-1]}", file=sys.stderr)
    finally:
        files.close()

    def med(name: str) -> float:
        return statistics.median(r[name] for r in runs)

    print(f"first-ever verify_quote (download, parse, quote index, partial search index): {first_ever:.0f} ms")
    print(f"\n| measure ({args.runs} runs, median; fresh server process per run) | result |")
    print("|---|---:|")
    print(f"| read_document cold: first call (download + parse {page_count} pages) | {med('read_cold_ms'):.0f} ms "
          f"= {med('read_cold_ms') / page_count:.1f} ms per page |")
    print(f"| read_document warm: whole filing by cursor, max_tokens=4000 ({runs[0]['windows']} calls) | "
          f"{med('read_all_ms'):.0f} ms = {med('read_all_ms') / page_count:.2f} ms per page |")
    print(f"| read_document warm: one page (pages=\"N\"), p50 of {len(pages)} | {med('read_page_p50_ms'):.1f} ms |")
    print(f"| verify_quote first call after the read (builds the quote index) | {med('verify_first_ms'):.0f} ms |")
    print(f"| verify_quote warm, p50 / p95 of {len(quotes)} | {med('verify_p50_ms'):.1f} / "
          f"{med('verify_p95_ms'):.1f} ms |")
    for kind in ("exact", "close", "none"):
        print(f"| verify_quote warm, {kind} quotes, p50 | {med(f'verify_{kind}_p50_ms'):.1f} ms |")
    print(f"\nmatches found (last run): {runs[-1]['matches']}")
    print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()
