"""Settings read from the environment under their names, and deprecated names still honoured."""

from __future__ import annotations

import logging

import pytest

from mcp_server.core.settings import Settings
from tests.mcp_harness import memory_client


def test_the_deprecated_gpu_concurrency_still_sets_the_model_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_MODEL_CONCURRENCY", raising=False)
    monkeypatch.setenv("GPU_CONCURRENCY", "3")

    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    assert settings.model_concurrency == 3
    assert settings.deprecated == [("gpu_concurrency", "model_concurrency")]


def test_the_model_limit_set_by_its_own_name_wins_over_the_deprecated_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_GPU_CONCURRENCY", "3")
    monkeypatch.setenv("MCP_MODEL_CONCURRENCY", "1")

    assert Settings(_env_file=None).model_concurrency == 1  # type: ignore[call-arg]


def test_without_the_deprecated_name_nothing_is_deprecated(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MCP_GPU_CONCURRENCY", "GPU_CONCURRENCY", "MCP_MODEL_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)

    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    assert (settings.model_concurrency, settings.deprecated) == (2, [])


@pytest.mark.anyio
async def test_a_server_started_with_the_deprecated_name_logs_the_name_to_use(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_server.server.lifespan"):
        async with memory_client(gpu_concurrency=1) as client:
            await client.list_tools()

    deprecated = [r for r in caplog.records if r.getMessage() == "settings.deprecated"]
    assert [(r.setting, r.use) for r in deprecated] == [  # type: ignore[attr-defined]
        ("MCP_GPU_CONCURRENCY", "MCP_MODEL_CONCURRENCY")]
