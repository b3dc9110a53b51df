"""The dense side's focus: of each candidate chunk, the sentences that share the question's words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.focus import SENTENCES_PER_CANDIDATE, UnitTerms, best_sentences, keep_units, topped_up
from mcp_server.text.sentences import sentence_units
from tests.retrieval._chunks import make_chunks

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def _keep_one_by_one(shared: list[float], owners: list[int], per_chunk: int) -> list[bool]:
    """The rule written out: per chunk its ``per_chunk`` weightiest units that share anything (ties:
    the earlier), or its first unit when none shares anything."""
    keep = [False] * len(shared)
    for owner in sorted(set(owners)):
        units = [i for i, o in enumerate(owners) if o == owner]
        best = sorted(units, key=lambda i: (-shared[i], i))[:per_chunk]
        if shared[best[0]] > 0:
            for i in best:
                keep[i] = shared[i] > 0
        else:
            keep[units[0]] = True
    return keep


@given(groups=st.lists(st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.5, 2.25]), min_size=1, max_size=6),
                       min_size=1, max_size=8),
       per_chunk=st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_keeping_units_follows_the_rule_for_any_weights(groups: list[list[float]], per_chunk: int) -> None:
    shared = [w for group in groups for w in group]
    owners = [g * 3 for g, group in enumerate(groups) for _ in group]  # chunk positions with gaps
    kept = keep_units(np.array(shared), np.array(owners), per_chunk)
    assert kept.tolist() == _keep_one_by_one(shared, owners, per_chunk)


def test_a_complete_index_weighs_the_sentences_as_a_first_answer_selects_them() -> None:
    text = (CORPUS / "docs" / "txt" / "book-war-and-peace-1225p.txt").read_text(encoding="utf-8")[200_000:260_000]
    chunks = make_chunks([text[i:i + 1500] for i in range(0, len(text), 1500)])
    positions = np.arange(0, len(chunks), 2, dtype=np.int64)
    query = "What did Prince Andrew say to his father about the war and the army?"
    texts, owners = sentence_units([chunks[int(p)] for p in positions])
    selected = best_sentences(query, SENTENCES_PER_CANDIDATE)(texts, positions[owners])
    terms = UnitTerms(chunks, ["en"])
    shared, unit_owners = terms.shared(query, positions)
    assert unit_owners.tolist() == positions[owners].tolist()
    assert keep_units(shared, unit_owners, SENTENCES_PER_CANDIDATE).tolist() == selected.tolist()
    assert 0 < selected.sum() < len(texts)
    again, _ = terms.shared(query, positions[::-1])  # learnt once, asked in any order
    assert sorted(again.tolist()) == sorted(shared.tolist())


def _index(chunks: list, cosines: list[list[float]]) -> tuple[DocumentIndex, np.ndarray]:
    """An index whose sentence vectors have the given cosines to the query vector (1, 0, 0)."""
    vectors = np.array([[c, float(np.sqrt(1 - c * c)), 0.0] for units in cosines for c in units], dtype=np.float32)
    owners = np.repeat(np.arange(len(cosines)), [len(units) for units in cosines])
    index = DocumentIndex.build(chunks, vectors, model_id="m", owners=owners)
    return index, np.array([1.0, 0.0, 0.0], dtype=np.float32)


def test_a_chunk_scores_by_its_sentences_that_share_the_question_words() -> None:
    chunks = make_chunks(["Rivers flood in spring. Tigers hunt at night.",
                          "Engines stall in winter. Tigers sleep all day.",
                          "Comets cross the night sky slowly. Deserts are dry in the summer months."])
    assert [len(sentence_units([c])[0]) for c in chunks] == [2, 2, 2]
    index, vec = _index(chunks, [[0.2, 0.6], [0.9, 0.3], [0.5, 0.4]])
    hits = index.search(vec, "when do tigers hunt", 3)
    dense = {h.chunk.text: h.dense for h in hits}
    # the engines sentence is the closest vector, but it shares no word of the question
    assert abs(dense[chunks[0].text] - 0.6) < 1e-5 and abs(dense[chunks[1].text] - 0.3) < 1e-5
    whole = {h.chunk.text: h.dense for h in index.search(vec, "when do tigers hunt", 3, mode="dense")}
    assert abs(whole[chunks[1].text] - 0.9) < 1e-5  # the dense mode is the cosines alone
    other_words = {h.chunk.text: h.dense for h in index.search(vec, "when do big cats prey", 3)}
    assert abs(other_words[chunks[1].text] - 0.9) < 1e-5  # no sentence shares a word: cosines alone


def test_a_question_sharing_no_word_keeps_each_chunks_first_unit_and_the_budget_left_embeds_the_best_chunks_whole(
) -> None:
    texts = ["Один два три.", "Четыре пять.", "Шесть семь восемь.", "Девять десять.", "Одиннадцать."]
    owners = np.array([3, 3, 8, 8, 8])  # chunk 8 ranks first, chunk 3 second
    ranks = {8: 0, 3: 1}
    budget = len(texts[0]) + sum(len(t) for t in texts[2:])  # chunk 3's first unit, chunk 8 whole
    focus = best_sentences("Which numbers are counted?", 3, ranks=ranks, max_chars=budget)
    assert focus(texts, owners).tolist() == [True, False, True, False, False]
    assert topped_up(focus, ranks, budget)(texts, owners).tolist() == [True, False, True, True, True]
    assert topped_up(focus, ranks, 1e9)(texts, owners).all()
