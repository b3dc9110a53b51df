"""The analysed corpus and the BM25 index built from its arrays."""

from __future__ import annotations

import bm25s
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.text.analysed import AnalysedCorpus, bm25_index
from mcp_server.text.lexical import bm25_tokens
from tests.conftest import DOCS


def _bm25s_own(corpus: AnalysedCorpus) -> bm25s.BM25:
    model = bm25s.BM25()
    model.index((corpus.id_lists(), {token: i for i, token in enumerate(corpus.vocabulary)}), show_progress=False)
    return model


def _same_index(corpus: AnalysedCorpus) -> None:
    ours, theirs = bm25_index(corpus), _bm25s_own(corpus)
    assert ours.vocab_dict == theirs.vocab_dict
    assert ours.scores["num_docs"] == theirs.scores["num_docs"]
    for part in ("data", "indices", "indptr"):
        assert ours.scores[part].dtype == theirs.scores[part].dtype
        assert ours.scores[part].tobytes() == theirs.scores[part].tobytes(), part
    query = list(corpus.vocabulary[:3])
    assert np.array_equal(ours.get_scores(query), theirs.get_scores(query))


def test_the_index_from_arrays_is_bm25s_own_to_the_bit_on_real_documents() -> None:
    texts = []
    for path in sorted((DOCS / "txt").glob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")[:400_000]
        texts += [text[at : at + 1_500] for at in range(0, len(text), 1_500)]
    assert len(texts) > 200
    _same_index(AnalysedCorpus.of(bm25_tokens(texts)))


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=12), min_size=1, max_size=30)
       .filter(lambda chunks: any(chunks)))
def test_the_index_from_arrays_is_bm25s_own_to_the_bit_on_any_corpus(chunks: list[list[str]]) -> None:
    _same_index(AnalysedCorpus.of(chunks))
