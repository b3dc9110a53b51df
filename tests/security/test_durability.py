"""SECURITY.md §6: index files on disk (D1-D4).

D1: a writer process saving two index versions in turn is SIGKILLed at 50 random points; every
load afterwards returns exactly one complete version, the old or the new one (checksums verified),
never nothing once a version was committed, and nothing is quarantined: a save writes its files
under new names and switches the manifest last. D2: corrupt, truncated and mismatching files are
detected, moved aside and rebuilt. D3: four processes building the same
document at once end with one build and one index. D4: no pickle on disk.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mcp_server.core.settings import Settings
from mcp_server.indexes.instructions import POINTER_FILE as SCORES_POINTER
from mcp_server.indexes.lexical import POINTER_FILE
from mcp_server.indexes.manager import IndexManager
from mcp_server.indexes.store import (
    CHUNKS_FILE,
    INDEX_FILE,
    MANIFEST_FILE,
    SENTENCES_FILE,
    IndexStore,
    stored_file,
)
from tests.mcp_harness import ROOT

from . import _index_worker as worker

pytestmark = pytest.mark.anyio

KEY = "durable"


def signature(index: object) -> tuple[int, str]:
    chunks = index.chunks  # type: ignore[attr-defined]
    return len(chunks), chunks[0].text.split(" chunk ")[0]


def expected(version: int) -> tuple[int, str]:
    made = worker.chunks(version)
    return len(made), f"version {version}"


def _mid_save(folder: Path) -> bool:
    """Files beside the current version: a save was cut between its first file and its cleanup."""
    if not (folder / MANIFEST_FILE).is_file():
        return folder.is_dir() and any(folder.iterdir())
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    current = {MANIFEST_FILE, *manifest["files"].values()}
    # the analysis (indexes/lexical.py) and the detector's scores (indexes/instructions.py) stored beside
    # the version belong to it
    for pointer_file in (POINTER_FILE, SCORES_POINTER):
        try:
            pointer = json.loads((folder / pointer_file).read_text())
        except (OSError, ValueError):
            pointer = {}
        if pointer.get("chunks_sha256") == manifest["sha256"][CHUNKS_FILE]:
            current |= {pointer_file, pointer["file"]}
    return any(entry.name not in current for entry in folder.iterdir())


def test_sigkill_at_50_random_points_leaves_the_old_or_the_new_index(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    versions = {expected(0), expected(1)}
    rng = random.Random(20240611)
    outcomes = {"complete": 0, "mid_save": 0, "absent": 0}
    seen: set[tuple[int, str]] = set()
    # Kill points spread over about two whole saves as timed on this machine now (a busy machine
    # saves slower), so kills land before, between and after the files of a save.
    scratch, made = IndexStore(tmp_path / "timing"), worker.index(1)
    started = time.perf_counter()
    scratch.save(KEY, made, chunker_version=worker.CHUNKER)
    window = max(0.08, 2 * (time.perf_counter() - started))
    proc = subprocess.Popen([sys.executable, "-m", "tests.security._index_worker", "fork-writer", str(tmp_path), KEY],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        rounds = 0
        # 50 kills, and more (up to 200) until a kill has landed inside a save and both versions
        # have been read back (on a busy machine a save can outlast every early kill point).
        while rounds < 50 or ((outcomes["mid_save"] == 0 or len(seen) < 2) and rounds < 200):
            rounds += 1
            proc.stdin.write(f"go {rng.randrange(2)}\n")
            proc.stdin.flush()
            pid = int(proc.stdout.readline())
            time.sleep(rng.uniform(0.0, window))  # the random kill point (not synchronisation)
            subprocess.run(["kill", "-KILL", str(pid)], check=True)
            proc.stdin.write(f"reap {pid}\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "ok"
            outcomes["mid_save"] += _mid_save(store.path(KEY))
            loaded = store.load(KEY)
            if loaded is None:
                assert not seen, "a committed index vanished after a kill"
                outcomes["absent"] += 1  # killed before the very first save was committed
                continue
            assert signature(loaded) in versions  # a whole version, never a mix
            assert len(loaded) == signature(loaded)[0]
            seen.add(signature(loaded))
            outcomes["complete"] += 1
    finally:
        proc.stdin.write("quit\n")
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    print("kill outcomes:", outcomes)
    assert store.quarantined == 0 and not list(tmp_path.glob(f"{KEY}.corrupt-*"))
    assert outcomes["mid_save"] >= 1 and seen == versions, (outcomes, seen)
    # After all that, one more save gives a clean, loadable index and clears what kills left.
    with store.lock(KEY):
        store.save(KEY, worker.index(1), chunker_version=worker.CHUNKER)
    reloaded = store.load(KEY)
    assert reloaded is not None and signature(reloaded) == expected(1)
    assert not _mid_save(store.path(KEY))


def test_readers_without_the_lock_see_whole_versions_while_a_writer_switches_them(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    versions = [worker.index(0), worker.index(1)]
    store.save(KEY, versions[1], chunker_version=worker.CHUNKER)
    done = threading.Event()

    def write() -> None:
        try:
            for n in range(30):
                with store.lock(KEY):
                    store.save(KEY, versions[n % 2], chunker_version=worker.CHUNKER)
        finally:
            done.set()

    writer = threading.Thread(target=write)
    writer.start()
    seen: list[tuple[int, str]] = []
    while not done.is_set():
        loaded = store.load(KEY)
        assert loaded is not None  # never nothing: the manifest names files that exist
        seen.append(signature(loaded))
    writer.join()
    assert set(seen) <= {expected(0), expected(1)} and seen
    assert store.quarantined == 0


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _manifest(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        change(manifest)
        (folder / MANIFEST_FILE).write_text(json.dumps(manifest))

    return apply


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated vectors": lambda folder: _truncate(stored_file(folder, INDEX_FILE)),
    "flipped vector bit": lambda folder: _flip(stored_file(folder, INDEX_FILE)),
    "truncated chunks": lambda folder: _truncate(stored_file(folder, CHUNKS_FILE)),
    "flipped chunk bit": lambda folder: _flip(stored_file(folder, CHUNKS_FILE)),
    "truncated sentence map": lambda folder: _truncate(stored_file(folder, SENTENCES_FILE)),
    "flipped sentence map bit": lambda folder: _flip(stored_file(folder, SENTENCES_FILE)),
    "missing sentence map": lambda folder: (stored_file(folder, SENTENCES_FILE)).unlink(),
    "old format": _manifest(lambda m: m.update(format=1)),
    "truncated manifest": lambda folder: _truncate(folder / MANIFEST_FILE),
    "missing vectors": lambda folder: (stored_file(folder, INDEX_FILE)).unlink(),
    "empty vectors": lambda folder: (stored_file(folder, INDEX_FILE)).write_bytes(b""),
    "wrong vector count": _manifest(lambda m: m.update(vector_count=1)),
    "wrong dimension": _manifest(lambda m: m.update(dimension=3)),
    "wrong model": _manifest(lambda m: m.update(model_id="another-model")),
    "wrong chunker": _manifest(lambda m: m.update(chunker_version="0")),
    "future format": _manifest(lambda m: m.update(format=99)),
    "no checksums": _manifest(lambda m: m.pop("sha256")),
    "swapped files": lambda folder: stored_file(folder, INDEX_FILE).write_bytes(
        stored_file(folder, CHUNKS_FILE).read_bytes()),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_a_damaged_index_is_quarantined_and_rebuilt(damage: str, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, index_dir=tmp_path)  # type: ignore[call-arg]
    manager = IndexManager(settings, worker.MODELS)
    made = worker.chunks(0)
    first, _ = await manager.get_or_build("doc", worker.CHUNKER, "params", made)
    key = manager.index_key("doc", worker.CHUNKER, "params")
    DAMAGE[damage](manager.store.path(key))
    restarted = IndexManager(settings, worker.MODELS)  # a new process: nothing in memory
    index, cached = await restarted.get_or_build("doc", worker.CHUNKER, "params", made)
    assert not cached and restarted.counters["builds"] == 1
    assert restarted.store.quarantined == 1
    assert [c.text for c in index.chunks] == [c.text for c in first.chunks]
    assert len(list(tmp_path.glob(f"{key}.corrupt-*"))) == 1
    again, cached = await IndexManager(settings, worker.MODELS).get_or_build("doc", worker.CHUNKER, "params", made)
    assert cached and len(again) == len(made)


async def test_a_folder_without_its_manifest_holds_no_index_and_is_rebuilt_over(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, index_dir=tmp_path)  # type: ignore[call-arg]
    made = worker.chunks(0)
    await IndexManager(settings, worker.MODELS).get_or_build("doc", worker.CHUNKER, "params", made)
    restarted = IndexManager(settings, worker.MODELS)
    folder = restarted.store.path(restarted.index_key("doc", worker.CHUNKER, "params"))
    (folder / MANIFEST_FILE).unlink()  # what a first save killed before its switch leaves
    index, cached = await restarted.get_or_build("doc", worker.CHUNKER, "params", made)
    assert not cached and restarted.counters["builds"] == 1 and restarted.store.quarantined == 0
    # the orphans were cleared: the manifest, its three files, the analysis beside them (lexical.py) and
    # the instruction detector's scores (indexes/instructions.py)
    assert len(index) == len(made) and len(list(folder.iterdir())) == 8


def test_four_processes_building_one_document_end_with_one_index(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "tests.security._index_worker", "build", str(tmp_path)],
                              stdout=subprocess.PIPE, cwd=ROOT, text=True) for _ in range(4)]
    counters = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sum(c["builds"] for c in counters) == 1, counters
    folders = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and ".corrupt-" not in folders[0].name
    loaded = IndexStore(tmp_path).load(folders[0].name)
    assert loaded is not None and len(loaded) == len(worker.chunks(0))


async def test_index_files_on_disk_are_json_and_faiss_never_pickle(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, index_dir=tmp_path)  # type: ignore[call-arg]
    manager = IndexManager(settings, worker.MODELS)
    await manager.get_or_build("doc", worker.CHUNKER, "params", worker.chunks(1))
    files = [p for p in tmp_path.rglob("*") if p.is_file() and ".locks" not in p.parts]
    folder = files[0].parent
    (analysis,) = folder.glob("lexical.*.npz")  # the chunks' tokens beside the index (indexes/lexical.py)
    (scores,) = folder.glob("instructions.*.npz")  # the detector's scores of the chunks (indexes/instructions.py)
    assert {p.name for p in files} == {MANIFEST_FILE, POINTER_FILE, analysis.name, SCORES_POINTER, scores.name, *(
        stored_file(folder, name).name for name in (INDEX_FILE, CHUNKS_FILE, SENTENCES_FILE))}
    for path in files:
        data = path.read_bytes()
        assert not data.startswith(b"\x80"), f"{path.name} looks like a pickle"
        if path.suffix == ".json":
            json.loads(data)
        elif path.suffix == ".npz":  # NumPy arrays: loading refuses any object array (pickle)
            with np.load(path, allow_pickle=False) as arrays:
                assert all(arrays[name].dtype != object for name in arrays.files)
        else:
            assert data[:4] in (b"IxFI", b"IxF2", b"IxFl", b"IxHe", b"IwFl", b"IxM2", b"IxPQ", b"IxPT"), data[:4]
    # pickle between the processes of one server (parse jobs and their results over the shared parser
    # pool's authenticated socket, as pebble's own pipes carry them) is not pickle on disk: those two
    # modules may import it, for bytes only (dumps/loads, never a file's dump/load), and write no file
    package = ROOT / "mcp_server"
    between_processes = {package / "subprocesses" / "process_pool.py", package / "processors" / "sandbox.py"}
    sources = "\n".join(p.read_text() for p in (ROOT / "mcp_server").rglob("*.py") if p not in between_processes)
    for forbidden in ("import pickle", "from pickle", "allow_pickle=True", "joblib", "import shelve", "from shelve",
                      "import dill", "from dill", "torch.load("):  # as imports: "shelves" of documents are not shelve
        assert forbidden not in sources, forbidden
    for path in between_processes:
        text = path.read_text()
        for forbidden in ("pickle.dump(", "pickle.load(", "write_bytes", "write_text", '"w"', '"wb"', '"ab"'):
            assert forbidden not in text, (path.name, forbidden)


