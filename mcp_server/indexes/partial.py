"""What a query on a partially indexed document searches (the first answers on a big document).

The document's base index has BM25 over every chunk and no vectors. A query adds vectors for its
candidates — its best BM25 chunks, the first chunks when fewer match — and, of each candidate,
only the few sentences whose shared query terms weigh the most (idf over the candidates,
``retrieval/focus.py``): a chunk's dense score is then the best cosine among those, as the
complete index weighs its candidates, at a fraction of the cost of embedding whole candidates
(bench/partial_quality.py measures both the quality and the cost).
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_server.encoders.embedders import Embedder
from mcp_server.retrieval.focus import SENTENCES_PER_CANDIDATE, best_sentences
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["PARTIAL_SECONDS", "SENTENCES_PER_CANDIDATE", "best_sentences", "partial_candidates", "partial_view"]

# What a first answer may spend embedding, at the embedder's nominal speed (not the measured one:
# the same query on the same document embeds the same units whatever the machine's load): the
# units of the lowest-ranked candidates are left out past it. MiniLM's selected units fit well
# within it; the multilingual model, five times slower, keeps its first answers in seconds this way.
PARTIAL_SECONDS = 2.5

def partial_candidates(index: DocumentIndex, query: str, n: int) -> list[int]:
    """The chunks a partial answer embeds for ``query``: its ``n`` best BM25 matches; when fewer
    chunks match, the first chunks fill up (a title or summary is the best guess without a
    match). Filling always would put unrelated first chunks into every query's dense ranking."""
    best = index.bm25_top(query, n)
    chosen = set(best)
    fill = [pos for pos in range(min(n, len(index))) if pos not in chosen][: n - len(best)]
    return best + fill


def partial_view(
    base: DocumentIndex, query: str, embedder: Embedder, candidates: int, *,
    per_chunk: int = SENTENCES_PER_CANDIDATE, seconds: float = PARTIAL_SECONDS,
    progress: Callable[[int, int, str], None] | None = None,
) -> DocumentIndex:
    """``base`` plus vectors for this query's candidates (``per_chunk`` 0: all their sentences).
    Built afresh per query from the vector-less base (repeated sentences come from the
    embedder's cache), so every query's dense ranking holds its own candidates only."""
    # candidates by what the question asks: the words naming the document would fill them with
    # its cover page, certifications and exhibit index (retrieval/naming.py), and their
    # sentences by the question without a clause that only names the document
    chosen = partial_candidates(base, base.dense_query(query), candidates)
    select = None
    if per_chunk > 0:
        select = best_sentences(base.asked(query), per_chunk, languages=base.languages,
                                ranks={pos: rank for rank, pos in enumerate(chosen)},
                                max_chars=seconds * embedder.prior_chars_per_second)
    return base.extended(chosen, embedder, progress=progress, select=select)
