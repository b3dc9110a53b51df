"""A first answer to a question in another language than its document's (``partial.skimmed``): its
words choose no candidates, so the units it embeds spread evenly over the whole document, and what
the budget leaves looks further into the chunks nearest the question (``partial.refined``)."""

from __future__ import annotations

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes.builds import PendingBuild
from mcp_server.indexes.partial import behind, complete_within, evenly, partial_view, refined, spread_order
from mcp_server.retrieval import DocumentIndex
from tests.retrieval._chunks import make_chunks


@given(n=st.integers(0, 300), first=st.lists(st.integers(-3, 310), max_size=8))
@settings(max_examples=200, deadline=None)
def test_the_skim_order_holds_every_position_once_the_given_ones_first(n: int, first: list[int]) -> None:
    order = spread_order(n, first=first)
    given_ones = list(dict.fromkeys(pos for pos in first if 0 <= pos < n))
    assert sorted(order) == list(range(n)) and order[: len(given_ones)] == given_ones


def test_any_prefix_of_the_skim_order_covers_the_document_evenly() -> None:
    order = spread_order(100)
    assert order[:4] == [0, 64, 32, 96]
    # the first 13 positions leave no gap wider than 16 chunks anywhere in the document
    assert max(np.diff(sorted([*order[:13], 100]))) <= 16


def test_the_budget_embeds_every_chunks_first_unit_before_any_second_one() -> None:
    texts = ["a1", "a2", "a3", "b1", "c1", "c2"]
    owners = np.array([0, 0, 0, 1, 2, 2])
    assert evenly([0, 1, 2], 6)(texts, owners).tolist() == [True, False, False, True, True, False]
    assert evenly([0, 1, 2], 10)(texts, owners).tolist() == [True, True, False, True, True, True]
    # a unit past what is left is passed over for the shorter ones after it
    assert evenly([0, 1, 2], 5)(["a1", "a2", "bbbb", "c1"], np.array([0, 0, 1, 2])).tolist() == [
        True, False, False, True]


def test_units_already_kept_cost_nothing() -> None:
    texts = ["a1", "a2", "b1", "b2"]
    owners = np.array([0, 0, 1, 1])

    def known(units: list[str], owners: np.ndarray) -> np.ndarray:
        return np.array([False, True, False, True])

    assert evenly([0, 1], 4, known)(texts, owners).tolist() == [True, True, True, True]


def test_a_foreign_question_over_a_long_document_gets_vectors_in_every_chunk_within_the_budget() -> None:
    texts = [f"Der Fluss Nummer {i} fließt ruhig. Er fließt durch das Tal. Und durch das Dorf {i}." for i in range(40)]
    chunks = make_chunks(texts, language="de")
    embedder = FakeEmbedder()
    embedder.prior_chars_per_second = 1_000.0  # 2,500 characters: the first sentence of every chunk
    base = DocumentIndex.embed(chunks, embedder, only=())
    question = "When did the volcano erupt?"
    view = partial_view(base, question, embedder, 5, foreign=True)
    assert set(view.owners.tolist()) == set(range(40)) and view.faiss.ntotal < 3 * 40
    # a question in the document's language embeds its best candidates, not the whole document
    own = partial_view(base, "Wann fließt der Fluss Nummer 7?", embedder, 5)
    assert len(set(own.owners.tolist())) <= 5


def test_a_build_is_behind_when_even_half_again_its_pace_would_not_end_it_in_time() -> None:
    assert behind(elapsed=3.0, progressed=100, left=2_000, remaining=27.0)  # 60 s to go at its pace
    assert not behind(elapsed=3.0, progressed=100, left=1_000, remaining=27.0)  # 30 s: 1.5x pace ends it
    assert not behind(elapsed=3.0, progressed=0, left=2_000, remaining=27.0)  # not moving yet: not judged


async def _build(pending: PendingBuild, step: int, total: int) -> None:
    """A background build embedding ``step`` units every 10 ms of ``total``, then done."""
    while pending.embedded[0] < total:
        await anyio.sleep(0.01)
        pending.embedded = (min(pending.embedded[0] + step, total), total)
    pending.done.set()


def _pending() -> PendingBuild:
    embedder = FakeEmbedder()  # estimated as instant: every wait starts
    chunks = make_chunks(["Der Fluss fließt ruhig durch das Tal."] * 3, language="de")
    return PendingBuild(key="k", base=DocumentIndex.embed(chunks, embedder, only=()), embedder=embedder)


@pytest.mark.anyio
async def test_a_foreign_question_stops_waiting_as_soon_as_the_builds_pace_shows_it_ends_past_the_wait() -> None:
    pending, found = _pending(), []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_build, pending, 10, 1_000_000)  # ~17 minutes at its pace
        started = anyio.current_time()
        found.append(await complete_within(pending, 30.0, lambda key: None, poll=0.01, observe=0.1))
        waited = anyio.current_time() - started
        tasks.cancel_scope.cancel()
    assert found == [None] and waited < 5.0  # not the whole 30 s


@pytest.mark.anyio
async def test_a_foreign_question_waits_for_a_build_whose_pace_ends_it_within_the_wait() -> None:
    pending = _pending()
    complete = pending.base
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_build, pending, 10, 300)  # ~0.3 s
        found = await complete_within(pending, 30.0, lambda key: complete, poll=0.01, observe=0.05)
    assert found is complete


def test_a_foreign_question_sharing_a_name_with_the_document_embeds_that_chunk_whole_and_skims_the_rest() -> None:
    texts = [f"Der Fluss Nummer {i} fließt ruhig. Er fließt durch das Tal. Und durch das Dorf {i}." for i in range(40)]
    texts[33] = "Der Vesuv brach im Jahr 79 aus. Die Asche begrub Pompeji. Die Stadt blieb verborgen."
    embedder = FakeEmbedder()
    embedder.prior_chars_per_second = 700.0  # 1,750 characters: every first unit, a few second ones
    base = DocumentIndex.embed(make_chunks(texts, language="de"), embedder, only=())
    view = partial_view(base, "When did the Vesuv bury Pompeji?", embedder, 5, foreign=True)
    owners = view.owners.tolist()
    assert owners.count(33) == 3 and set(owners) == set(range(40))


def test_the_budget_left_after_the_skim_reads_on_in_the_chunk_nearest_the_question() -> None:
    texts = ["a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3"]
    owners = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    held = np.array([True, False, False, True, False, False, True, False, False])
    query = np.array([1.0, 0.0], dtype=np.float32)
    sims = np.full(9, -np.inf, dtype=np.float32)
    sims[[0, 3, 6]] = np.array([[0.0, 1.0], [0.9, 0.44], [-1.0, 0.0]], dtype=np.float32) @ query  # b1 nearest
    asked: list[list[str]] = []

    def embed(batch: list[str]) -> np.ndarray:
        asked.append(batch)
        return np.tile(np.array([[0.0, 1.0]], dtype=np.float32), (len(batch), 1))

    done, vectors = refined(texts, owners, held, sims, query, 4, embed, share=0.3)
    assert asked == [["b2"], ["b3"]]  # one round each, 2 characters a unit, 4 in all
    assert done == [4, 5] and vectors.shape == (2, 2)  # rows only for the units embedded here
    assert held.tolist() == [True, False, False, True, True, True, True, False, False]


def test_a_foreign_question_reads_on_only_once_every_chunk_has_a_unit() -> None:
    texts = [f"Der Fluss Nummer {i} fließt ruhig. Er fließt durch das Tal. Und durch das Dorf {i}." for i in range(40)]
    embedder = FakeEmbedder()
    embedder.prior_chars_per_second = 1_000.0  # 2,500 characters: every first unit and a few more
    base = DocumentIndex.embed(make_chunks(texts, language="de"), embedder, only=())
    view = partial_view(base, "When did the volcano erupt?", embedder, 5, foreign=True)
    counts = np.bincount(view.owners, minlength=40)
    assert counts.min() >= 1 and counts.max() > 1
