"""The index folder's size bound (whole indexes evicted, least recently used first, never under a
reader or a writer) and a full disk while an index is written (served anyway, nothing half-written)."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_server.core.settings import Settings
from mcp_server.embedding import ModelRegistry
from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexManager, IndexStore
from mcp_server.indexes import store as store_module
from mcp_server.indexes.store import MANIFEST_FILE, try_acquire
from mcp_server.retrieval import DocumentIndex
from tests.retrieval._chunks import make_chunks

pytestmark = pytest.mark.anyio

TEXTS = [f"Paragraph {i} tells about {word} and nothing else." for i, word in
         enumerate(["apples", "rivers", "engines", "poetry", "volcanoes", "tigers"] * 20)]


def an_index(n: int = len(TEXTS)) -> DocumentIndex:
    return DocumentIndex.build(make_chunks(TEXTS[:n]), FakeEmbedder().embed(TEXTS[:n]), model_id="fake")


def folders(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}


def folder_bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and ".locks" not in f.parts)


def used_at(store: IndexStore, key: str, when: float) -> None:
    os.utime(store.path(key) / MANIFEST_FILE, (when, when))


def test_the_least_recently_used_indexes_go_whole_until_the_folder_fits(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    for i, key in enumerate(["k1", "k2", "k3", "k4"]):
        store.save(key, an_index(), chunker_version="1")
        used_at(store, key, 1_000_000 + i)
    one = folder_bytes(tmp_path) // 4
    assert store.load("k1") is not None  # a read makes k1 the most recently used
    size, evicted = store.make_room(2 * one + one // 2, keep="k4")
    assert evicted == 2 and folders(tmp_path) == {"k1", "k4"}
    assert size == folder_bytes(tmp_path) <= 2 * one + one // 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".evicted")]


def test_the_index_just_saved_stays_even_when_it_alone_is_over_the_bound(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    store.save("old", an_index(), chunker_version="1")
    store.save("new", an_index(), chunker_version="1")
    store.make_room(1, keep="new")
    assert folders(tmp_path) == {"new"} and store.load("new") is not None


def test_an_index_whose_writer_holds_its_lock_is_not_evicted(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    for key in ("busy", "idle", "new"):
        store.save(key, an_index(), chunker_version="1")
    used_at(store, "busy", 1)
    used_at(store, "idle", 2)
    with store.lock("busy"):  # another worker is writing it
        store.make_room(1, keep="new")
    assert folders(tmp_path) == {"busy", "new"}


def test_a_reader_finds_an_evicted_index_absent_never_damaged(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = IndexStore(tmp_path)
    store.save("k1", an_index(), chunker_version="1")
    real_read = store_module.faiss.read_index

    def evicted_while_reading(path: str) -> object:  # the reader has read the manifest and checksums
        other = IndexStore(tmp_path)
        assert other._evict(other.path("k1"))
        return real_read(path)

    monkeypatch.setattr(store_module.faiss, "read_index", evicted_while_reading)
    assert store.load("k1") is None
    assert store.quarantined == 0 and not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]


def test_quarantined_folders_are_evicted_before_any_index(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    store.save("k1", an_index(), chunker_version="1")
    store.save("bad", an_index(), chunker_version="1")
    store.quarantine("bad", "test")
    store.save("k2", an_index(), chunker_version="1")
    store.make_room(folder_bytes(tmp_path) - 1, keep="k2")
    assert folders(tmp_path) == {"k1", "k2"}


def disk_full_after(limit: int) -> Callable[..., str]:
    """``write_atomic`` that fails with ENOSPC once ``limit`` files were written."""
    real = store_module.write_atomic
    written = []

    def write(path: Path, writer: Callable[[str], None]) -> str:
        if len(written) >= limit:
            def full(tmp: str) -> None:
                writer(tmp)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(path, full)
        written.append(path)
        return real(path, writer)

    return write


@pytest.mark.parametrize("written", [0, 1, 3])
def test_a_full_disk_while_writing_leaves_the_previous_version_and_nothing_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: int,
) -> None:
    store = IndexStore(tmp_path)
    store.save("k1", an_index(3), chunker_version="1")
    before = sorted(p.name for p in (tmp_path / "k1").iterdir())
    monkeypatch.setattr(store_module, "write_atomic", disk_full_after(written))
    with pytest.raises(OSError, match="No space"):
        store.save("k1", an_index(), chunker_version="1")
    with pytest.raises(OSError):
        store.save("k2", an_index(), chunker_version="1")  # a first save leaves no folder
    assert sorted(p.name for p in (tmp_path / "k1").iterdir()) == before and folders(tmp_path) == {"k1"}
    loaded = store.load("k1")
    assert loaded is not None and len(loaded) == 3


async def test_a_document_built_while_the_disk_is_full_is_answered_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(index_dir=tmp_path, _env_file=None)
    manager = IndexManager(settings, ModelRegistry.fake())
    monkeypatch.setattr(store_module, "write_atomic", disk_full_after(1))
    with caplog.at_level(logging.ERROR):
        index, cached = await manager.get_or_build("a" * 64, "1", "params", make_chunks(TEXTS))
    assert len(index) == len(TEXTS) and not cached
    hits, _ = await manager.searcher.search(index, "volcanoes", 3)
    assert hits and "volcanoes" in hits[0].chunk.text
    assert folders(tmp_path) == set() and manager.tiers.saver.counters["save_failures"] == 1
    assert [r for r in caplog.records if r.getMessage() == "index.save_failed" and r.errno == errno.ENOSPC]
    monkeypatch.undo()  # space again: the next process (no memory copy) builds and saves it
    again = IndexManager(settings, ModelRegistry.fake())
    _, cached = await again.get_or_build("a" * 64, "1", "params", make_chunks(TEXTS))
    assert not cached and len(folders(tmp_path)) == 1


async def test_a_manager_keeps_its_index_folder_within_the_bound(tmp_path: Path) -> None:
    probe = IndexStore(tmp_path / "probe")
    probe.save("k", an_index(), chunker_version="1")
    one = folder_bytes(tmp_path / "probe")
    settings = Settings(index_dir=tmp_path / "indexes", index_dir_max_mb=1, _env_file=None)
    manager = IndexManager(settings, ModelRegistry.fake())
    bound = 2**20
    count = bound // one + 3
    for i in range(count):
        await manager.get_or_build(f"{i:064x}", "1", "params", make_chunks(TEXTS))
        assert folder_bytes(tmp_path / "indexes") <= bound + one
    stats = manager.stats()
    assert stats["shared"]["disk_evictions"] >= 3 and stats["disk"]["bytes"] <= bound


HOLDER = """
import sys
from pathlib import Path
from mcp_server.indexes.store import IndexStore
store = IndexStore(sys.argv[1])
lock = store.file_lock(sys.argv[2])
lock.acquire()
folder = store.path(sys.argv[2])
folder.mkdir(parents=True, exist_ok=True)
(folder / ".index.123.faiss.abc.tmp").write_bytes(b"half an index")  # a build cut short mid-write
print("building", flush=True)
sys.stdin.read()  # until killed
"""


async def test_a_worker_killed_mid_build_leaves_nothing_in_the_way_and_the_next_call_builds(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    settings = Settings(index_dir=tmp_path, _env_file=None)
    manager = IndexManager(settings, ModelRegistry.fake())
    key = manager.index_key("b" * 64, "1", "params")
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), key], stdin=subprocess.PIPE,  # noqa: S603
                          stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2]) as worker:
        try:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "building"
            assert not try_acquire(IndexStore(tmp_path).file_lock(key))  # it holds the key's lock
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=30)
        finally:
            worker.kill()
    index, cached = await manager.get_or_build("b" * 64, "1", "params", make_chunks(TEXTS))
    assert not cached and len(index) == len(TEXTS)  # the lock died with its holder: built here
    names = sorted(p.name for p in (tmp_path / key).iterdir())
    # the manifest, its three files, the analysis and the instruction scores beside them (indexes/lexical.py,
    # indexes/instructions.py)
    assert len(names) == 8 and MANIFEST_FILE in names and not [n for n in names if n.endswith(".tmp")]
    assert IndexStore(tmp_path).load(key) is not None


async def test_first_calls_on_documents_bigger_than_half_the_budget_build_one_after_the_other(tmp_path: Path) -> None:
    import anyio

    from mcp_server.caches.budget import BUILD_BYTES_PER_CHAR, MemoryBudget

    chunks = make_chunks(TEXTS)
    need = BUILD_BYTES_PER_CHAR * sum(len(chunk.text) for chunk in chunks)
    budget = MemoryBudget(need * 3 // 2)  # one build fits, two do not
    manager = IndexManager(Settings(index_dir=tmp_path, _env_file=None), ModelRegistry.fake(), budget=budget)
    built: list[int] = []

    async def first_call(n: int) -> None:
        index, cached = await manager.get_or_build(f"{n:064x}", "1", "params", make_chunks(TEXTS))
        built.append(len(index))
        assert not cached

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(first_call, n)
    assert built == [len(TEXTS)] * 3 and budget.reserved == 0
    assert budget.stats()["admission_waits"] >= 1


async def test_a_partially_answered_document_holds_the_budget_until_its_background_build_ends(tmp_path: Path) -> None:
    import anyio

    from mcp_server.caches.budget import MemoryBudget

    budget = MemoryBudget(64 * 2**20)
    settings = Settings(index_dir=tmp_path, progressive_budget=0, _env_file=None)
    manager = IndexManager(settings, ModelRegistry.fake(), budget=budget)
    with anyio.fail_after(60):
        async with manager.running():
            view = await manager.open("c" * 64, "1", "params", make_chunks(TEXTS), query="volcanoes")
            assert not view.complete
            done = manager.pending("c" * 64, "1", "params")
            assert done is not None and budget.reserved > 0
            await done.wait()
    assert budget.reserved == 0
