"""Hidden-text flags on the real corpus, one checkout against another: what a change newly flags.

    .venv/bin/python bench/hidden_flags_diff.py [--base /work/main] [--runs 3] [--show-all]

Reads every document of ``../shared/corpus/docs`` (images left out: their OCR is not touched by
hidden-text rules) and every page of ``../shared/corpus/web/articles-dev`` (both views, as the docs'
web pages), in process (``processors.process_document``, ``hidden_text=flag``, language detection
off), once with ``--base``'s ``mcp_server`` and once with this checkout's, each in its own
interpreter. Prints every ``hidden_text`` and ``invisible_characters`` flag this checkout returns
that the base does not (document, view, reason, the flagged text), and those it no longer returns
(``gone:``); a person then reads each to say whether a reader of the page really does not see it.

Also the parse time of the 61 web pages (CPU seconds, the sum over pages of each page's median of
``--runs``, both views), base against this checkout: the cost of reading more of the style sheets.
On shared cores one pass of each is noise (0.94x-1.12x in two runs), so ``--rounds N`` then times
the web pages alone N more times, base and this alternating which goes first, and prints the median
of each side's totals.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
SKIP = {"jpg", "png"}


def _documents(web_only: bool = False) -> list[tuple[str, str, Path]]:
    """(id, format, path) of every document read; web pages twice, one per view, later."""
    out = []
    for folder in sorted((CORPUS / "docs").iterdir()) if not web_only else ():
        if folder.is_dir() and folder.name not in SKIP:
            out += [(f"docs/{folder.name}/{p.name}", folder.name, p) for p in sorted(folder.iterdir()) if p.is_file()]
    pages = CORPUS / "web" / "articles-dev" / "html"
    out += [(f"web/{p.name}", "html", p) for p in sorted(pages.glob("*.html"))]
    return out


def dump(code: str, out: str, runs: int, web_only: bool = False) -> None:
    """Process every document with ``code``'s mcp_server; write flags and web-page timings to ``out``."""
    sys.path.insert(0, code)
    from mcp_server.processors import DocumentInput, ProcessOptions, process_document

    flags: dict[str, list[list[str]]] = {}
    seconds: dict[str, float] = {}
    for doc_id, fmt, path in _documents(web_only):
        data = path.read_bytes()
        for view in (("main", "full") if fmt == "html" else ("main",)):
            options = ProcessOptions(hidden_text="flag", detect_language=False, html_view=view)
            times = []
            try:
                for _ in range(runs if doc_id.startswith("web/") else 1):
                    start = time.process_time()
                    doc = process_document(DocumentInput(data=data, doc_type=fmt, filename=path.name), options)
                    times.append(time.process_time() - start)
            except Exception as exc:  # a document this checkout cannot read: said, not hidden
                flags[f"{doc_id} [{view}]"] = [["error", type(exc).__name__, str(exc)[:80]]]
                continue
            seconds[f"{doc_id} [{view}]"] = statistics.median(times)
            flags[f"{doc_id} [{view}]"] = [
                [f.kind, f.reason, " ".join(doc.content[f.start:f.end].split())[:160]]
                for f in doc.flags if f.kind in ("hidden_text", "invisible_characters")]
    Path(out).write_text(json.dumps({"flags": flags, "seconds": seconds}), encoding="utf-8")


def _run(code: Path, runs: int, folder: Path, web_only: bool = False) -> dict[str, Any]:
    out = folder / f"{code.name}.json"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, __file__, "--dump", str(out), "--code", str(code), "--runs", str(runs),
                    *(["--web-only"] if web_only else [])], check=True, env=env)
    return json.loads(out.read_text(encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=str(ROOT.parent / "main"), help="the checkout to compare with")
    parser.add_argument("--runs", type=int, default=3, help="timed reads of each web page")
    parser.add_argument("--rounds", type=int, default=0, help="more timing rounds of the web pages alone")
    parser.add_argument("--web-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        dump(args.code, args.dump, args.runs, args.web_only)
        return 0
    with tempfile.TemporaryDirectory(prefix="hidden-diff-") as folder:
        base = _run(Path(args.base).resolve(), args.runs, Path(folder))
        this = _run(ROOT, args.runs, Path(folder))
        totals: dict[str, list[float]] = {"base": [], "this": []}
        for round_ in range(args.rounds):
            order = [("base", Path(args.base).resolve()), ("this", ROOT)]
            for side, code in order[::-1] if round_ % 2 else order:
                seconds = _run(code, args.runs, Path(folder), web_only=True)["seconds"]
                totals[side].append(sum(seconds.values()))
    new, gone, docs = 0, 0, set()
    for key in sorted(this["flags"]):
        before = {tuple(f) for f in base["flags"].get(key, [])}
        after = [tuple(f) for f in this["flags"][key]]
        added = [f for f in after if f not in before]
        for kind, reason, text in sorted(before - set(after)):
            print(f"{key}: gone: {kind} ({reason}): {text!r}")
        gone += len(before - set(after))
        for kind, reason, text in added:
            print(f"{key}: {kind} ({reason}): {text!r}")
        new += len(added)
        docs |= {key} if added else set()
    print(f"\n{len(this['flags'])} documents and views read; {new} new flags on {len(docs)}; {gone} gone")
    for view in ("main", "full"):
        pages = [k for k in this["seconds"] if k.startswith("web/") and k.endswith(f"[{view}]")]
        a = sum(base["seconds"].get(k, 0.0) for k in pages)
        b = sum(this["seconds"][k] for k in pages)
        print(f"web pages ({len(pages)}, view {view}): parse CPU {a:.2f} s base -> {b:.2f} s this ({b / a:.2f}x)")
    if args.rounds:
        a, b = statistics.median(totals["base"]), statistics.median(totals["this"])
        print(f"web pages, both views, {args.rounds} rounds alternating: parse CPU median {a:.2f} s base -> "
              f"{b:.2f} s this ({b / a:.2f}x); base {sorted(round(t, 2) for t in totals['base'])}, "
              f"this {sorted(round(t, 2) for t in totals['this'])}")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
