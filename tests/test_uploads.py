"""POST /documents: a local file in, an upload:// document URL out, which every tool accepts on
every worker (and, with REDIS_URL, every host); refused without a key and beyond the size cap."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import DOCS
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload
from tests.multiworker.conftest import running_redis

pytestmark = pytest.mark.anyio

KEY = "upload-test-key"
PDF = DOCS / "pdf" / "multi_page.pdf"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _settings(tmp_path: Path, **overrides: Any) -> Any:
    values: dict[str, Any] = {"load_models": False, "api_keys": [KEY], "upload_dir": tmp_path / "uploads",
                              "rate_limit_rpm": 10_000, **overrides}
    return make_settings(**values)


async def _upload(base: str, data: bytes | None = None, **kwargs: Any) -> httpx.Response:
    headers = {**AUTH, **kwargs.pop("headers", {})}
    if data is not None:
        kwargs["content"] = data
    async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
        return await http.post(f"{base}/documents", headers=headers, **kwargs)


async def test_an_uploaded_file_is_answered_by_retrieve_chunks_through_its_document_url(tmp_path: Path) -> None:
    data = PDF.read_bytes()
    with ThreadedServer(_settings(tmp_path)) as server:
        response = await _upload(server.base, data, params={"filename": "multi_page.pdf"},
                                 headers={"Content-Type": "application/pdf"})
        assert response.status_code == 201, response.text
        answer = response.json()
        sha = hashlib.sha256(data).hexdigest()
        assert answer["document_url"] == f"upload://{sha}" and answer["bytes"] == len(data)
        assert answer["filename"] == "multi_page.pdf" and answer["expires_at"].endswith("Z")
        async with http_client(server.mcp_url, headers=AUTH) as session:
            result = await session.call_tool("retrieve_chunks", {"document_url": answer["document_url"],
                                                                 "query": "invention of the typewriter"})
            searched = await session.call_tool("search_documents", {"document_urls": [answer["document_url"]],
                                                                    "query": "typewriter"})
    body = payload(result)
    assert not result.is_error, body
    assert body["document_type"] == "pdf"
    assert any("typewriter" in item["text"] for item in body["results"])
    assert body["source"]["content_sha256"] == sha
    assert payload(searched)["documents"][0]["source"]["content_sha256"] == sha


async def test_a_multipart_upload_gives_the_same_url_and_another_worker_reads_it(tmp_path: Path) -> None:
    data = PDF.read_bytes()
    settings = _settings(tmp_path)
    with ThreadedServer(settings) as one, ThreadedServer(settings) as two:  # two workers, one upload folder
        async with httpx.AsyncClient(trust_env=False, timeout=60, headers=AUTH) as http:
            response = await http.post(f"{one.base}/documents",
                                       files={"file": ("report.pdf", data, "application/pdf")})
        assert response.status_code == 201, response.text
        url = response.json()["document_url"]
        assert url == f"upload://{hashlib.sha256(data).hexdigest()}"
        assert response.json()["filename"] == "report.pdf"
        async with http_client(two.mcp_url, headers=AUTH) as session:
            result = await session.call_tool("process_document", {"document_url": url})
    assert not result.is_error, payload(result)
    assert "typewriter" in payload(result)["content"]


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_an_upload_without_a_key_or_over_the_size_cap_is_refused_clearly(tmp_path: Path) -> None:
    settings = _settings(tmp_path, max_download_bytes=4096)
    with ThreadedServer(settings) as server:
        async with httpx.AsyncClient(trust_env=False, timeout=60) as http:
            anonymous = await http.post(f"{server.base}/documents", content=b"some text")
            wrong = await http.post(f"{server.base}/documents", content=b"some text",
                                    headers={"Authorization": "Bearer nope"})
            in_query = await http.post(f"{server.base}/documents?api_key={KEY}", content=b"some text")
        too_big = await _upload(server.base, b"x" * 5000)
        too_big_form = await _upload(server.base, files={"file": ("big.txt", b"y" * 5000, "text/plain")})
        streamed = await _upload(server.base, content=_chunks(b"z" * 3000, b"z" * 3000))  # no Content-Length
        empty = await _upload(server.base, b"")
        fits = await _upload(server.base, b"a small text document", params={"filename": "note.txt"})
    for refused in (anonymous, wrong, in_query):
        assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED"
    for refused in (too_big, too_big_form, streamed):
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "TOO_LARGE" and "4096 bytes" in refused.json()["error"]
    assert empty.status_code == 400 and "empty" in empty.json()["error"]
    assert fits.status_code == 201
    stored = list((tmp_path / "uploads").glob("*.upload"))
    assert [path.stem for path in stored] == [hashlib.sha256(b"a small text document").hexdigest()]


async def test_an_unknown_or_malformed_upload_url_is_refused_with_its_reason(tmp_path: Path) -> None:
    with ThreadedServer(_settings(tmp_path)) as server:
        async with http_client(server.mcp_url, headers=AUTH) as session:
            unknown = await session.call_tool("process_document", {"document_url": "upload://" + "ab" * 32})
            malformed = await session.call_tool("process_document", {"document_url": "upload://../etc/passwd"})
    assert unknown.is_error and payload(unknown)["code"] == "DOWNLOAD_ERROR"
    assert "upload_ttl" in payload(unknown)["error"] and "POST /documents" in payload(unknown)["error"]
    assert malformed.is_error and payload(malformed)["code"] == "VALIDATION_ERROR"


async def test_an_upload_to_one_host_is_read_on_another_through_redis(tmp_path: Path) -> None:
    data = b"Shared across hosts: the upload lives in Redis, not in either host's folder.\n"
    with running_redis() as redis_server:
        first = _settings(tmp_path / "a", redis_url=redis_server.url)
        second = _settings(tmp_path / "b", redis_url=redis_server.url)
        with ThreadedServer(first) as one, ThreadedServer(second) as two:
            response = await _upload(one.base, data, params={"filename": "shared.txt"})
            assert response.status_code == 201, response.text
            async with http_client(two.mcp_url, headers=AUTH) as session:
                result = await session.call_tool("process_document",
                                                 {"document_url": response.json()["document_url"]})
    assert not result.is_error, payload(result)
    assert "Shared across hosts" in payload(result)["content"]
    assert not list((tmp_path / "a").glob("uploads/*.upload"))  # stored in Redis, not on host a's disk


async def test_an_upload_larger_than_the_whole_store_or_a_broken_form_is_refused_with_its_reason(
    tmp_path: Path,
) -> None:
    with ThreadedServer(_settings(tmp_path, max_download_bytes=10_000, upload_store_max_bytes=3000)) as server:
        too_big = await _upload(server.base, b"x" * 5000)
        broken = await _upload(server.base, b"--b\r\nno headers, no end",
                               headers={"Content-Type": "multipart/form-data; boundary=b"})
        no_file = await _upload(server.base,
                                headers={"Content-Type": "multipart/form-data; boundary=b"},
                                content=b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\nv\r\n--b--\r\n')
    assert too_big.status_code == 413 and "upload_store_max_bytes" in too_big.json()["error"]
    assert broken.status_code == 400 and broken.json()["code"] == "VALIDATION_ERROR", broken.text
    assert no_file.status_code == 400 and "no file field" in no_file.json()["error"], no_file.text
