"""PDF parse speed against PyMuPDF's raw text extraction, per financebench-dev PDF.

    .venv/bin/python bench/pdf_parse.py [--runs 3] [--docs DIR] [--compare PATH.py]

For each PDF: pages, the baseline (``page.get_text()`` of every page, the fastest useful read
of a PDF, measured in the same run), the whole ``process_document`` call through the registry,
both in ms per page (median of ``--runs``), and their ratio. ``--compare`` times another
processor module as well (a file holding a ``PdfProcessor`` class, e.g. an older pdf.py saved
from git: ``git show REV:mcp_server/processors/pdf.py > /tmp/old_pdf.py``), once per PDF.
The last row is the median over the PDFs (the goal: <= 25 ms per page).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import QA  # noqa: E402
from mcp_server.processors import DocumentInput, ProcessOptions, process_document  # noqa: E402

DOCS = QA / "financebench-dev" / "docs"


def _raw_text(data: bytes) -> None:
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        for page in pdf:
            page.get_text()


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("compared_pdf", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--compare", help="a file with another PdfProcessor to time once per PDF")
    args = parser.parse_args()
    if not args.docs.is_dir():  # the QA sets are not carried in the repository (tests/corpus/README.md)
        raise SystemExit(f"QA set financebench-dev not found at {args.docs}: set RAG_CORPUS_DIR to a corpus "
                         "folder holding qa/financebench-dev")
    options = ProcessOptions(detect_language=False)
    compared = _load(args.compare).PdfProcessor() if args.compare else None

    header = f"{'pdf':<46} {'pages':>5} {'raw ms/p':>9} {'ours ms/p':>10} {'ratio':>6}"
    if compared is not None:
        header += f" {'compared ms/p':>14}"
    print(header)
    rows: list[tuple[float, float, float | None]] = []
    for path in sorted(args.docs.glob("*.pdf")):
        data = path.read_bytes()
        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            pages = pdf.page_count
        inp = DocumentInput(data=data, doc_type="pdf", filename=path.name)
        raw = _median_ms(lambda data=data: _raw_text(data), args.runs) / pages
        ours = _median_ms(lambda inp=inp: process_document(inp, options), args.runs) / pages
        other = None
        if compared is not None:
            other = _median_ms(lambda inp=inp: compared.process(inp, options), 1) / pages
        rows.append((raw, ours, other))
        line = f"{path.name:<46} {pages:>5} {raw:>9.1f} {ours:>10.1f} {ours / raw:>6.1f}"
        if other is not None:
            line += f" {other:>14.1f}"
        print(line, flush=True)
    raw_m = statistics.median(r[0] for r in rows)
    ours_m = statistics.median(r[1] for r in rows)
    line = f"{'median over PDFs':<46} {'':>5} {raw_m:>9.1f} {ours_m:>10.1f} {ours_m / raw_m:>6.1f}"
    if compared is not None:
        line += f" {statistics.median(r[2] or 0.0 for r in rows):>14.1f}"
    print(line)


if __name__ == "__main__":
    main()
