"""Scraping /metrics and calling tools over streamable HTTP, for the metrics tests."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.mcp_harness import http_client, payload

Series = tuple[str, frozenset[tuple[str, str]]]


def parse(text: str) -> dict[Series, float]:
    """Every sample of a scrape: (sample name, labels) -> value."""
    out: dict[Series, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def scrape(base: str, key: str | None = None) -> dict[Series, float]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(f"{base}/metrics", headers=headers, timeout=30)
    response.raise_for_status()
    return parse(response.text)


def value(samples: dict[Series, float], name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels`` (0 when none)."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= have)


def delta(after: dict[Series, float], before: dict[Series, float], name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def call(base: str, tool: str, args: dict[str, Any], key: str | None = None) -> tuple[bool, dict[str, Any]]:
    """One tool call on a fresh connection: (ok, structured payload)."""
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with http_client(f"{base}/mcp", headers=headers, keepalive=False) as client:
        result = await client.call_tool(tool, args)
    return not result.is_error, payload(result)


def codes(results: list[tuple[str, tuple[bool, dict[str, Any]]]]) -> Counter[tuple[str, str]]:
    """(tool, OK or error code) of each call made."""
    return Counter((tool, "OK" if ok else body["code"]) for tool, (ok, body) in results)
