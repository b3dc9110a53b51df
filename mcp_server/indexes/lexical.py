"""The lexical side of a stored index, beside it: its chunks' BM25 tokens and its template mask.

Loading an index used to analyse every chunk again (BM25 was "rebuilt from the texts") and to find its
template passages at the first search: ~0.5 ms a chunk, most of a second for a 10-K, paid again each
time a shelf of documents outgrew the memory budget. ``lexical.<digest>.npz`` (NumPy arrays, no
pickle: the vocabulary as UTF-8 lines, the token ids, each chunk's offset, the mask) holds what the
analysis gave, and ``lexical.json`` names it with its checksum, the ``chunks.json`` checksum it was
analysed from and the analysis and template versions (``text/analysis.py``, ``text/templates.py``).

The files sit outside the manifest: a folder without them (written before them, copied from a shared
store, or whose ``lexical.json`` names other chunks or versions) loads as before, analysing the chunks,
and then gets them; a server that does not know them reads the folder as always, and a new version of
the index removes them with the previous version's files (``IndexStore._commit``). A damaged or stale
pair is never trusted and never quarantines the index: it is written again. Writes are atomic renames
without fsync: a pair cut short by a crash fails its checksum and is written again.
Reading and writing the pair is ``sidecars.py``'s, shared with ``instructions.py``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.indexes.sidecars import read_sidecar, store_sidecar
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.text.analysed import AnalysedCorpus, StoredAnalysis
from mcp_server.text.analysis import ANALYSIS_VERSION
from mcp_server.text.templates import TEMPLATES_VERSION

__all__ = ["LEXICAL_FILE", "POINTER_FILE", "read_lexical", "store_lexical"]

POINTER_FILE = "lexical.json"  # sidecars.py: "<kind>.json"
LEXICAL_FILE = "lexical.npz"  # the logical name; the folder holds lexical.<16 hex of the chunks' digest>.npz
FORMAT = 1


def _versions() -> dict[str, Any]:
    return {"format": FORMAT, "analysis": ANALYSIS_VERSION, "templates": TEMPLATES_VERSION}


def encode(stored: StoredAnalysis) -> bytes:
    corpus = stored.corpus
    words = "\n".join(corpus.vocabulary).encode()
    buffer = io.BytesIO()
    np.savez(buffer, vocabulary=np.frombuffer(words, dtype=np.uint8), words=np.array([len(corpus.vocabulary)]),
             ids=corpus.ids.astype(np.int32), offsets=corpus.offsets.astype(np.int64),
             templates=np.asarray(stored.templates, dtype=np.bool_))
    return buffer.getvalue()


def decode(data: bytes, chunk_count: int) -> StoredAnalysis:
    """Raises ValueError (or what NumPy raises on a damaged file) unless ``data`` is an encoded analysis."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        words = arrays["vocabulary"].tobytes().decode()
        vocabulary = tuple(words.split("\n")) if int(arrays["words"][0]) else ()
        if len(vocabulary) != int(arrays["words"][0]):
            raise ValueError("vocabulary size mismatch")
        corpus = AnalysedCorpus(vocabulary, arrays["ids"].astype(np.int32), arrays["offsets"].astype(np.int64))
        templates = arrays["templates"].astype(np.bool_)
    if len(corpus.check()) != chunk_count or len(templates) != chunk_count:
        raise ValueError("chunk count mismatch")
    return StoredAnalysis(corpus=corpus, templates=templates)


def read_lexical(folder: Path, manifest: dict[str, Any]) -> StoredAnalysis | None:
    """The analysis stored beside the index ``manifest`` describes, if it is that index's and current
    (otherwise the chunks are analysed again)."""
    return read_sidecar(folder, manifest, "lexical", _versions(), lambda data, _, count: decode(data, count))


def store_lexical(folder: Path, manifest: dict[str, Any], index: DocumentIndex) -> dict[str, Any]:
    """Write ``index``'s analysis beside it (best effort: a failure leaves the index as it was);
    returns ``manifest`` (the index's, unchanged)."""
    store_sidecar(folder, manifest, "lexical", _versions(),
                  lambda: encode(StoredAnalysis(corpus=index.lexical.analysed, templates=index.templates)))
    return manifest
