"""Imported once by the parser pool's forkserver, so every worker forked from it starts with
what each one would otherwise load on its first document: PyMuPDF (~1 s of imports) and
langdetect's 55 language profiles (~1 s of JSON, paid by the first ``detect_language``) and
trafilatura (~0.4 s, the main content of web pages); and pandas, pytesseract, extract-msg, python-docx
and python-pptx, which the processor modules import only where they parse, so that the server
processes never load them (~10 MB of python-docx and python-pptx alone in each)."""

from __future__ import annotations

import contextlib

import extract_msg  # noqa: F401  (the server processes import these three lazily: parsers only)
import pandas  # noqa: F401
import pytesseract  # noqa: F401
import trafilatura  # noqa: F401

from mcp_server.processors import _docx_read, _pdf_read, _pptx_read  # noqa: F401  (_pdf_read: PyMuPDF)

with contextlib.suppress(ImportError):  # language detection is optional: it answers "en" without
    import langdetect  # noqa: F401

    from mcp_server.text.language import load_profiles

    load_profiles()
