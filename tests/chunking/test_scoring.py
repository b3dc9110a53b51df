"""The seed's importance score and content types, applied per line."""

from __future__ import annotations

import pytest

from mcp_server.chunking import content_type, importance_score

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
