"""Passage ids: stable, parseable, and refusing anything malformed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.citations.passages import parse_passage_id, passage_id, text_checksum

KEY = "0123456789abcdef0123456789abcdef"


def test_an_id_names_the_index_the_position_and_the_text() -> None:
    pid = passage_id(KEY, 7, "Some chunk text.")
    ref = parse_passage_id(pid)
    assert (ref.key, ref.position, ref.checksum) == (KEY, 7, text_checksum("Some chunk text."))
    assert passage_id(KEY, 7, "Some chunk text.") == pid  # deterministic: no clock, no randomness


def test_another_text_at_the_same_position_gets_another_id() -> None:
    assert passage_id(KEY, 7, "old text") != passage_id(KEY, 7, "new text")


@pytest.mark.parametrize("bad", [
    "", "p1", f"p2.{KEY}.1.0123456789", f"p1.{KEY}.-1.0123456789", f"p1.{KEY}.01.0123456789",
    f"p1.{KEY.upper()}.1.0123456789", "p1.../etc.1.0123456789", f"p1.{KEY}.1.012345678", f"p1.{KEY}.1.0123456789.x",
])
def test_malformed_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not a passage id"):
        parse_passage_id(bad)


def test_an_id_needs_an_index_key() -> None:
    with pytest.raises(ValueError):
        passage_id("", 0, "text")


@given(position=st.integers(min_value=0, max_value=10**8), text=st.text())
def test_every_id_parses_back(position: int, text: str) -> None:
    ref = parse_passage_id(passage_id(KEY, position, text))
    assert ref.position == position and ref.checksum == text_checksum(text)
