"""Main-content extraction of web pages: the article against the text people marked as the article.

    .venv/bin/python bench/web_extraction.py [--pages DIR] [--runs 3] [--mcp] [--show]

On ``../shared/corpus/web/articles-dev`` (or ``--pages``: any folder laid out the same way,
``html/<id>.html`` and ``ground-truth.json``), each page is read as ``view="main"`` (the default)
and ``view="full"`` (the whole cleaned page, as before main-content extraction). The metric is the
set's README's: word 4-gram shingles (tokens ``\\w+``, multiset overlap), per page precision =
shared / returned and recall = shared / gold, each averaged over the pages, F1 from the two means.
Also: text returned per article (characters returned / characters of the gold article, median
and p90), how many pages fell back to the whole page, how many images were written as their alt
text (``[Image: ...]``; the gold leaves alt text out, so each costs precision), and the processor's
time per page (median of ``--runs``, in process through the registry, language detection off;
wall-clock and CPU time, both views in the same run: on shared cores the CPU time and the ratio
are the stable figures).
``--mcp`` reads the pages through ``process_document`` over MCP from a real server (pages served
on 127.0.0.1) instead of in process. ``--show`` prints every page's figures.

Goals (dev pages): F1 >= 0.96, precision >= 0.95, recall >= 0.97, median text returned <= 1.1x
the article, median extraction time <= 50 ms per page.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import load_average, percentile, table  # noqa: E402

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "web" / "articles-dev"
_WORD = re.compile(r"\w+")
VIEWS = ("main", "full")


def shingles(text: str) -> Counter[tuple[str, ...]]:
    words = _WORD.findall(text)
    return Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))


@dataclass(frozen=True, kw_only=True, slots=True)
class Page:
    id: str
    precision: float
    recall: float
    returned: float  # characters returned / characters of the gold article
    ms: float
    cpu_ms: float
    extraction: str
    images: int  # images written as their alt text


def score(page_id: str, text: str, gold: str, ms: float, cpu_ms: float, extraction: str) -> Page:
    got, want = shingles(text), shingles(gold)
    shared = sum((got & want).values())
    return Page(id=page_id, precision=shared / sum(got.values()) if got else 0.0,
                recall=shared / sum(want.values()) if want else 1.0,
                returned=len(text) / max(len(gold), 1), ms=ms, cpu_ms=cpu_ms, extraction=extraction,
                images=text.count("[Image: "))


Read = tuple[str, float, float, str]  # (text, ms, CPU ms, extraction)


def in_process(pages: dict[str, bytes], view: str, runs: int) -> dict[str, Read]:
    from mcp_server.processors import DocumentInput, ProcessOptions, process_document

    options = ProcessOptions(html_view=view, detect_language=False)  # type: ignore[arg-type]
    out = {}
    for page_id, data in pages.items():
        times, cpu = [], []
        for _ in range(runs):
            started, started_cpu = time.perf_counter(), time.process_time()
            doc = process_document(DocumentInput(data=data, doc_type="html", filename=f"{page_id}.html"), options)
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
        out[page_id] = (doc.content, statistics.median(times), statistics.median(cpu),
                        str(doc.metadata.get("extraction", "")))
    return out


def over_mcp(folder: Path, ids: list[str], views: tuple[str, ...]) -> dict[str, dict[str, Read]]:
    from bench.servers import FileServer, mcp_session, server_env, server_process, timed_call

    async def read_all(mcp_url: str, files: FileServer) -> dict[str, dict[str, Read]]:
        out: dict[str, dict[str, Read]] = {view: {} for view in views}
        async with mcp_session(mcp_url) as session:
            for view in views:
                for page_id in ids:
                    args = {"document_url": files.url(f"html/{page_id}.html"), "view": view}
                    ms, body = await timed_call(session, "process_document", args)
                    out[view][page_id] = (str(body["content"]), ms, float("nan"),
                                          str(body["metadata"].get("extraction", "")))
        return out

    with FileServer(folder) as files, server_process(env=server_env(MCP_LOAD_MODELS="false")) as server:
        return asyncio.run(read_all(server.mcp_url, files))


def summary(name: str, pages: list[Page]) -> list[object]:
    precision = statistics.mean(p.precision for p in pages)
    recall = statistics.mean(p.recall for p in pages)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    returned = [p.returned for p in pages]
    whole = sum(1 for p in pages if p.extraction == "full")
    return [name, f"{f1:.3f}", f"{precision:.3f}", f"{recall:.3f}", f"{statistics.median(returned):.2f}x",
            f"{percentile(returned, 0.9):.2f}x", f"{statistics.median(p.ms for p in pages):.1f}",
            f"{statistics.median(p.cpu_ms for p in pages):.1f}", whole, sum(p.images for p in pages)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=Path, default=DEV, help="folder with html/ and ground-truth.json")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per page and view (in process)")
    parser.add_argument("--mcp", action="store_true", help="through process_document over MCP")
    parser.add_argument("--show", action="store_true", help="every page's figures")
    args = parser.parse_args()
    gold = json.loads((args.pages / "ground-truth.json").read_text(encoding="utf-8"))
    ids = sorted(gold)
    read: dict[str, dict[str, Read]]
    if args.mcp:
        read = over_mcp(args.pages, ids, VIEWS)
    else:
        data = {page_id: (args.pages / "html" / f"{page_id}.html").read_bytes() for page_id in ids}
        read = {view: in_process(data, view, args.runs) for view in VIEWS}
    scored: dict[str, list[Page]] = {}
    for view in VIEWS:
        scored[view] = []
        for page_id in ids:
            text, ms, cpu_ms, extraction = read[view][page_id]
            scored[view].append(score(page_id, text, gold[page_id]["articleBody"], ms, cpu_ms, extraction))
    rows = [summary(f"view={view}" + (" (whole page)" if view == "full" else ""), scored[view]) for view in VIEWS]
    how = "over MCP (ms: the whole call)" if args.mcp else f"in process, median of {args.runs} runs"
    print(f"{len(ids)} pages from {args.pages}, {how}; load average {load_average()}")
    print(table(["reader", "F1", "precision", "recall", "text/article median", "p90", "ms/page median",
                 "CPU ms/page median", "whole page used", "images (alt text)"], rows))
    ratio = [m.ms / max(f.ms, 1e-6) for m, f in zip(scored["main"], scored["full"], strict=True)]
    print(f"time main / full, median over pages: {statistics.median(ratio):.2f}x")
    if args.show:
        show: Callable[[Page], list[object]] = lambda p: [  # noqa: E731
            p.id[:12], f"{p.precision:.2f}", f"{p.recall:.2f}", f"{p.returned:.2f}", f"{p.ms:.0f}", p.extraction]
        print(table(["page", "P", "R", "returned", "ms", "extraction"], [show(p) for p in scored["main"]]))


if __name__ == "__main__":
    main()
