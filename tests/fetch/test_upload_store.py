"""The upload folder: content-addressed files, expired by age, bounded by total bytes."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from mcp_server.core.models import FetchedDocument
from mcp_server.fetch import DiskUploads, upload_url

from .servers import make_settings


def _document(data: bytes, name: str = "a.txt") -> FetchedDocument:
    url = upload_url(hashlib.sha256(data).hexdigest())
    return FetchedDocument(data=data, url=url, final_url=url, filename=name, content_type="text/plain")


def test_an_upload_is_read_back_with_its_name_and_type_from_another_store_on_the_same_folder(tmp_path: Path) -> None:
    settings = make_settings(upload_dir=tmp_path)
    document = _document(b"hello upload", "note.txt")
    DiskUploads(settings).put(document.sha256, document)
    read = DiskUploads(settings).get(document.sha256)  # another worker's store object
    assert read == document and read is not None and read.url == document.url
    assert [p.name for p in tmp_path.iterdir()] == [f"{document.sha256}.upload"]  # no temp file left


def test_an_upload_older_than_its_ttl_is_gone_and_its_file_removed(tmp_path: Path) -> None:
    store = DiskUploads(make_settings(upload_dir=tmp_path, upload_ttl=60))
    document = _document(b"short-lived")
    store.put(document.sha256, document)
    path = tmp_path / f"{document.sha256}.upload"
    past = time.time() - 120
    os.utime(path, (past, past))
    assert store.get(document.sha256) is None
    assert not path.exists()


def test_the_oldest_uploads_go_first_when_the_total_would_pass_the_cap(tmp_path: Path) -> None:
    store = DiskUploads(make_settings(upload_dir=tmp_path, upload_store_max_bytes=2500))
    documents = [_document(bytes([i]) * 1000) for i in range(3)]
    for age, document in zip((300, 200, 100), documents, strict=True):
        store.put(document.sha256, document)
        path = tmp_path / f"{document.sha256}.upload"
        os.utime(path, (time.time() - age, time.time() - age))
    assert store.get(documents[0].sha256) is None  # the third put made room by removing the oldest
    assert store.get(documents[1].sha256) is not None and store.get(documents[2].sha256) is not None


@pytest.mark.parametrize("key", ["../../etc/passwd", "a" * 63, "A" * 64, "a" * 64 + "/x", ""])
def test_a_key_that_is_not_a_sha256_never_names_a_file(key: str, tmp_path: Path) -> None:
    store = DiskUploads(make_settings(upload_dir=tmp_path))
    with pytest.raises(ValueError):
        store.get(key)
