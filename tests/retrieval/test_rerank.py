"""A reranker that names its head, weight and languages (the bundled cross-encoder's card) re-orders
only where it was trained: complete indexes of documents in its languages, in search and in the pool."""

from __future__ import annotations

import numpy as np

from mcp_server.encoders import FakeEmbedder
from mcp_server.rerankers import FakeReranker
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.pool import PoolSource, search_pool
from tests.retrieval._chunks import make_chunks
from tests.retrieval.test_learned import TEXTS, build

QUERY = "revenue outlook in winter months"  # the fusion puts the revenue prose first

def english_only() -> FakeReranker:
    return FakeReranker(head=5, weight=4.0, languages=("en",))

def ranked(index: DocumentIndex, embedder: FakeEmbedder, reranker: FakeReranker | None) -> list[str]:
    return [h.chunk.text for h in index.search(embedder.embed_query(QUERY), QUERY, 5, reranker=reranker)]

def test_a_reranker_for_english_reorders_an_english_complete_index() -> None:
    index, embedder = build(TEXTS, language="en")
    plain, reranked = ranked(index, embedder, None), ranked(index, embedder, english_only())
    assert reranked != plain and sorted(reranked) == sorted(plain)
    assert reranked[0] == TEXTS[1]  # the one passage holding every query word

def test_a_document_in_another_language_keeps_todays_order() -> None:
    index, embedder = build(TEXTS, language="de")
    reranker = english_only()
    assert ranked(index, embedder, reranker) == ranked(index, embedder, None)
    assert reranker.calls == 0

def test_a_partial_index_keeps_todays_order() -> None:
    embedder = FakeEmbedder()
    chunks = make_chunks(TEXTS, language="en")
    partial = DocumentIndex.embed(chunks, embedder, only=[0, 2, 4])
    assert partial.coverage < 1
    assert ranked(partial, embedder, english_only()) == ranked(partial, embedder, None)

def test_the_pool_reranks_its_head_with_the_same_rule() -> None:
    index, embedder = build(TEXTS, language="en", key="k" * 32)

    def embed(model_id: str, text: str) -> np.ndarray:
        return embedder.embed_query(text)

    def pooled(reranker: FakeReranker | None) -> list[str]:
        hits = search_pool([PoolSource(index=index)], [QUERY], embed, top_k=5, reranker=reranker)
        return [h.hit.chunk.text for h in hits]

    assert pooled(english_only())[0] == TEXTS[1]
    foreign, foreign_embedder = build(TEXTS, language="de", key="f" * 32)
    reranker = english_only()
    search_pool([PoolSource(index=foreign)], [QUERY], embed, top_k=5, reranker=reranker)
    assert reranker.calls == 0
