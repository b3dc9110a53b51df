"""search_pool: one ranking over several documents' candidates, with scores that compare across them."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_server.citations.passages import passage_id
from mcp_server.rerankers import FakeReranker
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.pool import PoolSource, bm25_scores, search_pool
from mcp_server.text.analysis import Analyzer
from tests.retrieval._chunks import make_chunks

QUERY = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)


def doc(key: str, cosines: Sequence[float], texts: Sequence[str] | None = None, *, model: str = "m") -> DocumentIndex:
    """An index whose chunk i has cosine ``cosines[i]`` with QUERY (one vector per chunk)."""
    texts = list(texts or [f"{key} filler text number {i}" for i in range(len(cosines))])
    vectors = np.array([[c, math.sqrt(1 - c * c), 0.0, 0.0] for c in cosines], dtype=np.float32)
    return DocumentIndex.build(make_chunks(texts), vectors, model_id=model, key=key * 16)


def embed(model_id: str, text: str) -> np.ndarray:
    return QUERY


def run(indexes: Sequence[DocumentIndex], query: str = "unmatched", **kwargs: object) -> list[tuple[int, int]]:
    hits = search_pool([PoolSource(index=i) for i in indexes], [query], embed, **kwargs)  # type: ignore[arg-type]
    return [(h.source, h.hit.chunk.chunk_index) for h in hits]


def test_a_relevant_documents_second_chunk_outranks_an_unrelated_documents_best() -> None:
    relevant, unrelated = doc("a", [0.9, 0.8, 0.1]), doc("b", [0.3, 0.2, 0.1])
    # per-document fused scores would put each document's first chunk level: a0, b0
    assert run([relevant, unrelated], top_k=2) == [(0, 0), (0, 1)]
    assert run([unrelated, relevant], top_k=3) == [(1, 0), (1, 1), (0, 0)]


def test_per_document_caps_each_document_and_keeps_the_global_order() -> None:
    first, second = doc("a", [0.9, 0.8, 0.7, 0.6]), doc("b", [0.5, 0.4, 0.3])
    assert run([first, second], top_k=4, per_document=2) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert run([first, second], top_k=3, per_document=1) == [(0, 0), (1, 0)]


def test_bm25_scores_compare_across_documents() -> None:
    shared = "apple pie recipe with cinnamon"
    many_apples = doc("a", [0.5] * 4, [shared, "apple orchard", "apple juice press", "apple varieties list"])
    few_apples = doc("b", [0.5] * 4, [shared, "river boats", "mountain weather", "city traffic"])
    hits = search_pool([PoolSource(index=many_apples), PoolSource(index=few_apples)], ["apple pie"], embed, top_k=8)
    same_text = [h.hit for h in hits if h.hit.chunk.text == shared]
    assert len(same_text) == 2  # one per document: not a duplicate across documents
    assert same_text[0].bm25 == same_text[1].bm25 > 0  # per document, IDF would differ (4 vs 1 "apple")


def test_the_same_document_at_two_urls_answers_once() -> None:
    index = doc("a", [0.9, 0.5, 0.1])
    assert run([index, index], top_k=6) == [(0, 0), (0, 1), (0, 2)]


def test_each_models_cosines_are_compared_on_that_models_scale() -> None:
    generous = doc("a", [0.9, 0.85, 0.8], model="generous")  # a model whose cosines all run high
    strict = doc("b", [0.5, 0.2, 0.1], model="strict")
    assert set(run([generous, strict], top_k=2)) == {(0, 0), (1, 0)}


def test_allowed_positions_restrict_the_candidates() -> None:
    index = doc("a", [0.9, 0.8, 0.7, 0.6, 0.5])
    hits = search_pool([PoolSource(index=index, allowed=np.array([1, 3]))], ["x"], embed, top_k=5)
    assert [h.hit.chunk.chunk_index for h in hits] == [1, 3]


def test_hits_carry_the_passage_id_and_the_dense_cosine() -> None:
    index = doc("a", [0.9, 0.2])
    [best] = search_pool([PoolSource(index=index)], ["x"], embed, top_k=1)
    assert best.hit.passage_id == passage_id(index.key, 0, index.chunks[0].text)
    assert best.hit.dense is not None and abs(best.hit.dense - 0.9) < 1e-5 and best.ranks == (1,)


def test_a_reranker_orders_the_pool_by_its_absolute_scores() -> None:
    first = doc("a", [0.9, 0.8], ["nothing relevant here", "cinnamon apple pie"])
    second = doc("b", [0.3, 0.2], ["apple pie", "unrelated words"])
    hits = search_pool([PoolSource(index=first), PoolSource(index=second)], ["apple pie"], embed, top_k=4,
                       reranker=FakeReranker())
    # both hold every query word (1.0) and rank first, whatever the dense cosine of their documents
    assert {h.hit.chunk.text for h in hits[:2]} == {"cinnamon apple pie", "apple pie"}
    assert all(h.hit.score == h.hit.rerank for h in hits)
    assert [h.hit.score for h in hits] == sorted((h.hit.score for h in hits), reverse=True)


def test_an_empty_document_contributes_nothing() -> None:
    empty = DocumentIndex.build([], np.zeros((0, 4), dtype=np.float32), model_id="m", key="e" * 32)
    assert run([empty, doc("a", [0.4])], top_k=3) == [(1, 0)]


def test_each_documents_passages_keep_its_own_ranking_order() -> None:
    texts_a = ["acme annual report acme acme", "revenue grew ten percent", "acme revenue table", "board members"]
    texts_b = ["acme is not named here", "revenue of a shop", "weather report", "revenue revenue revenue"]
    first, second = doc("a", [0.2, 0.9, 0.5, 0.1], texts_a), doc("b", [0.6, 0.7, 0.3, 0.4], texts_b)
    query = "acme revenue"
    hits = search_pool([PoolSource(index=first), PoolSource(index=second)], [query], embed, top_k=8)
    for s, index in enumerate((first, second)):
        own = [pos for pos, _ in index.candidates(QUERY, query, 20)]
        got = [h.hit.chunk.chunk_index for h in hits if h.source == s]
        assert got == [pos for pos in own if pos in got]  # a subsequence of its own order
    assert [h.hit.score for h in hits] == sorted((h.hit.score for h in hits), reverse=True)


def test_the_document_a_question_names_comes_first_and_ranks_its_own_passages() -> None:
    import dataclasses

    from mcp_server.encoders import FakeEmbedder
    from mcp_server.retrieval.pool import named_sources
    from tests.retrieval._filing import BODY, filing_chunks

    def renamed(name: str) -> list:  # type: ignore[type-arg]
        return [dataclasses.replace(c, text=c.text.replace("Northwind Traders", name)
                                    .replace("NORTHWIND TRADERS", name.upper())) for c in filing_chunks()]

    embedder = FakeEmbedder()
    indexes = []
    for name in ("Northwind Traders", "Contoso Foods", "Fabrikam Mills"):
        chunks = renamed(name)
        indexes.append(DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]),
                                           model_id=embedder.model_id, key=name.replace(" ", "") * 4))
    sources = [PoolSource(index=i) for i in indexes]
    query = "In Contoso Foods' 2022 Form 10-K: what was the gross margin?"
    # the year and the form are every filing's; the company is one's
    assert named_sources(sources, query) == {1}
    assert named_sources(sources, "What was the gross margin in 2022?") == set()
    hits = search_pool(sources, [query], lambda model_id, text: embedder.embed_query(text), top_k=5)
    assert {h.source for h in hits} == {1}
    own = indexes[1].search(indexes[1].query_vector(query, embedder.embed_query), query, 5)
    assert [h.hit.chunk.text for h in hits] == [h.chunk.text for h in own]
    assert hits[0].hit.chunk.text == BODY[1]


def test_a_code_the_question_writes_picks_one_companys_10q_over_its_10k() -> None:
    import dataclasses

    from mcp_server.encoders import FakeEmbedder
    from mcp_server.retrieval.pool import named_sources
    from tests.retrieval._filing import filing_chunks

    def filing(name: str, form: str) -> list:  # type: ignore[type-arg]
        return [dataclasses.replace(c, text=c.text.replace("Northwind Traders", name)
                                    .replace("NORTHWIND TRADERS", name.upper()).replace("10-K", form))
                for c in filing_chunks()]

    embedder = FakeEmbedder()
    sources = []
    northwind = "Northwind Traders Pacific Coast Holdings"  # a long name: many words both its filings hold
    for name, form in ((northwind, "10-K"), (northwind, "10-Q"), ("Contoso Foods", "10-Q"), ("Fabrikam Mills", "10-K")):
        chunks = filing(name, form)
        index = DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]), model_id=embedder.model_id,
                                    key=(name + form).replace(" ", "")[:32].ljust(32, "x"))
        sources.append(PoolSource(index=index))
    # the company's name alone names both its filings; the form code the question writes tells them apart
    assert named_sources(sources, f"In {northwind}' 2022 Form 10-Q: what was the gross margin?") == {1}
    assert named_sources(sources, f"In {northwind}' 2022 Form 10-K: what was the gross margin?") == {0}
    assert named_sources(sources, f"In {northwind}' 2022 filing: what was the gross margin?") == {0, 1}
    assert named_sources(sources, "In Contoso Foods' 2022 Form 10-Q: what was the gross margin?") == {2}


def test_pooled_chunks_are_analysed_once_per_index_and_rank_as_when_analysed_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = ["apple pie recipe with cinnamon", "apple orchard in autumn", "river boats at dawn", "apple juice press"]
    first, second = doc("a", [0.5, 0.4, 0.3, 0.2], texts), doc("b", [0.6, 0.1, 0.2, 0.3], texts[::-1])
    sources = [PoolSource(index=first), PoolSource(index=second)]
    fresh = search_pool(sources, ["apple pie"], embed, top_k=6)
    analysed: list[str] = []
    real = Analyzer.tokens
    monkeypatch.setattr(Analyzer, "tokens", lambda self, batch: analysed.extend(batch) or real(self, batch))
    again = search_pool(sources, ["apple pie"], embed, top_k=6)
    other = search_pool(sources, ["orchard boats"], embed, top_k=6)
    assert not set(analysed) & set(texts)  # every pooled chunk's tokens were kept by its index at the first search
    assert [(h.source, h.hit.chunk.chunk_index, h.hit.bm25) for h in again] == [
        (h.source, h.hit.chunk.chunk_index, h.hit.bm25) for h in fresh]
    assert other and other[0].hit.bm25 is not None and other[0].hit.bm25 > 0


def test_pooled_bm25_scores_are_bm25s_scores_to_the_bit(corpus_dir: Path) -> None:
    import bm25s

    text = (corpus_dir / "docs" / "txt" / "book-war-and-peace-1225p.txt").read_text(encoding="utf-8")[:400_000]
    paragraphs = [p for p in text.split("\n\n") if p.strip()][:600]
    corpus = Analyzer("en").tokens(paragraphs) + [[]]  # an empty chunk too (a page of figures)
    reference = bm25s.BM25()
    reference.index(corpus, show_progress=False)
    for query in ["Prince Andrew and Natasha at the ball", "war war peace", "Pierre's duel with Dolokhov",
                  "zeppelin carburettor"]:
        asked = Analyzer("en").tokens([query])[0]
        terms = list(dict.fromkeys(asked))
        counts = np.array([[tokens.count(term) for tokens in corpus] for term in terms], dtype=np.float64)
        scores, wanted = bm25_scores(np.array([len(tokens) for tokens in corpus]), counts, terms, asked)
        assert wanted == [t for t in asked if t in reference.vocab_dict]
        expected = reference.get_scores(wanted) if wanted else np.zeros(len(corpus), dtype=np.float32)
        assert np.array_equal(scores, expected)


def test_routing_searches_only_the_documents_a_first_look_ranks_best_and_answers_as_searching_all() -> None:
    cosines = [[0.2, 0.1], [0.95, 0.9], [0.3, 0.2], [0.85, 0.1], [0.25, 0.2], [0.1, 0.05]]
    shelf = [doc(chr(97 + i), c) for i, c in enumerate(cosines)]
    searched: list[str] = []

    def counted(index: DocumentIndex) -> Callable[..., list[tuple[int, float]]]:
        candidates = index.candidates

        def search_fully(*args: Any, **kwargs: Any) -> list[tuple[int, float]]:
            searched.append(index.key)
            return candidates(*args, **kwargs)
        return search_fully

    for index in shelf:
        index.candidates = counted(index)  # type: ignore[method-assign]
    full = run(shelf, top_k=3)
    assert len(searched) == len(shelf)
    searched.clear()
    assert run(shelf, top_k=3, route=2) == full == [(1, 0), (1, 1), (3, 0)]
    assert sorted(searched) == sorted([shelf[1].key, shelf[3].key])  # the two best looks, searched fully
    searched.clear()
    assert run(shelf, top_k=3, route=len(shelf)) == full and len(searched) == len(shelf)  # no more than the route
