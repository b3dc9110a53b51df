"""The ranking rules every search shares (retrieval/ranking.py), on plain values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.rerankers.cross_encoders import Reranker
from mcp_server.retrieval import ranking
from mcp_server.retrieval.ranking import (
    BM25_WEIGHT,
    DENSE_WEIGHT,
    RRF_K,
    TEMPLATE_PRIOR,
    drop_duplicates,
    fuse,
    fuse_hybrid,
    rerank_head,
    score_ranking,
    take_per_document,
)


class TableReranker(Reranker):
    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [self.scores[text] for text in texts]


@dataclass
class Item:
    name: str
    doc: int = 0
    start: int = 0
    end: int = 10
    text: str = ""
    rerank: float | None = None

    def chunk(self) -> Chunk:
        return Chunk(text=self.text or self.name, chunk_index=0, total_chunks=1, token_count=1, importance_score=0.5,
                     content_type="text", doc_type="txt",
                     location=ChunkLocation(start_char=self.start, end_char=self.end))


def test_fusion_adds_each_rankings_weight_over_rrf_k_plus_the_rank() -> None:
    scores = fuse([(["a", "b"], 1.5), (["b", "c"], 1.0)])
    assert list(scores) == ["a", "b", "c"]  # first seen first
    assert scores["a"] == 1.5 / (RRF_K + 1)
    assert scores["b"] == 1.5 / (RRF_K + 2) + 1.0 / (RRF_K + 1)
    assert scores["c"] == 1.0 / (RRF_K + 2)


def test_fusion_follows_the_module_constant_so_a_benchmark_can_vary_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ranking, "RRF_K", 10)
    assert fuse([(["a"], 1.0)])["a"] == 1.0 / 11


def test_the_search_fusion_weighs_dense_and_bm25_and_leaves_out_chunks_without_a_query_term() -> None:
    bm25 = np.array([0.0, 3.0, 1.0, 0.0])  # 0 and 3 hold no query term
    scores = fuse_hybrid([3, 0], bm25, 0.5)
    assert scores == {
        3: DENSE_WEIGHT / (RRF_K + 1),
        0: DENSE_WEIGHT / (RRF_K + 2),
        1: BM25_WEIGHT * 0.5 / (RRF_K + 1),
        2: BM25_WEIGHT * 0.5 / (RRF_K + 2),
    }
    assert fuse_hybrid([3, 0], bm25, 1.0, n=1) == {3: DENSE_WEIGHT / (RRF_K + 1), 0: DENSE_WEIGHT / (RRF_K + 2),
                                                    1: BM25_WEIGHT / (RRF_K + 1)}
    assert fuse_hybrid(None, bm25, 1.0) == {1: BM25_WEIGHT / (RRF_K + 1), 2: BM25_WEIGHT / (RRF_K + 2)}
    assert list(fuse_hybrid([3, 0], None, 1.0)) == [3, 0]


def test_the_search_fusion_counts_a_template_passage_lower_in_every_ranking() -> None:
    templates = np.array([False, True, False])
    scores = fuse_hybrid([1, 0], np.array([0.0, 2.0, 1.0]), 1.0, templates=templates)
    assert scores[1] == DENSE_WEIGHT / (RRF_K + 1 + TEMPLATE_PRIOR) + BM25_WEIGHT / (RRF_K + 1 + TEMPLATE_PRIOR)
    assert scores[0] == DENSE_WEIGHT / (RRF_K + 2)
    assert scores[2] == BM25_WEIGHT / (RRF_K + 2)


def test_a_score_ranking_is_stable_and_can_keep_only_positive_scores() -> None:
    scores = np.array([0.0, 2.0, 1.0, 2.0, -1.0])
    assert score_ranking(scores) == [1, 3, 2, 0, 4]
    assert score_ranking(scores, 2) == [1, 3]
    assert score_ranking(scores, positive=True) == [1, 3, 2]
    assert score_ranking(np.zeros(0), positive=True) == []


def test_the_rerank_sorts_only_the_head_and_keeps_the_fused_order_on_ties() -> None:
    items = [Item("low"), Item("tie one"), Item("tie two"), Item("tail")]
    scores = {"low": 0.1, "tie one": 0.5, "tie two": 0.5}
    reranker = TableReranker(scores)
    ranked = rerank_head("q", items, reranker, lambda i: i.name, head=3)
    assert [i.name for i in ranked] == ["tie one", "tie two", "low", "tail"]
    assert items[3].rerank is None and items[0].rerank == 0.1


def test_a_weighted_rerank_moves_an_item_only_as_far_as_both_places_agree() -> None:
    items = [Item("a"), Item("b"), Item("c"), Item("d"), Item("tail")]
    scores = {"a": 0.0, "b": 0.1, "c": 0.2, "d": 0.9}  # the model puts d first, then c, b, a
    alone = rerank_head("q", list(items), TableReranker(scores), lambda i: i.name, head=4)
    assert [i.name for i in alone] == ["d", "c", "b", "a", "tail"]
    fused = rerank_head("q", list(items), TableReranker(scores), lambda i: i.name, head=4, weight=1.0)
    # given places 1-4, the model's 4,3,2,1: equal sums of reciprocal ranks for a/d and b/c keep the
    # given order among them; a heavier model weight lets the model's first lead
    assert [i.name for i in fused] == ["a", "d", "b", "c", "tail"]
    heavy = rerank_head("q", list(items), TableReranker(scores), lambda i: i.name, head=4, weight=2.0)
    assert [i.name for i in heavy][:2] == ["d", "c"] and heavy[-1].name == "tail"


def test_duplicates_are_dropped_without_reordering_and_filled_up_to_top_k() -> None:
    items = [Item("a", start=0, end=100), Item("a copy", start=500, end=600, text="A"),
             Item("overlaps a", start=10, end=90), Item("other doc", doc=1, start=0, end=100, text="a"),
             Item("b", start=200, end=300)]
    kept = drop_duplicates(items, Item.chunk, identity=lambda i: i.name, document=lambda i: i.doc)
    assert [i.name for i in kept] == ["a", "other doc", "b"]
    filled = drop_duplicates(items, Item.chunk, identity=lambda i: i.name, document=lambda i: i.doc, top_k=4)
    assert [i.name for i in filled] == ["a", "other doc", "b", "a copy"]


def test_at_most_per_document_results_come_from_each_document() -> None:
    items = [Item("a1", doc=0), Item("a2", doc=0), Item("a3", doc=0), Item("b1", doc=1), Item("c1", doc=2)]
    assert [i.name for i in take_per_document(items, 3, 2, lambda i: i.doc)] == ["a1", "a2", "b1"]
