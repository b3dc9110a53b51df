"""Self-supervised heads for the learned ranker: a section's heading asked of a long document.

    .venv/bin/python scripts/ranker_sections.py            # builds bench/results/cache/sections/<mode>/heads.pkl
    .venv/bin/python scripts/ranker_sections.py --mode masked

What TAT-QA lacks is the long document: one report's many statements and notes, each under its title,
where the prose elsewhere repeats a question's words. Documents no evaluation reads have that shape:
this repository's own user docs, Node.js's API manuals (``/usr/share/doc/nodejs/api``, MIT) and the
US DOJ trustee handbook of the test corpus (``docs/docx/handbook-872p.docx``, public domain). Their
sections (a Markdown or Word heading and the paragraphs and tables under it, long enough to matter) are
pooled in order into pseudo-documents of ~``CHARS`` characters; each section's heading is the question,
and a chunk is relevant when it holds one of that section's paragraphs (the first or last 60 letters and
digits of one, as ``train_ranker.gold_tests`` reads TAT-QA's gold). ``--mode kept`` writes the headings
as headings (the chunk under its title, as a filing's statement under its caption); ``masked`` leaves
them out, so that the question's words are found only where the bodies use them (the harder case: a
question about a statement whose words are not its title's). The heads are read as the server reads
them (``retrieval.index.signals``), rows shaped as ``train_ranker.build``'s.
"""

from __future__ import annotations

import argparse
import io
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import train_ranker as tr  # noqa: E402

CHARS = 300_000  # per pseudo-document: a few hundred chunks, as a filing's
MIN_BODY = 200  # letters and digits under a heading for it to be a question
DOC_OFFSET = 100  # the pseudo-documents' numbers, after TAT-QA's
REPO_DOCS = ("README.md", "docs/configuration.md", "docs/deployment.md", "docs/formats.md", "docs/tools.md",
             "docs/clients.md", "docs/sources.md", "docs/testing.md")
NODE_DOCS = Path("/usr/share/doc/nodejs/api")
NODE_FILES = ("modules.md", "packages.md", "esm.md", "permissions.md", "events.md", "process.md")
HANDBOOK = "docs/docx/handbook-872p.docx"
WORK = ROOT / "bench" / "results" / "cache" / "sections"
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def clean(heading: str) -> str:
    """A heading as a question would write it: no Markdown marks, links as their text."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    heading = re.sub(r"<[^>]+>", "", heading)
    heading = re.sub(r"^\s*(?:[A-Z]|\d{1,2}|[IVX]{1,4})\.\s+", "", heading)  # "C. ", "12. ": an outline's number
    return re.sub(r"\s+", " ", re.sub(r"[`*_#]", "", heading)).strip()


def markdown_sections(text: str) -> list[tuple[str, list[str]]]:
    """(heading, paragraphs) per section of a Markdown text; fenced code and HTML comments left out."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    sections: list[tuple[str, list[str]]] = []
    heading, block, paragraphs, fenced = "", [], [], False

    def close_block() -> None:
        if block:
            paragraphs.append("\n".join(block))
            block.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = _HEADING.match(line)
        if match:
            close_block()
            if heading:
                sections.append((heading, paragraphs))
            heading, paragraphs = clean(match.group(2)), []
        elif line.strip():
            block.append(line.rstrip())
        else:
            close_block()
    close_block()
    if heading:
        sections.append((heading, paragraphs))
    return sections


def handbook_sections(corpus: Path) -> list[tuple[str, list[str]]]:
    """The handbook's sections: Word's heading-styled paragraphs and the paragraphs under them."""
    import docx

    document = docx.Document(io.BytesIO((corpus / HANDBOOK).read_bytes()))
    sections: list[tuple[str, list[str]]] = []
    heading, paragraphs = "", []
    for paragraph in document.paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        if paragraph.style is not None and paragraph.style.name.lower().startswith("heading"):
            if heading:
                sections.append((heading, paragraphs))
            heading, paragraphs = clean(text), []
        else:
            paragraphs.append(text)
    if heading:
        sections.append((heading, paragraphs))
    return sections


def usable(sections: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Sections worth a question: a heading of two words or more with letters, a body of MIN_BODY, and a
    heading no other section of the pool shares ("Examples", "Returns")."""
    counts: dict[str, int] = {}
    for heading, _ in sections:
        counts[heading.lower()] = counts.get(heading.lower(), 0) + 1
    return [(h, ps) for h, ps in sections
            if counts[h.lower()] == 1 and len(re.findall(r"[A-Za-z]{2,}", h)) >= 2
            and len(tr.norm(" ".join(ps))) >= MIN_BODY]


def sources(corpus: Path) -> list[list[tuple[str, list[str]]]]:
    """Per source document, its sections in order."""
    out = [markdown_sections((ROOT / name).read_text(encoding="utf-8")) for name in REPO_DOCS]
    out += [markdown_sections((NODE_DOCS / name).read_text(encoding="utf-8")) for name in NODE_FILES
            if (NODE_DOCS / name).exists()]
    if (corpus / HANDBOOK).exists():
        kept, size = [], 0
        for section in handbook_sections(corpus):
            if size >= CHARS:
                break
            kept.append(section)
            size += sum(len(p) for p in section[1])
        out.append(kept)  # its first CHARS characters: one pseudo-document's worth
    return out


def pseudo_documents(corpus: Path) -> list[list[tuple[str, list[str]]]]:
    """The sources' sections, in order, cut into pseudo-documents of about CHARS characters."""
    every = [s for document in sources(corpus) for s in document]
    every = [s for s in every if s[1]]
    documents: list[list[tuple[str, list[str]]]] = [[]]
    size = 0
    for section in every:
        if size >= CHARS:
            documents.append([])
            size = 0
        documents[-1].append(section)
        size += sum(len(p) for p in section[1])
    return documents


_LEAD = re.compile(r"^([^|#\n].{30,300}?[.!?])\s+(?=[A-Z])", re.S)


def lead(sections: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """``--mode lead``: each section's first sentence becomes its question and leaves its first paragraph
    (a section whose first paragraph is no sentence of 30 characters or more followed by another keeps it)."""
    out = []
    for heading, paragraphs in sections:
        match = _LEAD.match(paragraphs[0]) if paragraphs else None
        if match:
            out.append((match.group(1), [paragraphs[0][match.end():], *paragraphs[1:]], heading))
        else:
            out.append(("", paragraphs, heading))
    return out  # type: ignore[return-value]


def build(mode: str, log: Any) -> list[dict[str, Any]]:
    """Per question of the pseudo-documents in ``mode``, its head as ``train_ranker.build`` keeps it
    (saved to ``WORK/<mode>/heads.pkl``)."""
    from bench.financebench import ServerPipeline
    from mcp_server.retrieval.index import fused_head, signals

    pipeline = ServerPipeline(use_cache=True)
    work = WORK / mode
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for d, sections in enumerate(pseudo_documents(tr.corpus().parent.parent)):
        parts = []
        if mode == "lead":  # the question a lead sentence, the heading written as in kept
            asked = lead(sections)
            for _, paragraphs, heading in asked:  # type: ignore[misc]
                parts += [f"## {heading}", *paragraphs]
            sections = [(q, ps) for q, ps, _ in asked if q]  # type: ignore[misc]
        else:
            for heading, paragraphs in sections:
                parts += ([f"## {heading}"] if mode == "kept" else []) + paragraphs
        path = work / f"sections-{d:02d}.md"
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        document, key, _, _ = pipeline.process(path)
        index, stats = pipeline.index(document, key)
        normed = [tr.norm(c.text) for c in index.chunks]
        embed = pipeline.embedder(pipeline.models.embedder_by_id(index.model_id)).embed_query
        kept = 0
        for number, (heading, paragraphs) in enumerate(usable(sections)):
            probes = {p for text in (tr.norm(x) for x in paragraphs) if len(text) >= 40
                      for p in (text[:60], text[-60:])}
            if not probes:
                continue
            query = index.asked(heading)
            head = fused_head(index, index.query_vector(query, embed), query, 5)[:tr.HEAD]
            labels = np.array([any(p in normed[c.pos] for p in probes) for c in head])
            if labels.any() and not labels.all():
                rows.append({"doc": DOC_OFFSET + d, "signals": signals(index, query, head), "y": labels,
                             "texts": [normed[c.pos] for c in head], "question": f"{d}-{number}", "query": heading})
                kept += 1
        log(f"{mode} document {d}: {len(sections)} sections, {stats['chunks']} chunks, {kept} questions kept")
    (work / "heads.pkl").write_bytes(pickle.dumps(rows))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["kept", "masked", "lead"], default="kept")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    rows = build(args.mode, log)
    log(f"{len(rows)} questions written to {WORK / args.mode / 'heads.pkl'}")


if __name__ == "__main__":
    main()
