"""A document's chunks as BM25 reads them, held compactly: one vocabulary and a flat array of token ids.

The analysis (``retrieval/bm25.py``'s ``analyse_chunks``: each chunk by its language's analyzer, stemming and all) is
most of what building an index's lexical side costs (~0.5 ms a chunk: a 10-K's ~1,500 chunks take
most of a second). Kept as ids, it costs ~4 bytes a token in memory, is stored beside the index
(``indexes/lexical.py``) so that loading an index does not analyse its chunks again, and gives the
pooled BM25 of a search across documents any chunk's tokens without analysing it again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import bm25s

__all__ = ["AnalysedCorpus", "StoredAnalysis", "bm25_index"]


@dataclass(frozen=True, slots=True)
class AnalysedCorpus(Sequence[list[str]]):
    """Chunk i's tokens are ``vocabulary[ids[offsets[i]:offsets[i + 1]]]``, in reading order."""

    vocabulary: tuple[str, ...]
    ids: np.ndarray  # int32, every chunk's token ids one after another
    offsets: np.ndarray  # int64, len(chunks) + 1, non-decreasing from 0 to len(ids)

    @classmethod
    def of(cls, corpus: Sequence[Sequence[str]]) -> AnalysedCorpus:
        """From token lists (the vocabulary in order of first use)."""
        # each token's id is first the place it first occurs at (one C-level pass), then its rank among those
        first: dict[str, int] = {}
        places = np.fromiter(map(first.setdefault, itertools.chain.from_iterable(corpus), itertools.count()),
                             dtype=np.int64)
        rank = np.zeros(len(places), dtype=np.int32)
        rank[np.fromiter(first.values(), dtype=np.int64, count=len(first))] = np.arange(len(first), dtype=np.int32)
        offsets = np.zeros(len(corpus) + 1, dtype=np.int64)
        np.cumsum([len(tokens) for tokens in corpus], out=offsets[1:])
        return cls(tuple(first), rank[places], offsets)

    def check(self) -> AnalysedCorpus:
        """Itself, after raising ValueError unless its arrays describe a corpus (stored files are read through it)."""
        offsets, ids = self.offsets, self.ids
        if offsets.ndim != 1 or ids.ndim != 1 or not len(offsets) or offsets[0] != 0 or offsets[-1] != len(ids):
            raise ValueError("token offsets do not span the token ids")
        if np.any(np.diff(offsets) < 0):
            raise ValueError("token offsets run backwards")
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= len(self.vocabulary)):
            raise ValueError("token id outside the vocabulary")
        return self

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> list[str]:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        vocabulary = self.vocabulary
        return [vocabulary[t] for t in self.ids[self.offsets[i] : self.offsets[i + 1]].tolist()]

    def __iter__(self) -> Iterator[list[str]]:
        for i in range(len(self)):
            yield self[i]

    def id_lists(self) -> list[list[int]]:
        """Every chunk's token ids as a list (what bm25s indexes with the vocabulary's ids)."""
        flat = self.ids.tolist()
        bounds = self.offsets.tolist()
        return [flat[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]

    def counts(self, positions: Sequence[int], terms: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(the token count of each chunk at ``positions``; per term id of ``terms``, how often each
        holds it: terms x positions). An id outside the vocabulary (-1) counts nothing."""
        at = np.asarray(positions, dtype=np.int64)
        starts, lengths = self.offsets[at], self.offsets[at + 1] - self.offsets[at]
        tf = np.zeros((len(terms), len(at)), dtype=np.float64)
        wanted = [(row, term) for row, term in enumerate(terms) if term >= 0]
        if wanted and lengths.sum():
            owners = np.repeat(np.arange(len(at)), lengths)
            # every chunk's slice of ids, end to end: its start plus the place within it
            flat = self.ids[np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())]
            for row, term in wanted:
                tf[row] = np.bincount(owners[flat == term], minlength=len(at))
        return lengths, tf

    def document_frequencies(self) -> dict[str, int]:
        """Per token, the number of chunks holding it."""
        size = len(self.vocabulary)
        if not size or not len(self.ids):
            return {}
        owners = np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))
        # each (chunk, token) once: sorted, as np.unique's hash took ~15x longer (NumPy 2.4)
        pairs = np.sort(owners * size + self.ids)
        first = np.ones(len(pairs), dtype=np.bool_)
        first[1:] = pairs[1:] != pairs[:-1]
        counts = np.bincount(pairs[first] % size, minlength=size)
        return {token: int(n) for token, n in zip(self.vocabulary, counts.tolist(), strict=True) if n}


@dataclass(frozen=True, slots=True)
class StoredAnalysis:
    """What an index's lexical side is built from, read with the index (``indexes/lexical.py``)."""

    corpus: AnalysedCorpus
    templates: np.ndarray  # per chunk, whether it is a template passage (``text/templates.py``)


def bm25_index(corpus: AnalysedCorpus) -> bm25s.BM25:
    """bm25s' BM25 over ``corpus`` (the ids of its vocabulary, as ``vocabulary`` orders them).

    ``bm25s.BM25.index`` counts each chunk's terms in a Python loop (0.1-0.2 s of a book's first
    answer); its documented extension point, ``build_index_from_ids``, is overridden here to count
    them on the corpus' arrays with bm25s' own formulas in the same order of operations: the same
    score matrix to the bit (tests/text/test_analysed.py compares it with bm25s' own)."""
    model = _arrays_bm25()()
    model.index(_Ids(ids=corpus, vocab={token: i for i, token in enumerate(corpus.vocabulary)}), show_progress=False)
    return model


@dataclass(frozen=True, slots=True)
class _Ids:
    """What ``bm25s.BM25.index`` reads as token ids and their vocabulary."""

    ids: AnalysedCorpus
    vocab: dict[str, int]


@cache
def _arrays_bm25() -> type[bm25s.BM25]:
    import bm25s  # loaded by the lifespan's warm-up (text/lexical.py's stop words); a script's at first use
    from bm25s import scoring

    # bm25s' helpers this reads (pyproject asks bm25s>=0.2): a release without them gets bm25s' own loop
    internals = all(hasattr(scoring, name) for name in ("_build_idf_array", "_select_idf_scorer",
                                                         "_select_tfc_scorer")) and hasattr(bm25s.BM25, "_np_csc")

    class ArraysBM25(bm25s.BM25):
        def build_index_from_ids(self, unique_token_ids: list[int], corpus_token_ids: Any, show_progress: bool = True,
                                 leave_progress: bool = False) -> dict[str, Any]:
            corpus = corpus_token_ids
            if not isinstance(corpus, AnalysedCorpus) or self.csc_backend != "numpy" \
                    or self.method in self.methods_requiring_nonoccurrence or not internals:
                lists = corpus.id_lists() if isinstance(corpus, AnalysedCorpus) else corpus
                return super().build_index_from_ids(unique_token_ids, lists, show_progress, leave_progress)
            self.nonoccurrence_array = None  # as bm25s sets it for these methods
            n_docs, n_vocab = len(corpus), len(unique_token_ids)
            lengths = np.diff(corpus.offsets)
            avg_doc_len = lengths.mean()
            owners = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
            # each (chunk, term) once with its count: bm25s' Counter per chunk (its order is sorted away below)
            pairs, counts = np.unique(owners * n_vocab + corpus.ids, return_counts=True)
            docs, terms = pairs // n_vocab, pairs % n_vocab
            frequencies = np.bincount(terms, minlength=n_vocab)
            idf = scoring._build_idf_array(  # per term in Python, as bm25s does (math.log, not np.log)
                doc_frequencies={token: int(frequencies[token]) for token in unique_token_ids}, n_docs=n_docs,
                compute_idf_fn=scoring._select_idf_scorer(self.idf_method), dtype=self.dtype)
            tfc = scoring._select_tfc_scorer(self.method)(
                tf_array=counts.astype(self.dtype), l_d=lengths[docs], l_avg=avg_doc_len, k1=self.k1, b=self.b,
                delta=self.delta)
            scores = (idf[terms] * tfc).astype(self.dtype)
            data, indices, indptr = self._np_csc(data=scores, rows=docs.astype(self.int_dtype),
                                                 cols=terms.astype(self.int_dtype), shape=(n_docs, n_vocab))
            return {"data": data.astype(self.dtype), "indices": indices, "indptr": indptr, "num_docs": n_docs}

    return ArraysBM25
