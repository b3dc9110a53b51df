"""The learned ranker: the bundled model loads, and the index orders its head by it where it applies."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from mcp_server.encoders import FakeEmbedder
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.index import fused_head, signals
from mcp_server.retrieval.learned import FEATURES, MODEL_PATH, LearnedRanker, bundled
from tests.retrieval._chunks import make_chunks

TEXTS = [
    "Revenue grew in the year as the company sold more services; revenue growth came from new customers.",
    "The weather in the region was mild, and the harbour stayed open through the winter months.",
    "| Item | 2023 | 2022 |\n| --- | --- | --- |\n| Revenue | 4,210 | 3,950 |\n| Cost of revenue | 2,100 | 2,020 |",
    "Our employees volunteered in local schools and planted trees along the river.",
    "Management discussed revenue, the revenue outlook and how revenue is recognised over time.",
]


def build(texts: list[str], *, table: int | None = None, language: str = "") -> tuple[DocumentIndex, FakeEmbedder]:
    embedder = FakeEmbedder()
    chunks = make_chunks(texts, language=language)
    if table is not None:
        chunks[table] = dataclasses.replace(chunks[table], content_type="table")
    return DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]), model_id=embedder.model_id), embedder


def ranked(index: DocumentIndex, embedder: FakeEmbedder, query: str, ranker: LearnedRanker | None) -> list[str]:
    return [h.chunk.text for h in index.search(embedder.embed_query(query), query, 5, ranker=ranker)]


def test_the_bundled_model_loads_with_the_features_this_code_computes() -> None:
    body = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    model = bundled()
    assert model.names == FEATURES == tuple(body["features"])
    assert len(model.weights) == len(model.mean) == len(model.scale) == len(FEATURES)
    assert np.all(model.scale > 0)
    assert body["trained_on"]["data"].startswith("TAT-QA")


def test_a_model_for_other_features_is_refused() -> None:
    body = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="features"):
        LearnedRanker.from_dict({**body, "features": [*body["features"][1:], "something else"]})


def test_the_learned_ranker_reorders_the_head_of_an_english_index() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    fused = ranked(index, embedder, query, None)
    learned = ranked(index, embedder, query, LearnedRanker.fake(table=1.0))
    assert fused[0] != TEXTS[2]
    assert learned[0] == TEXTS[2]
    assert sorted(learned) == sorted(fused)  # the same results, another order


def test_the_learned_order_keeps_the_fused_order_among_equal_scores() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    assert ranked(index, embedder, query, LearnedRanker.fake()) == ranked(index, embedder, query, None)


def test_a_document_in_another_language_keeps_the_fused_order() -> None:
    index, embedder = build(TEXTS, table=2, language="de")
    query = "What was revenue in 2023?"
    assert index.languages == ["de"]
    assert ranked(index, embedder, query, LearnedRanker.fake(table=1.0)) == ranked(index, embedder, query, None)


def test_a_partial_index_keeps_the_fused_order() -> None:
    embedder = FakeEmbedder()
    chunks = make_chunks(TEXTS)
    chunks[2] = dataclasses.replace(chunks[2], content_type="table")
    partial = DocumentIndex.embed(chunks, embedder, only=[0, 2, 4])
    query = "What was revenue in 2023?"
    assert partial.coverage < 1
    assert ranked(partial, embedder, query, LearnedRanker.fake(table=1.0)) == ranked(partial, embedder, query, None)


def test_the_pool_takes_each_documents_learned_order() -> None:
    from mcp_server.retrieval.pool import PoolSource, search_pool

    index, embedder = build(TEXTS, table=2)
    index.key = "k" * 32
    query = "What was revenue in 2023?"

    def embed(model_id: str, text: str) -> np.ndarray:
        return embedder.embed_query(text)

    def pooled(ranker: LearnedRanker | None) -> list[str]:
        hits = search_pool([PoolSource(index=index)], [query], embed, top_k=5, ranker=ranker)
        return [h.hit.chunk.text for h in hits]

    assert pooled(None)[0] != TEXTS[2]
    assert pooled(LearnedRanker.fake(table=1.0))[0] == TEXTS[2]


def test_the_signals_describe_the_candidates() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "revenue 2023"
    head = fused_head(index, embedder.embed_query(query), query, 5)
    found = signals(index, query, head)
    at = [c.pos for c in head].index(2)
    assert found.table[at] and found.table.sum() == 1
    assert found.digits[at] > 0.1
    assert found.presence.shape == (2, len(head))  # "revenue" and "2023"
    assert found.presence[:, at].all()
    assert found.numeric_query
