"""Local documents: file: URLs and absolute paths, only under DOCUMENT_ROOTS (SECURITY S5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server.core.errors import DownloadError

from .servers import fetch_once, make_settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    inside = tmp_path / "docs"
    outside = tmp_path / "private"
    inside.mkdir()
    outside.mkdir()
    (inside / "notes.txt").write_bytes(b"inside the root")
    (outside / "secret.txt").write_bytes(b"secret")
    return inside, outside


async def test_a_file_url_inside_the_roots_is_read(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    url = (inside / "notes.txt").as_uri()
    doc = await fetch_once(url, make_settings(document_roots=[str(inside)]))
    assert doc.data == b"inside the root"
    assert (doc.url, doc.final_url, doc.filename, doc.content_type) == (url, url, "notes.txt", "text/plain")


async def test_a_plain_absolute_path_inside_the_roots_is_read(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    doc = await fetch_once(str(inside / "notes.txt"), make_settings(document_roots=[str(inside)]))
    assert doc.data == b"inside the root"


async def test_a_corpus_file_is_read_byte_for_byte(corpus_dir: Path) -> None:
    path = corpus_dir / "docs" / "pdf" / "multi_page.pdf"
    doc = await fetch_once(str(path), make_settings(document_roots=[str(corpus_dir)]))
    assert doc.data == path.read_bytes()
    assert doc.content_type == "application/pdf"


async def test_local_files_are_refused_when_no_roots_are_configured(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    with pytest.raises(DownloadError, match="set DOCUMENT_ROOTS"):
        await fetch_once((inside / "notes.txt").as_uri(), make_settings(document_roots=[]))


async def test_dot_dot_cannot_escape_the_roots(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    with pytest.raises(DownloadError, match="outside DOCUMENT_ROOTS"):
        await fetch_once(f"{inside}/../private/secret.txt", make_settings(document_roots=[str(inside)]))


async def test_an_encoded_dot_dot_in_a_file_url_cannot_escape_the_roots(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    url = f"file://{inside}/%2e%2e/private/secret.txt"
    with pytest.raises(DownloadError, match="outside DOCUMENT_ROOTS"):
        await fetch_once(url, make_settings(document_roots=[str(inside)]))


async def test_a_symlink_cannot_escape_the_roots(roots: tuple[Path, Path]) -> None:
    inside, outside = roots
    (inside / "link.txt").symlink_to(outside / "secret.txt")
    (inside / "linkdir").symlink_to(outside)
    settings = make_settings(document_roots=[str(inside)])
    for path in (inside / "link.txt", inside / "linkdir" / "secret.txt"):
        with pytest.raises(DownloadError, match="outside DOCUMENT_ROOTS"):
            await fetch_once(str(path), settings)


async def test_a_sibling_folder_sharing_the_root_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs-private").mkdir()
    (tmp_path / "docs-private" / "x.txt").write_bytes(b"x")
    with pytest.raises(DownloadError, match="outside DOCUMENT_ROOTS"):
        await fetch_once(
            str(tmp_path / "docs-private" / "x.txt"), make_settings(document_roots=[str(tmp_path / "docs")])
        )


async def test_a_missing_file_is_a_download_error(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    with pytest.raises(DownloadError, match="file not found"):
        await fetch_once(str(inside / "nope.pdf"), make_settings(document_roots=[str(inside)]))


async def test_folders_and_fifos_are_not_read(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    os.mkfifo(inside / "pipe")
    settings = make_settings(document_roots=[str(inside)])
    for path in (inside, inside / "pipe"):
        with pytest.raises(DownloadError, match="not a regular file"):
            await fetch_once(str(path), settings)


async def test_a_file_larger_than_the_cap_is_refused(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    (inside / "big.bin").write_bytes(b"z" * 2048)
    with pytest.raises(DownloadError, match="limit of 1024 bytes"):
        await fetch_once(
            str(inside / "big.bin"), make_settings(document_roots=[str(inside)], max_download_bytes=1024)
        )


async def test_a_file_url_naming_another_host_is_refused(roots: tuple[Path, Path]) -> None:
    inside, _ = roots
    with pytest.raises(DownloadError, match="local path"):
        await fetch_once(f"file://fileserver{inside}/notes.txt", make_settings(document_roots=[str(inside)]))
