"""Hidden text, technique by technique: is each payload flagged, gone under ``drop``, and its twin clean?

    .venv/bin/python bench/hidden_audit.py [--code DIR] [--show]

Makes about 75 documents (``_audit_documents``: PDF, HTML, DOCX, XLSX, PPTX and text; each hiding
technique with a clean twin, and cases a reader does see) in a temporary folder that is deleted
afterwards, and reads each in process (``processors.process_document``, the function every tool's
text comes from; web pages in both views) under ``hidden_text`` = ``flag``, ``drop`` and ``keep``.
Per technique:

- flag: ``flagged`` when a ``hidden_text`` flag's span holds the payload's marker word (for text
  files, an ``invisible_characters`` flag), ``absent`` when the marker is returned nowhere (content,
  tables, metadata: the parser never reads it, as for a ``<template>``), ``MISSED`` otherwise;
- drop: ``gone`` when the marker (or the invisible code points) is in no returned text, ``LEAK``;
- twin: ``clean`` when the twin (and under ``keep`` the document itself) carries no ``hidden_text``
  flag, ``FLAGGED`` otherwise; for a case a reader sees, the case itself is the twin.

A row is a gap when any of the three fails. ``--code DIR`` reads the documents with another
checkout's ``mcp_server`` (e.g. ``/work/main``: the gap count before a change).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _setup_path(code: str | None) -> None:
    """This checkout's cases (``bench``), ``code``'s ``mcp_server``."""
    sys.path.insert(0, str(ROOT))
    import bench._audit_documents  # noqa: F401  (imported before another checkout's path comes first)

    if code:
        sys.path.insert(0, str(Path(code).resolve()))


INVISIBLE = frozenset(
    [chr(c) for c in range(0xE0000, 0xE0080)] + [chr(c) for c in range(0xFE00, 0xFE10)]
    + [chr(c) for c in range(0xE0100, 0xE01F0)] + list("\u200b\u202e\u202c\u2062\u180e\u034f")
)


def _texts(doc: Any) -> str:
    """Every text a document returns to an agent: content, tables, OCR text and metadata."""
    parts = [doc.content, *(t.content for t in doc.tables), *(i.ocr_text for i in doc.images), repr(doc.metadata)]
    return "\n".join(parts)


def _read(data: bytes, fmt: str, policy: str, view: str) -> Any:
    from mcp_server.processors import DocumentInput, ProcessOptions, process_document

    options = ProcessOptions(hidden_text=policy, detect_language=False, html_view=view)  # type: ignore[arg-type]
    return process_document(DocumentInput(data=data, doc_type=fmt, filename=f"audit.{fmt}"), options)


def _hidden_flags(doc: Any) -> list[Any]:
    return [f for f in doc.flags if f.kind == "hidden_text"]


_FLAGGER: list[Any] = []


def _field_flags(doc: Any) -> list[Any]:
    """The document's flags on metadata fields as process_document gives them, the bundled instruction detector
    plugged in (``pipeline.flags.document_flags``; before it existed, the tool's own field scoring)."""
    import asyncio

    from mcp_server.pipeline import flags as pipeline_flags

    if not _FLAGGER:
        from bench.instructions import load_detector

        _, detector = load_detector(Path(pipeline_flags.__file__).resolve().parent.parent / "detectors"
                                    / "instructions.npz")
        from mcp_server.core.settings import Settings

        threshold = Settings.model_fields["instruction_threshold"].default
        _FLAGGER.append(pipeline_flags.Flagger(detector, threshold=threshold))
    flagger = _FLAGGER[0]
    if hasattr(pipeline_flags, "document_flags"):
        found = asyncio.run(pipeline_flags.document_flags(flagger, doc))
    else:  # main before: fields scored by the tool, their settle flags not kept
        fields = [(n, v) for n, v in doc.metadata.items() if isinstance(v, str) and v.strip()]
        scored = flagger.flags_now([pipeline_flags.Piece(start=0, text=v) for _, v in fields])
        found = [f for one in scored for f in one]
        found += [f for f in doc.flags if getattr(f, "field", "")]
        return found
    return [f for f in found if f.field]


def _judge_metadata(case: Any, marker: str) -> dict[str, str]:
    """A payload in a metadata field: flagged on the field (an instruction by the detector, invisible code
    points as removed), no invisible code point returned; the twin's fields carry no flag."""
    flagged = _read(case.data, case.format, "flag", "main")
    twin = _read(case.twin, case.format, "flag", "main")
    flags = _field_flags(flagged)
    left = any(c in _texts(flagged) for c in INVISIBLE)
    kind = "invisible_characters" if "tag characters" in case.technique else "instructions_to_agent"
    seen = any(f.kind == kind for f in flags)
    return {"flag": "flagged" if seen and not left else "MISSED", "drop": "LEAK" if left else "-",
            "twin": "FLAGGED" if _field_flags(twin) else "clean"}


def judge(case: Any, marker: str, view: str) -> dict[str, str]:
    """The three verdicts for one case in one view."""
    if case.expected == "metadata":
        return _judge_metadata(case, marker)
    flagged = _read(case.data, case.format, "flag", view)
    dropped = _read(case.data, case.format, "drop", view)
    twin = _read(case.twin, case.format, "flag", view)
    if case.expected == "seen":
        ok = not _hidden_flags(flagged) and (case.format != "txt" or not flagged.flags)
        return {"flag": "not flagged" if ok else "FLAGGED", "drop": "-", "twin": "clean" if ok else "FLAGGED"}
    if case.format == "txt":
        seen = any(f.kind == "invisible_characters" for f in flagged.flags)
        left = any(c in _texts(d) for d in (flagged, dropped) for c in INVISIBLE)
        verdict = {"flag": "flagged" if seen and not left else "MISSED",
                   "drop": "LEAK" if left else "gone"}
    else:
        text = _texts(flagged)
        covered = any(marker in flagged.content[f.start:f.end] for f in _hidden_flags(flagged))
        verdict = {"flag": "flagged" if covered else "absent" if marker not in text else "MISSED",
                   "drop": "LEAK" if marker in _texts(dropped) else "gone"}
    verdict["twin"] = "FLAGGED" if _hidden_flags(twin) or any(f.kind == "invisible_characters" for f in twin.flags) \
        else "clean"
    return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", help="a checkout whose mcp_server reads the documents (default: this one)")
    parser.add_argument("--show", action="store_true", help="print every row, not only the gaps")
    args = parser.parse_args()
    _setup_path(args.code)
    import mcp_server
    from bench._audit_documents import MARKER, cases

    rows = []
    for case in cases():
        for view in (("main", "full") if case.format == "html" else ("main",)):
            try:
                verdict = judge(case, MARKER, view)
            except Exception as exc:  # a document the code cannot read: a gap, said so
                verdict = {"flag": f"ERROR {type(exc).__name__}", "drop": "-", "twin": "-"}
            gap = any(v.isupper() or v.startswith("ERROR") for v in verdict.values())
            rows.append((case, view, verdict, gap))
    print(f"code: {Path(mcp_server.__file__).resolve().parent.parent}")
    print(f"{'format':6} {'technique':38} {'view':5} {'flag':12} {'drop':6} {'twin':8} gap")
    for case, view, verdict, gap in rows:
        if args.show or gap:
            known = f"  (known: {case.known})" if gap and case.known else ""
            print(f"{case.format:6} {case.technique[:38]:38} {view:5} {verdict['flag']:12} {verdict['drop']:6} "
                  f"{verdict['twin']:8} {'GAP' if gap else ''}{known}")
    techniques = {(c.format, c.technique) for c, _, _, _ in rows}
    gaps = {(c.format, c.technique) for c, _, _, g in rows if g}
    hidden = sum(1 for c in cases() if c.expected == "hidden")
    fields = sum(1 for c in cases() if c.expected == "metadata")
    print(f"\n{len(techniques)} cases ({hidden} hidden, {fields} in metadata, "
          f"{len(techniques) - hidden - fields} a reader sees), "
          f"{len(rows)} rows with the web pages' two views; gaps: {len(gaps)} cases "
          f"({sum(1 for *_, g in rows if g)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
