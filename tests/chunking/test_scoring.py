"""The seed's importance score and content types, applied per line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.chunking import content_type, importance_score
from mcp_server.chunking._scoring import _counted_type

LONG = " and the text goes on long enough to count as a normal chunk of prose."


@pytest.mark.parametrize(("text", "score"), [
    ("plain prose" + LONG, 0.5),
    ("# Heading\nplain prose" + LONG, 0.7),
    ("EXECUTIVE OVERVIEW\nplain prose" + LONG, 0.7),
    ("revenue grew 12.5%" + LONG, 0.65),
    ("it cost $40" + LONG, 0.65),
    ("the key finding" + LONG, 0.6),
    ("the keyboard" + LONG, 0.5),
    ("short", 0.3),
    ("# SUMMARY: 12% result", 0.75),
])
def test_importance_follows_the_seed_rules(text: str, score: float) -> None:
    assert importance_score(text) == score


@pytest.mark.parametrize(("text", "kind"), [
    ("| a | b |\n| --- | --- |\n| 1 | 2 |", "table"),
    ("x\ty\tz\n1\t2\t3", "table"),
    ("Intro:\n- one\n- two\n• three", "list"),
    ("# Title\nSome text below it.", "heading"),
    ("Prose with a stray | pipe and a - dash.\nMore prose.\nAnd more.", "text"),
    ("--- Page 3 ---\n| a | b |\n|---|---|\n| 1 | 2 |", "table"),
])
def test_content_type_reads_lines_not_stray_characters(text: str, kind: str) -> None:
    assert content_type(text) == kind


# lines made of what the rules read: pipes, tabs, bullets, headings, page markers, line ends of every kind
_PIECES = ["| a | b |", "|---|", "\t", "- ", "* ", "• ", "-", "*", "#", "# Title", "####### x", "   ", "word",
           "--- Page 3 ---", "=== Sheet: s ===", "\n", "\r\n", "\r", "\x0b", "\x1c", "\u2028", " ", "x|y"]


@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join) | st.text(max_size=200))
def test_content_type_is_the_counted_one_on_any_text(text: str) -> None:
    assert content_type(text) == _counted_type(text)
