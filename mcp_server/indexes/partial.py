"""What a query on a partially indexed document searches (the first answers on a big document).

The document's base index has BM25 over every chunk and no vectors. A query adds vectors for its
candidates — its best BM25 chunks, the first chunks when fewer match — and, of each candidate,
only the few sentences whose shared query terms weigh the most (idf over the candidates): a
chunk's dense score is then the best cosine among those, a lower bound of what the complete
index gives, at a fraction of the cost of embedding whole candidates (bench/partial_quality.py
measures both the quality and the cost).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mcp_server.encoders.embedders import Embedder
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.retrieval.vectors import UnitSelect
from mcp_server.text.analysis import query_tokens

__all__ = ["PARTIAL_SECONDS", "SENTENCES_PER_CANDIDATE", "best_sentences", "partial_candidates", "partial_view"]

# A 1,500-character chunk has ~15 sentences; the three sharing most query terms carry its match.
SENTENCES_PER_CANDIDATE = 3
# What a first answer may spend embedding, at the embedder's nominal speed (not the measured one:
# the same query on the same document embeds the same units whatever the machine's load): the
# units of the lowest-ranked candidates are left out past it. MiniLM's selected units fit well
# within it; the multilingual model, five times slower, keeps its first answers in seconds this way.
PARTIAL_SECONDS = 2.5

try:  # the same stemming as the BM25 index, so "located" selects a sentence with "location"
    import Stemmer

    _STEM = Stemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEM = None


def _terms(texts: list[str], languages: Sequence[str] = ("en",)) -> list[set[str]]:
    if list(languages) != ["en"]:  # the document's own analyzers
        return [set(query_tokens(text, languages)) for text in texts]
    import bm25s  # imported at first use (text/lexical.py says why)

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_STEM, return_ids=False, show_progress=False)
    return [set(t) for t in tokens]


def partial_candidates(index: DocumentIndex, query: str, n: int) -> list[int]:
    """The chunks a partial answer embeds for ``query``: its ``n`` best BM25 matches; when fewer
    chunks match, the first chunks fill up (a title or summary is the best guess without a
    match). Filling always would put unrelated first chunks into every query's dense ranking."""
    best = index.bm25_top(query, n)
    chosen = set(best)
    fill = [pos for pos in range(min(n, len(index))) if pos not in chosen][: n - len(best)]
    return best + fill


def best_sentences(
    query: str, per_chunk: int, *, languages: Sequence[str] = ("en",), ranks: dict[int, int] | None = None,
    max_chars: float = float("inf"),
) -> UnitSelect:
    """Keep, of each chunk, the ``per_chunk`` units whose shared query terms weigh the most (ties:
    the earlier one), or its first unit when none shares a term. A term weighs its inverse
    document frequency over the candidates' units: in a report every unit names the company, so
    a unit sharing the question's rarer words ("legal", "inventories") is the one to embed.
    Past ``max_chars`` of kept text, the units of the chunks ranked last (``ranks``) go."""
    terms = _terms([query], languages)[0]

    def select(texts: list[str], owners: np.ndarray) -> np.ndarray:
        unit_terms = _terms(texts, languages)
        n = len(texts)
        frequency = {term: sum(term in unit for unit in unit_terms) for term in terms}
        # BM25's idf, always positive
        weight = {term: float(np.log(1 + (n - df + 0.5) / (df + 0.5))) for term, df in frequency.items()}
        shared = np.array([sum(weight[t] for t in terms & unit) for unit in unit_terms], dtype=np.float64)
        keep = np.zeros(n, dtype=np.bool_)
        for owner in np.unique(owners):
            units = np.nonzero(owners == owner)[0]
            best = units[np.argsort(-shared[units], kind="stable")][:per_chunk]
            keep[best[shared[best] > 0] if shared[best[0]] > 0 else best[:1]] = True
        if ranks is not None and sum(len(texts[i]) for i in np.nonzero(keep)[0]) > max_chars:
            spent = 0
            for owner in sorted(np.unique(owners).tolist(), key=lambda pos: ranks.get(pos, len(ranks))):
                units = np.nonzero(keep & (owners == owner))[0]
                cost = sum(len(texts[i]) for i in units)
                if spent and spent + cost > max_chars:
                    keep[units] = False  # the first candidate always keeps its units
                else:
                    spent += cost
        return keep

    return select


def partial_view(
    base: DocumentIndex, query: str, embedder: Embedder, candidates: int, *,
    per_chunk: int = SENTENCES_PER_CANDIDATE, seconds: float = PARTIAL_SECONDS,
    progress: Callable[[int, int, str], None] | None = None,
) -> DocumentIndex:
    """``base`` plus vectors for this query's candidates (``per_chunk`` 0: all their sentences).
    Built afresh per query from the vector-less base (repeated sentences come from the
    embedder's cache), so every query's dense ranking holds its own candidates only."""
    # candidates by what the question asks: the words naming the document would fill them with
    # its cover page, certifications and exhibit index (retrieval/naming.py)
    chosen = partial_candidates(base, base.dense_query(query), candidates)
    select = None
    if per_chunk > 0:
        select = best_sentences(query, per_chunk, languages=base.languages,
                                ranks={pos: rank for rank, pos in enumerate(chosen)},
                                max_chars=seconds * embedder.prior_chars_per_second)
    return base.extended(chosen, embedder, progress=progress, select=select)
