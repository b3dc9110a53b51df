"""DocumentIndex: hybrid ranking, relevance-preserving diversity, neighbours, locations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.citations.neighbours import merge_texts
from mcp_server.encoders import FakeEmbedder
from mcp_server.rerankers import FakeReranker
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.index import extended, reads_foreign
from tests.retrieval._chunks import make_chunks, overlapping_chunks

TEXTS = [
    "# SUMMARY: key critical findings, results and recommendations. Revenue rose 12% to $4M.",
    "Bananas are yellow fruit that grow in tropical climates.",
    "The Eiffel Tower is located in Paris, France, and was built in 1889.",
    "Important key summary: conclusion and results of the 2023 audit, 15% growth, $3M.",
    "Submarines travel under the deep sea using ballast tanks.",
]


def build(texts: list[str], **kwargs: object) -> tuple[DocumentIndex, FakeEmbedder]:
    embedder = FakeEmbedder()
    chunks = make_chunks(texts, **kwargs)  # type: ignore[arg-type]
    return DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]), model_id=embedder.model_id), embedder


def search(index: DocumentIndex, embedder: FakeEmbedder, query: str, top_k: int = 5, **kwargs: object):  # type: ignore[no-untyped-def]
    return index.search(embedder.embed_query(query), query, top_k, **kwargs)  # type: ignore[arg-type]


def test_the_most_relevant_chunk_ranks_first_even_with_the_lowest_importance() -> None:
    importance = [1.0, 0.9, 0.0, 1.0, 0.9]
    index, embedder = build(TEXTS, importance=importance)
    hits = search(index, embedder, "Where is the Eiffel Tower located?")
    assert hits[0].chunk.text == TEXTS[2]
    assert hits[0].chunk.importance_score == 0.0


def test_results_are_in_descending_score_order_and_carry_every_score() -> None:
    index, embedder = build(TEXTS)
    hits = search(index, embedder, "summary of results and growth", top_k=3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.dense is not None and -1.0 <= h.dense <= 1.0001 for h in hits)
    assert all(h.bm25 is not None for h in hits)
    assert all(h.rerank is None for h in hits)


def test_results_carry_character_locations() -> None:
    index, embedder = build(TEXTS)
    hit = search(index, embedder, "ballast tanks submarine", top_k=1)[0]
    assert hit.chunk.text == TEXTS[4]
    assert hit.chunk.location.end_char - hit.chunk.location.start_char == len(TEXTS[4])


def test_top_k_is_clamped_to_between_1_and_20() -> None:
    index, embedder = build([f"chunk number {i} about topic {i % 7}" for i in range(40)])
    assert len(search(index, embedder, "topic", top_k=0)) == 1
    assert len(search(index, embedder, "topic", top_k=500)) == 20


def test_the_reranker_decides_the_final_order() -> None:
    index, embedder = build(TEXTS)
    hits = search(index, embedder, "yellow bananas tropical", top_k=3, reranker=FakeReranker())
    assert hits[0].chunk.text == TEXTS[1]
    assert all(h.rerank is not None for h in hits)
    assert hits[0].score == hits[0].rerank


def test_duplicate_chunks_are_dropped_without_reordering_the_rest() -> None:
    texts = [TEXTS[2], TEXTS[2], TEXTS[1], "Paris is the capital of France; the Eiffel Tower stands there.", TEXTS[4]]
    index, embedder = build(texts)
    hits = search(index, embedder, "Eiffel Tower Paris France", top_k=3)
    bodies = [h.chunk.text for h in hits]
    assert bodies.count(TEXTS[2]) == 1 and len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_an_empty_index_returns_no_hits() -> None:
    index, embedder = build([])
    assert search(index, embedder, "anything") == []


def test_a_query_of_stopwords_only_still_ranks_by_similarity() -> None:
    index, embedder = build(TEXTS)
    hits = search(index, embedder, "the of and", top_k=2)
    assert len(hits) == 2 and all(h.bm25 is None or h.bm25 == 0 for h in hits)


def test_neighbours_merge_without_duplicating_overlap_text() -> None:
    content = " ".join(f"sentence{i:03d} says word{i}." for i in range(80))
    chunks = overlapping_chunks(content, size=200, overlap=50)
    embedder = FakeEmbedder()
    index = DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]), model_id="fake")
    target = chunks[5]
    middle = content[target.location.start_char + 60 : target.location.end_char - 60]
    query = " ".join(middle.split()[1:-1])  # words only chunk 5 holds
    hits = index.search(embedder.embed_query(query), query, 3, neighbors=1)
    blocks = [h.text for h in hits]
    assert all(b is not None and b in content for b in blocks)  # no doubled overlap anywhere
    merged = next(h for h in hits if h.chunk.chunk_index == 5)
    assert merged.text is not None and target.text in merged.text
    assert merged.chunk.location.start_char <= chunks[4].location.start_char
    assert merged.chunk.location.end_char >= chunks[6].location.end_char
    assert merged.text == content[merged.chunk.location.start_char : merged.chunk.location.end_char]
    spans = sorted((h.chunk.location.start_char, h.chunk.location.end_char) for h in hits)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))  # merged blocks are disjoint


def test_merge_texts_drops_shared_text_when_offsets_are_unknown() -> None:
    first, second = make_chunks(["alpha beta gamma delta", "gamma delta epsilon"])
    # a span that does not match the text length forces the text-matching path
    second = dataclasses.replace(second, location=dataclasses.replace(second.location, end_char=999))
    assert merge_texts([first, second]) == "alpha beta gamma delta epsilon"


def test_merge_texts_uses_offsets_for_overlapping_spans() -> None:
    content = "0123456789abcdefghij"
    chunks = overlapping_chunks(content, size=8, overlap=3)
    assert merge_texts(chunks) == content


def test_fake_embedder_vectors_are_unit_length_and_deterministic() -> None:
    a, b = FakeEmbedder(), FakeEmbedder()
    va, vb = a.embed(["one two three", "four"]), b.embed(["one two three", "four"])
    assert np.allclose(va, vb)
    assert np.allclose(np.linalg.norm(va, axis=1), 1.0)


def test_texts_reach_the_model_shortest_first_and_come_back_in_the_callers_order() -> None:
    class Recording(FakeEmbedder):
        def embed_batch(self, texts):  # type: ignore[no-untyped-def]
            batches.append(list(texts))
            return super().embed_batch(texts)

    batches: list[list[str]] = []
    texts = ["five words are right here", "one", "three words here", "one", "two words", "four words right here"]
    vectors = Recording(batch_size=2).embed(texts)
    assert batches == [["one", "two words"], ["three words here", "four words right here"],
                       ["five words are right here"]]
    assert np.allclose(vectors, FakeEmbedder().embed(texts))


def test_with_a_token_budget_a_batch_holds_as_many_texts_as_pad_to_it() -> None:
    class Recording(FakeEmbedder):
        def embed_batch(self, texts):  # type: ignore[no-untyped-def]
            batches.append([len(text.split()) + 2 for text in texts])  # the fake's token counts
            return super().embed_batch(texts)

    batches: list[list[int]] = []
    texts = [" ".join(["w"] * n) + f" {i}" for i, n in enumerate([1, 1, 1, 1, 2, 5, 9, 30])]
    embedder = Recording(batch_size=2)
    embedder.batch_tokens = 16
    vectors = embedder.embed(texts)
    # counts 4,4,4,4,5,8,12,33: four of 4 pad to 16, then 5+8 (2 x 8), then 12, then 33 alone
    assert batches == [[4, 4, 4, 4], [5, 8], [12], [33]]
    assert np.allclose(vectors, FakeEmbedder().embed(texts))


def test_batches_side_by_side_keep_the_order_the_cache_and_the_progress() -> None:
    class SideBySide(FakeEmbedder):
        def batches_at_once(self, running: int) -> int:
            widths.append(running)
            return 3

        def embed_batches(self, batches):  # type: ignore[no-untyped-def]
            groups.append([list(batch) for batch in batches])
            return super().embed_batches(batches)

    widths: list[int] = []
    groups: list[list[list[str]]] = []
    reported: list[tuple[int, int]] = []
    texts = [f"text {'word ' * (i % 7)}{i}" for i in range(23)]
    embedder = SideBySide(batch_size=4)
    vectors = embedder.embed(texts, progress=lambda done, total, _: reported.append((done, total)))
    assert np.allclose(vectors, FakeEmbedder().embed(texts))
    assert [len(group) for group in groups] == [3, 3]  # 6 batches of at most 4: 3 side by side, twice
    assert set(widths) == {1} and reported == [(0, 23), (12, 23), (23, 23)]
    assert embedder.texts_embedded == 23 and embedder._running == 0
    embedder.embed(texts)  # all known now: nothing reaches the model again
    assert len(groups) == 2


@given(content=st.text(min_size=1, max_size=300), size=st.integers(2, 40), data=st.data())
@settings(max_examples=200, deadline=None)
def test_merging_consecutive_chunks_reproduces_their_span_exactly(
    content: str, size: int, data: st.DataObject,
) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = overlapping_chunks(content, size=size, overlap=overlap)
    lo = data.draw(st.integers(0, len(chunks) - 1))
    hi = data.draw(st.integers(lo, len(chunks) - 1))
    span = chunks[lo : hi + 1]
    assert merge_texts(span) == content[span[0].location.start_char : span[-1].location.end_char]


def test_a_chunk_whose_best_sentence_is_specific_ranks_first_though_its_whole_vector_would_not() -> None:
    filler = " ".join(f"Gardens number {i} grow roses tulips daisies lilies and ferns in spring." for i in range(6))
    specific = "The reactor melted at noon. " + filler
    generic = "Reactor design notes cover the reactor hall and reactor staff rotas."
    chunks = make_chunks([specific, generic])
    embedder = FakeEmbedder()
    query = "reactor melted noon"
    whole = DocumentIndex.build(chunks, embedder.embed([specific, generic]), model_id=embedder.model_id)
    assert search(whole, embedder, query, top_k=1, mode="dense")[0].chunk.text == generic
    index = DocumentIndex.embed(chunks, embedder)
    assert index.faiss.ntotal == 8 and index.owners.tolist() == [0] * 7 + [1]
    hits = search(index, embedder, query, top_k=2, mode="dense")
    assert [h.chunk.text for h in hits] == [specific, generic]
    best_sentence = float(embedder.embed(["The reactor melted at noon."])[0] @ embedder.embed_query(query))
    assert hits[0].dense is not None and abs(hits[0].dense - best_sentence) < 1e-5


def test_a_bm25_only_candidate_reports_its_best_sentence_cosine() -> None:
    texts = [f"Topic {i} discusses item {i} at some length here." for i in range(120)]
    texts.append("Nothing here matches. Except zanzibar, mentioned once in passing.")
    embedder = FakeEmbedder()
    index = DocumentIndex.embed(make_chunks(texts), embedder)
    # the query vector points at the topic chunks, so the last chunk is no dense candidate
    query_vec = embedder.embed_query("topic item discusses")
    hits = index.search(query_vec, "zanzibar", 1, mode="bm25")
    expected = max(float(v @ query_vec) for v in embedder.embed(["Nothing here matches.",
                                                                  "Except zanzibar, mentioned once in passing."]))
    assert hits[0].chunk.text == texts[-1] and hits[0].dense is not None
    assert abs(hits[0].dense - expected) < 1e-5


def _unit_vectors(cosines: list[float]) -> np.ndarray:
    """Unit vectors in 4 dimensions with the given cosines to the query (1, 0, 0, 0)."""
    return np.array([[c, float(np.sqrt(1 - c * c)), 0.0, 0.0] for c in cosines], dtype=np.float32)


def test_candidates_among_all_allowed_positions_rank_and_score_as_without_a_filter() -> None:
    # well separated cosines, so FAISS and the exact path cannot order two units differently
    rng = np.random.default_rng(7)
    cosines = rng.permutation(np.linspace(0.05, 0.95, 120)).reshape(60, 2)
    owners = np.repeat(np.arange(60), 2)
    texts = [f"Topic {i} discusses item {i % 7} and revenue {i % 3} at some length." for i in range(60)]
    index = DocumentIndex.build(make_chunks(texts), _unit_vectors(cosines.ravel().tolist()), model_id="m",
                                owners=owners)
    query, vec = "revenue item 3", np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    everything = np.arange(60, dtype=np.int64)
    filtered, unfiltered = index.candidates(vec, query, 20, everything), index.candidates(vec, query, 20)
    assert [pos for pos, _ in filtered] == [pos for pos, _ in unfiltered]
    assert np.allclose([sim for _, sim in filtered], [sim for _, sim in unfiltered])
    assert all(abs(sim - cosines[pos].max()) < 1e-5 for pos, sim in unfiltered)  # each its best unit's cosine
    some = everything[::2]
    assert {pos for pos, _ in index.candidates(vec, query, 20, some)} <= set(some.tolist())


def test_the_partial_indexes_of_a_document_find_its_template_passages_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_server.retrieval import index as index_module

    calls: list[int] = []
    real = index_module.template_mask
    monkeypatch.setattr(index_module, "template_mask",
                        lambda texts, runs=None: calls.append(len(texts)) or real(texts, runs))
    chunks = make_chunks([f"Passage {i} about topic {i} with some words of its own." for i in range(6)])
    embedder = FakeEmbedder()
    base = DocumentIndex.embed(chunks, embedder, only=())
    first, second = extended(base, [0, 1], embedder), extended(base, [4], embedder)
    vec = embedder.embed_query("topic 4")
    assert first.search(vec, "topic 1", 2) and second.search(vec, "topic 4", 2)
    assert calls == [6]
    assert base.templates is first.templates is second.templates


def test_a_question_in_another_script_reads_as_foreign_to_a_document_and_one_in_its_language_does_not() -> None:
    index, _ = build(TEXTS)
    assert not reads_foreign(index, "Where is the Eiffel Tower located?")
    assert reads_foreign(index, "埃菲尔铁塔位于哪里？")


def test_a_short_question_in_the_script_of_a_chinese_document_is_never_foreign_to_it() -> None:
    texts = ["北京是中国的首都，有很多历史建筑和博物馆。", "长江是亚洲最长的河流，流经很多城市。",
             "熊猫主要生活在四川的山区，吃竹子。"]
    index, _ = build(texts, language="zh-cn")
    assert not reads_foreign(index, "谁赢得了比赛？")  # no word of it is the document's, and the detector may not know
    assert reads_foreign(index, "Who won the match?")


def test_a_base_built_with_its_templates_now_finds_them_once_from_the_words_bm25_read() -> None:
    chunks = make_chunks([f"Passage {i} about topic {i} with some words of its own." for i in range(6)])
    now = DocumentIndex.embed(chunks, FakeEmbedder(), only=(), templates_now=True)
    later = DocumentIndex.embed(chunks, FakeEmbedder(), only=())
    assert now.templates.tolist() == later.templates.tolist()
