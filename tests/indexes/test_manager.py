"""IndexManager and IndexStore: content-keyed reuse, persistence, quarantine, coalescing."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest

from mcp_server import metrics
from mcp_server.core.models import Chunk
from mcp_server.core.settings import Settings
from mcp_server.embedding import ModelRegistry
from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexManager, IndexStore
from mcp_server.indexes.builds import manifest_check
from mcp_server.indexes.store import (
    CHUNKS_FILE,
    FORMAT_VERSION,
    INDEX_FILE,
    MANIFEST_FILE,
    SENTENCES_FILE,
    stored_file,
)
from tests.mcp_harness import make_settings
from tests.metrics._helpers import delta, parse
from tests.retrieval._chunks import make_chunks

pytestmark = pytest.mark.anyio

SHA = "a" * 64
TEXTS = [f"Paragraph {i} tells about {word} and nothing else." for i, word in
         enumerate(["apples", "rivers", "engines", "poetry", "volcanoes", "tigers"])]


def manager(settings: Settings, models: ModelRegistry | None = None) -> IndexManager:
    return IndexManager(settings, models or ModelRegistry.fake())


def fast(m: IndexManager) -> FakeEmbedder:
    assert isinstance(m.models.fast, FakeEmbedder)
    return m.models.fast


def only_folder(root: Path) -> Path:
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(folders) == 1, folders
    return folders[0]


async def test_the_same_content_is_embedded_once_whatever_the_url(settings: Settings) -> None:
    m = manager(settings)
    chunks = make_chunks(TEXTS)
    first, cached1 = await m.get_or_build(SHA, "1", "params", chunks)
    embedded = fast(m).texts_embedded
    second, cached2 = await m.get_or_build(SHA, "1", "params", make_chunks(TEXTS))
    assert (cached1, cached2) == (False, True)
    assert second is first and fast(m).texts_embedded == embedded == len(TEXTS)


async def test_a_second_build_of_known_chunk_texts_embeds_nothing(settings: Settings) -> None:
    m = manager(settings)
    await m.get_or_build(SHA, "1", "params-a", make_chunks(TEXTS))
    before = fast(m).texts_embedded
    _, cached = await m.get_or_build(SHA, "1", "params-b", make_chunks(TEXTS))  # new key, same texts
    assert cached is False and m.counters["builds"] == 2
    assert fast(m).texts_embedded == before


async def test_changed_content_gets_a_new_index(settings: Settings) -> None:
    m = manager(settings)
    old, _ = await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    new, cached = await m.get_or_build("b" * 64, "1", "p", make_chunks(["something new entirely"]))
    assert cached is False and new is not old and len(new) == 1


async def test_a_restart_answers_from_disk_without_embedding(settings: Settings) -> None:
    built, _ = await manager(settings).get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    restarted = manager(settings)

    async with restarted.opening(SHA, "1", "p") as found:  # a cached index needs no chunks
        assert found.view is not None
    index, cached = found.view.index, found.view.cached
    assert cached is True and restarted.counters["disk_hits"] == 1
    assert fast(restarted).texts_embedded == 0
    assert index.chunks == built.chunks
    hits, timings = await restarted.searcher.search(index, "volcanoes", top_k=1)
    assert "volcanoes" in hits[0].chunk.text and set(timings) == {"embed", "search"}


async def test_a_truncated_faiss_file_is_quarantined_and_rebuilt(settings: Settings) -> None:
    await manager(settings).get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    folder = only_folder(settings.index_dir)
    vectors = stored_file(folder, INDEX_FILE)
    data = vectors.read_bytes()
    vectors.write_bytes(data[: len(data) // 2])
    fresh = manager(settings)
    index, cached = await fresh.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and len(index) == len(TEXTS)
    corrupt = [p for p in settings.index_dir.iterdir() if ".corrupt-" in p.name]
    assert len(corrupt) == 1 and (corrupt[0] / vectors.name).stat().st_size == len(data) // 2
    assert fresh.stats()["disk"]["count"] == 1 and fresh.stats()["disk"]["quarantined"] == 1


@pytest.mark.parametrize("damage", ["missing-manifest", "garbage-chunks", "other-model", "other-chunker"])
async def test_a_bad_or_mismatching_disk_index_is_rebuilt(settings: Settings, damage: str) -> None:
    await manager(settings).get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    folder = only_folder(settings.index_dir)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    if damage == "missing-manifest":
        (folder / MANIFEST_FILE).unlink()
    elif damage == "garbage-chunks":
        stored_file(folder, CHUNKS_FILE).write_text("[{]")
    elif damage == "other-model":
        (folder / MANIFEST_FILE).write_text(json.dumps({**manifest, "model_id": "someone-else"}))
    else:
        (folder / MANIFEST_FILE).write_text(json.dumps({**manifest, "chunker_version": "0"}))
    fresh = manager(settings)
    _, cached = await fresh.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and fresh.counters["builds"] == 1
    assert json.loads((only_folder_named(settings.index_dir, folder.name) / MANIFEST_FILE).read_text())[
        "chunker_version"] == "1"


def only_folder_named(root: Path, name: str) -> Path:
    path = root / name
    assert path.is_dir()
    return path


async def test_ten_concurrent_identical_requests_build_once(settings: Settings) -> None:
    m = manager(settings)
    calls = 0

    async def chunks() -> Sequence[Chunk]:
        nonlocal calls
        calls += 1
        return make_chunks(TEXTS)

    results: list[tuple[object, bool]] = []

    async def one() -> None:  # as the pipeline does: the chunks are made only when the key's lock is held
        async with m.opening(SHA, "1", "p") as found:
            view = found.view or await m.build(found, await chunks())
        results.append((view.index, view.cached))

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(one)
    assert calls == 1 and m.counters["builds"] == 1
    assert len({id(index) for index, _ in results}) == 1
    assert sorted(cached for _, cached in results) == [False] + [True] * 9
    assert not m._key_locks  # per-key locks do not pile up


async def test_progress_is_reported_while_embedding(settings: Settings) -> None:
    m = manager(settings)
    seen: list[tuple[int, int]] = []
    messages: list[str] = []

    async def progress(done: int, total: int, message: str) -> None:
        seen.append((done, total))
        messages.append(message)

    texts = [f"Text number {i} is here. It has two sentences." for i in range(35)]
    await m.get_or_build(SHA, "1", "p", make_chunks(texts), progress=progress)
    # the units are sentences; "It has two sentences." repeats and is embedded once
    assert seen[0] == (0, 36) and seen[-1] == (36, 36) and len(seen) >= 3
    assert all("sentences" in message for message in messages)


async def test_stats_count_hits_and_misses_and_clear_empties_memory_and_disk(settings: Settings) -> None:
    m = manager(settings)
    await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    stats = m.stats()
    assert (stats["misses"], stats["memory_hits"], stats["entries"]) == (1, 1, 1)
    assert stats["disk"]["count"] == 1 and stats["disk"]["bytes"] > 0
    cleared = await m.clear()
    assert cleared == {"memory": 1, "disk": 1}
    assert m.stats()["entries"] == 0 and m.stats()["disk"]["count"] == 0


async def test_memory_entries_expire_after_the_ttl(tmp_path: Path) -> None:
    now = [0.0]
    settings = Settings(index_dir=tmp_path, cache_ttl=60, _env_file=None)
    m = IndexManager(settings, ModelRegistry.fake(), timer=lambda: now[0])
    await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    now[0] = 61.0
    _, cached = await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is True and m.counters["disk_hits"] == 1  # memory expired, disk still there


async def test_large_documents_use_the_accurate_embedder(settings: Settings) -> None:
    models = ModelRegistry.fake(accurate=True, accurate_min_chunks=3)
    m = IndexManager(settings, models)
    small, _ = await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS[:3]))
    large, _ = await m.get_or_build("c" * 64, "1", "p", make_chunks(TEXTS))
    assert (small.model_id, large.model_id) == ("fake-fast", "fake-accurate")
    hits, _ = await m.searcher.search(large, "tigers", top_k=1)
    assert "tigers" in hits[0].chunk.text


async def test_an_index_carries_the_key_it_is_found_by_and_is_kept_under_no_other(settings: Settings) -> None:
    m = manager(settings)
    built, _ = await m.get_or_build(SHA, "1", "params", make_chunks(TEXTS))
    key = m.index_key(SHA, "1", "params")
    assert built.key == key and await m.find(key) is built
    restarted = manager(settings)  # read from the folder: the store gives it the key it was read under
    loaded = await restarted.find(key)
    assert loaded is not None and loaded is not built and loaded.key == key
    with pytest.raises(ValueError, match="cannot be kept"):
        await m.lookup.keep("0" * 32, built)


def test_an_index_written_by_the_store_loads_back_identically(tmp_path: Path) -> None:
    from mcp_server.retrieval import DocumentIndex

    embedder = FakeEmbedder()
    chunks = make_chunks(TEXTS)
    index = DocumentIndex.build(chunks, embedder.embed(TEXTS), model_id="fake")
    store = IndexStore(tmp_path)
    with store.lock("k1"):
        store.save("k1", index, chunker_version="1")
    loaded = store.load("k1")
    assert loaded is not None and loaded.chunks == chunks and loaded.faiss.ntotal == len(chunks)
    assert not [p for p in (tmp_path / "k1").iterdir() if p.name.endswith(".tmp")]


def test_a_save_interrupted_before_its_manifest_switch_leaves_the_old_index_loadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_server.indexes import store as store_module
    from mcp_server.retrieval import DocumentIndex

    embedder = FakeEmbedder()
    store = IndexStore(tmp_path)
    old = DocumentIndex.build(make_chunks(TEXTS), embedder.embed(TEXTS), model_id="fake")
    store.save("k1", old, chunker_version="1")
    real_write = store_module.write_atomic

    def killed_before_the_manifest(path: Path, write: Callable[[str], None]) -> str:
        if path.name == MANIFEST_FILE:
            raise KeyboardInterrupt("simulated SIGKILL")
        return real_write(path, write)

    monkeypatch.setattr(store_module, "write_atomic", killed_before_the_manifest)
    new = DocumentIndex.build(make_chunks(TEXTS[:2]), embedder.embed(TEXTS[:2]), model_id="fake")
    with pytest.raises(KeyboardInterrupt):
        store.save("k1", new, chunker_version="1")
    loaded = store.load("k1")  # every new file written, the switch not made: the old index
    assert loaded is not None and loaded.chunks == old.chunks and store.quarantined == 0
    monkeypatch.setattr(store_module, "write_atomic", real_write)
    store.save("k1", new, chunker_version="1")  # the next save also clears the orphaned files
    assert len(list((tmp_path / "k1").iterdir())) == 6  # manifest, three files, the analysis beside (lexical.py)
    loaded = store.load("k1")
    assert loaded is not None and loaded.chunks == new.chunks


async def test_two_workers_building_the_same_document_end_with_one_index(settings: Settings) -> None:
    # two managers on one folder stand for two worker processes: only the file lock is shared
    workers = [manager(settings), manager(settings)]
    results: list[bool] = []

    async def build(m: IndexManager) -> None:
        results.append((await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS)))[1])

    async with anyio.create_task_group() as tg:
        for m in workers:
            tg.start_soon(build, m)
    assert sum(m.counters["builds"] for m in workers) == 1
    assert sorted(results) == [False, True]
    assert workers[0].stats()["disk"]["count"] == 1


async def test_clearing_the_cache_also_forgets_embedded_vectors(settings: Settings) -> None:
    m = manager(settings)
    await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert m.stats()["embedding_cache_entries"] == len(TEXTS)
    await m.clear()
    _, cached = await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and fast(m).texts_embedded == 2 * len(TEXTS)


def test_a_repeated_query_is_embedded_once() -> None:
    embedder = FakeEmbedder()
    first = embedder.embed_query("where is it?")
    batches = embedder.batches
    assert embedder.embed_query("where is it?") is first and embedder.batches == batches


async def test_an_empty_document_builds_persists_and_searches_to_nothing(settings: Settings) -> None:
    await manager(settings).get_or_build(SHA, "1", "p", [])
    restarted = manager(settings)
    index, cached = await restarted.get_or_build(SHA, "1", "p", [])
    assert cached is True and len(index) == 0
    hits, _ = await restarted.searcher.search(index, "anything", top_k=5, neighbors=2)
    assert hits == []


def test_the_sentence_map_round_trips_through_the_store(tmp_path: Path) -> None:
    from mcp_server.retrieval import DocumentIndex

    embedder = FakeEmbedder()
    texts = ["Rivers flood in spring. Engines stall in the cold winter air.", "One sentence about tigers only.",
             "Volcanoes erupt without warning. Poetry rhymes sometimes. Apples fall from trees."]
    index = DocumentIndex.embed(make_chunks(texts), embedder)
    store = IndexStore(tmp_path)
    store.save("k1", index, chunker_version="1")
    manifest = json.loads((tmp_path / "k1" / MANIFEST_FILE).read_text())
    assert (manifest["chunk_count"], manifest["vector_count"]) == (3, 6)
    assert SENTENCES_FILE in manifest["sha256"]
    assert json.loads(stored_file(tmp_path / "k1", SENTENCES_FILE).read_text()) == [0, 0, 1, 2, 2, 2]
    loaded = store.load("k1")
    assert loaded is not None and loaded.owners.tolist() == [0, 0, 1, 2, 2, 2]
    query = "engines stall"
    before = index.search(embedder.embed_query(query), query, 3)
    after = loaded.search(embedder.embed_query(query), query, 3)
    assert [(h.chunk, h.dense) for h in after] == [(h.chunk, h.dense) for h in before]


def test_a_sentence_map_that_misses_a_chunk_is_quarantined(tmp_path: Path) -> None:
    import hashlib

    from mcp_server.retrieval import DocumentIndex

    embedder = FakeEmbedder()
    store = IndexStore(tmp_path)
    store.save("k1", DocumentIndex.embed(make_chunks(TEXTS[:2]), embedder), chunker_version="1")
    folder = tmp_path / "k1"
    forged = b"[0,0]"  # well-formed JSON with a valid checksum, but chunk 1 has no vector
    stored_file(folder, SENTENCES_FILE).write_bytes(forged)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    manifest["sha256"][SENTENCES_FILE] = hashlib.sha256(forged).hexdigest()
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    assert store.load("k1") is None and store.quarantined == 1


async def test_an_index_in_the_old_one_vector_per_chunk_format_is_rebuilt(settings: Settings) -> None:
    import hashlib

    import faiss

    first = manager(settings)
    built, _ = await first.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    folder = only_folder(settings.index_dir)
    # rewrite the folder as format 1 wrote it: chunk vectors, no sentence map
    old = faiss.IndexFlatIP(built.dimension)
    old.add(fast(first).embed(TEXTS))
    vectors = faiss.serialize_index(old).tobytes()
    (folder / INDEX_FILE).write_bytes(vectors)
    (folder / CHUNKS_FILE).write_bytes(stored_file(folder, CHUNKS_FILE).read_bytes())
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    manifest.update(format=1, vector_count=len(TEXTS))
    del manifest["files"]  # format 1 had fixed file names
    del manifest["chunk_count"]
    manifest["sha256"] = {INDEX_FILE: hashlib.sha256(vectors).hexdigest(), CHUNKS_FILE: manifest["sha256"][CHUNKS_FILE]}
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))

    restarted = manager(settings)
    index, cached = await restarted.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and restarted.counters["builds"] == 1 and restarted.store.quarantined == 1
    assert index.owners.tolist() == built.owners.tolist()
    assert json.loads((folder / MANIFEST_FILE).read_text())["format"] == FORMAT_VERSION


# --- progressive indexing -------------------------------------------------------------------

BOOK = [f"Chapter {i} describes {word} in the valley, with details nobody else gives." for i, word in
        enumerate(["apples", "rivers", "engines", "poetry", "volcanoes", "tigers", "glaciers", "lanterns",
                   "harbours", "comets", "orchards", "deserts"])]
SLOW = "SLOW marker chapter that only a complete build embeds."


class GatedEmbedder(FakeEmbedder):
    """Blocks any batch holding the SLOW chunk until ``gate`` opens: a complete build that is
    still running while the test looks at what the partial index answers."""

    def __init__(self) -> None:
        super().__init__(model_id="fake-fast")
        self.gate = threading.Event()
        self.held = threading.Event()  # set when a batch waits at the gate

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if any("SLOW" in text for text in texts):
            self.held.set()
            self.gate.wait(60)
        return super().embed_batch(texts)


def progressive(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"index_dir": tmp_path / "faiss_indexes", "progressive_budget": 0,
                                 "progressive_candidates": 2, "_env_file": None, **overrides}
    return Settings(**values)  # type: ignore[arg-type]


def gated_manager(settings: Settings) -> tuple[IndexManager, GatedEmbedder]:
    embedder = GatedEmbedder()
    return IndexManager(settings, ModelRegistry(fast=embedder)), embedder


async def finished(m: IndexManager, sha: str = SHA) -> None:
    event = m.pending(sha, "1", "p")
    if event is not None:
        with anyio.fail_after(60):
            await event.wait()


async def test_a_big_document_answers_first_from_a_partial_index_then_from_the_complete_one(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path))
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        hits, _ = await m.searcher.search(first.index, "volcanoes", top_k=1)
        assert (first.complete, first.cached) == (False, False) and 0 < first.dense_coverage < 1
        assert "volcanoes" in hits[0].chunk.text and hits[0].dense is not None and hits[0].bm25 is not None
        assert m.store.stats()["count"] == 0  # a partial index is never persisted
        embedder.gate.set()
        await finished(m)
        later = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="comets")
    assert (later.complete, later.cached, later.dense_coverage) == (True, True, 1.0)
    assert m.counters["builds"] == 1 and m.counters["background_builds"] == 1
    assert m.store.stats()["count"] == 1


async def test_a_background_build_counts_as_running_in_the_builds_in_flight_gauge(tmp_path: Path) -> None:
    metrics.configure(make_settings())
    m, embedder = gated_manager(progressive(tmp_path))
    before = parse(metrics.render()[0].decode())
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        with anyio.fail_after(30):  # the complete build is embedding the SLOW chunk
            await anyio.to_thread.run_sync(embedder.held.wait)
        during = parse(metrics.render()[0].decode())
        embedder.gate.set()
        await finished(m)
    after = parse(metrics.render()[0].decode())
    assert not first.complete and m.counters["background_builds"] == 1
    assert delta(during, before, "rag_index_builds_in_flight", state="running") == 1
    assert delta(after, before, "rag_index_builds_in_flight") == 0


class FailingEmbedder(FakeEmbedder):
    """Fails any batch holding the SLOW chunk: a complete build that cannot finish."""

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if any("SLOW" in text for text in texts):
            raise RuntimeError("the model failed")
        return super().embed_batch(texts)


async def test_a_failed_background_build_counts_once_as_failed_and_leaves_no_build_in_flight(tmp_path: Path) -> None:
    metrics.configure(make_settings())
    m = IndexManager(progressive(tmp_path), ModelRegistry(fast=FailingEmbedder(model_id="fake-fast")))
    before = parse(metrics.render()[0].decode())
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        await finished(m)
    after = parse(metrics.render()[0].decode())
    assert not first.complete and m.counters["background_builds"] == 0
    assert delta(after, before, "rag_index_builds_total", event="failed") == 1
    assert delta(after, before, "rag_index_builds_in_flight") == 0


async def test_an_index_found_while_its_complete_build_runs_carries_its_key(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path))
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        found = await m.find(first.key)  # a passage id of the partial answer leads here (get_passage)
        embedder.gate.set()
    assert not first.complete and found is not None
    assert first.index.key == found.key == first.key != ""


async def test_each_query_on_a_partial_index_gets_vectors_for_its_own_candidates(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path))
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        second = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="glaciers")
        hits, _ = await m.searcher.search(second.index, "glaciers", top_k=1)
        embedder.gate.set()
    volcanoes, glaciers = 4, 6
    assert volcanoes in first.index.owners and glaciers not in first.index.owners
    assert glaciers in second.index.owners and volcanoes not in second.index.owners
    assert not second.complete and "glaciers" in hits[0].chunk.text and hits[0].dense is not None


def test_a_partial_answer_embeds_only_the_sentences_that_share_query_terms() -> None:
    from mcp_server.indexes.partial import partial_view
    from mcp_server.retrieval import DocumentIndex
    from mcp_server.text.sentences import split_sentences

    chunks = make_chunks([
        "Rivers flood in spring. Engines stall in the cold. Tigers hunt at night. Poetry rhymes.",
        "Apples fall from trees. Comets cross the sky. Deserts are dry in summer.",
    ])
    embedder = FakeEmbedder()
    base = DocumentIndex.embed(chunks, embedder, only=())
    view = partial_view(base, "when do tigers hunt and engines stall?", embedder, 2, per_chunk=3)
    units = [(int(o), v) for o, v in zip(view.owners, view.faiss.reconstruct_n(0, view.faiss.ntotal), strict=True)]
    first, second = split_sentences(chunks[0].text), split_sentences(chunks[1].text)
    # the query's sentences of the matching chunk; the first sentence of the filler chunk
    wanted = [(0, t) for t in first if "Tigers" in t or "Engines" in t] + [(1, second[0])]
    assert len(first) == 3 and len(units) == len(wanted) == 3
    assert all(any(o == owner and np.allclose(v, embedder.embed([text])[0]) for o, v in units)
               for owner, text in wanted)
    assert base.faiss.ntotal == 0 and view.coverage == 1.0  # the base is never changed


async def test_a_chunk_without_vectors_has_no_dense_score(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path, progressive_candidates=1))
    async with m.running():
        view = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="comets in the valley")
        hits, _ = await m.searcher.search(view.index, "comets in the valley", top_k=3)
        embedder.gate.set()
    assert view.dense_coverage == round(1 / 13, 4)  # the best BM25 chunk only
    assert "comets" in hits[0].chunk.text and hits[0].dense is not None
    assert all(hit.dense is None and hit.bm25 for hit in hits[1:])


async def test_a_query_without_a_word_match_gets_vectors_for_the_first_chunks(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path, progressive_candidates=3))
    async with m.running():
        view = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="xylophones")
        embedder.gate.set()
    assert view.index.owners.tolist() and set(view.index.owners.tolist()) == {0, 1, 2}


async def test_a_small_document_is_built_completely_in_the_first_call(tmp_path: Path) -> None:
    m = IndexManager(progressive(tmp_path, progressive_budget=1.0), ModelRegistry.fake())
    async with m.running():
        view = await m.open(SHA, "1", "p", make_chunks(BOOK), query="volcanoes")
    assert (view.complete, view.cached, view.dense_coverage) == (True, False, 1.0)
    assert m.counters["partial_answers"] == 0


async def test_without_a_background_runner_documents_are_built_in_the_call(tmp_path: Path) -> None:
    m = IndexManager(progressive(tmp_path), ModelRegistry.fake())
    view = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
    assert view.complete and m.counters["builds"] == 1


async def test_two_workers_sharing_an_index_folder_build_a_big_document_once(tmp_path: Path) -> None:
    # two managers on one folder stand for two worker processes: only the file lock is shared
    settings = progressive(tmp_path)
    (a, gate_a), (b, gate_b) = gated_manager(settings), gated_manager(settings)
    async with a.running(), b.running():
        first_a = await a.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        with anyio.fail_after(30):  # a's complete build holds the file lock, blocked at the gate
            while a.stats()["building"][0]["to_embed"] == 0:
                await anyio.sleep(0.01)
        first_b = await b.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        gate_a.gate.set()
        gate_b.gate.set()
        await finished(a)
        await finished(b)
        later_b = await b.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="comets")
    assert not first_a.complete and not first_b.complete
    assert later_b.complete and later_b.cached
    assert a.counters["builds"] + b.counters["builds"] == 1 and a.counters["builds"] == 1
    assert b.stats()["disk"]["count"] == 1


async def test_leaving_the_runner_stops_a_background_build(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path))
    with anyio.fail_after(30):
        async with m.running():
            await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
    assert m.stats()["building"] == [] and m.counters["builds"] == 0
    embedder.gate.set()  # the abandoned thread stops at its next batch


async def test_ten_concurrent_first_queries_on_a_big_document_chunk_it_once(tmp_path: Path) -> None:
    m, embedder = gated_manager(progressive(tmp_path))
    calls = 0

    async def chunks() -> Sequence[Chunk]:
        nonlocal calls
        calls += 1
        return make_chunks([*BOOK, SLOW])

    views: list[object] = []

    async def one(word: str) -> None:
        async with m.opening(SHA, "1", "p", query=word) as found:
            views.append(found.view or await m.build(found, await chunks()))

    async with m.running():
        async with anyio.create_task_group() as tg:
            for word in ["apples", "rivers", "engines", "poetry", "volcanoes"] * 2:
                tg.start_soon(one, word)
        embedder.gate.set()
        await finished(m)
    assert calls == 1 and m.counters["partial_answers"] == 10 and m.counters["builds"] == 1


async def test_find_returns_an_index_by_key_from_memory_then_disk_and_never_builds(settings: Settings) -> None:
    built, _ = await manager(settings).get_or_build(SHA, "1", "params", make_chunks(TEXTS))
    assert built.key and (await manager(settings).find("f" * 32)) is None
    fresh = manager(settings)  # a restart: nothing in memory
    found = await fresh.find(built.key)
    assert found is not None and found.key == built.key and [c.text for c in found.chunks] == TEXTS
    assert await fresh.find(built.key) is found  # now from memory
    assert fast(fresh).texts_embedded == 0 and fresh.counters["builds"] == 0
    await fresh.clear()
    assert await fresh.find(built.key) is None


def test_a_partial_answer_prefers_the_sentence_sharing_a_rare_query_term_over_several_common_ones() -> None:
    from mcp_server.indexes.partial import best_sentences

    # every unit names the company, most the year and a report; only one the lawsuit
    texts = [
        "Acme reported its 2022 results in March.", "A lawsuit against the firm was filed.",  # chunk 0
        "Acme reported 2022 sales by region.", "Acme reported 2022 costs.",  # chunk 1
        "Acme reported 2022 cash flows.", "Acme opened a plant.",  # chunk 2
        "Acme reported hiring in 2022.", "Acme, the company.",  # chunk 3
    ]
    owners = np.repeat(np.arange(4), 2)
    keep = best_sentences("Did Acme report the lawsuit in 2022?", 1)(texts, owners)
    assert keep.tolist()[:2] == [False, True]  # three shared common terms weigh less than one rare one
    assert keep.sum() == 4  # still one unit per chunk


GERMAN = [f"Absatz {i} erzählt von {word} und sonst nichts." for i, word in
          enumerate(["Äpfeln", "Flüssen", "Motoren", "Gedichten", "Vulkanen", "Tigern"])]


async def test_an_index_is_searched_only_with_query_vectors_of_the_model_that_built_it(settings: Settings) -> None:
    models = ModelRegistry.fake(multilingual=True)
    m = manager(settings, models)
    german, _ = await m.get_or_build(SHA, "1", "params", make_chunks(GERMAN, language="de"))
    english, _ = await m.get_or_build("b" * 64, "1", "params", make_chunks(TEXTS, language="en"))
    assert german.model_id == "fake-multilingual" and english.model_id == "fake-fast"
    asked: list[str] = []
    for embedder in models.embedders:
        original = embedder.embed_queries
        embedder.embed_queries = (  # type: ignore[method-assign]
            lambda texts, original=original, name=embedder.model_id: asked.append(name) or original(texts))
    await m.searcher.search(german, "Wovon erzählt Absatz 2?", 2)
    await m.searcher.search(english, "Which paragraph tells about rivers?", 2)
    assert asked == ["fake-multilingual", "fake-fast"]


async def test_a_stored_index_of_a_model_that_is_not_loaded_is_not_used(settings: Settings) -> None:
    chunks = make_chunks(GERMAN, language="de")
    built = manager(settings, ModelRegistry.fake(multilingual=True))
    index, _ = await built.get_or_build(SHA, "1", "params", chunks)
    assert index.model_id == "fake-multilingual"
    key = built.index_key(SHA, "1", "params")
    # a registry without that model finds the folder under the same key but must not trust its vectors
    other = manager(settings, ModelRegistry.fake())
    found, _ = await other.tiers.find(key, manifest_check(other.models, "1"))
    assert found is None


def test_a_first_answer_keeps_its_embedding_within_budget_dropping_the_lowest_ranked_candidates_first() -> None:
    from mcp_server.indexes.partial import best_sentences

    texts = ["alpha river bank " * 5, "alpha river delta " * 5, "alpha river mouth " * 5]
    owners = np.array([0, 1, 2])
    ranks = {2: 0, 0: 1, 1: 2}  # chunk 2 ranks first, chunk 1 last
    unlimited = best_sentences("alpha river", 1, ranks=ranks)(texts, owners)
    assert unlimited.tolist() == [True, True, True]
    budget = len(texts[2]) + len(texts[0])
    assert best_sentences("alpha river", 1, ranks=ranks, max_chars=budget)(texts, owners).tolist() == [
        True, False, True]
    # the best candidate keeps its units even when they alone exceed the budget
    assert best_sentences("alpha river", 1, ranks=ranks, max_chars=1)(texts, owners).tolist() == [False, False, True]


def test_a_first_answer_on_a_slow_models_document_embeds_its_best_candidate_even_late_in_the_document() -> None:
    """The budget keeps the best-ranked candidates' sentences, wherever in the document they stand
    (it used to rank the candidates by their order among the embedded chunks: the first chunks kept
    their vectors and a question about a later article had none for its answer)."""
    from mcp_server.indexes.partial import partial_view
    from mcp_server.retrieval import DocumentIndex

    texts = [f"Der Fluss Nummer {i} fließt ruhig durch das Tal und das Dorf." for i in range(11)]
    texts.append("Der Vulkan am Fluss brach aus. Der Vulkan ist hoch.")
    chunks = make_chunks(texts, language="de")
    embedder = FakeEmbedder()
    embedder.prior_chars_per_second = 30.0  # a slow model: the budget holds one candidate's sentences
    base = DocumentIndex.embed(chunks, embedder, only=())
    view = partial_view(base, "Wann brach der Vulkan am Fluss aus?", embedder, 5, per_chunk=3)
    assert base.bm25_top("Wann brach der Vulkan am Fluss aus?", 1) == [11]
    assert set(view.owners.tolist()) == {11}


async def test_the_partial_answers_of_a_document_share_its_template_passages_found_with_its_bm25(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_server.retrieval import index as index_module

    found: list[int] = []
    real = index_module.template_mask
    monkeypatch.setattr(index_module, "template_mask",
                        lambda texts, runs=None: found.append(len(texts)) or real(texts, runs))
    m, embedder = gated_manager(progressive(tmp_path))
    async with m.running():
        first = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="volcanoes")
        assert found == [len(BOOK) + 1]  # before the first answer's search
        second = await m.open(SHA, "1", "p", make_chunks([*BOOK, SLOW]), query="glaciers")
        for view, query in ((first, "volcanoes"), (second, "glaciers")):
            await m.searcher.search(view.index, query, top_k=1)
        embedder.gate.set()
    assert found == [len(BOOK) + 1]


def test_the_bundled_learned_ranker_orders_heads_by_default_and_the_setting_turns_it_off(tmp_path) -> None:
    on = IndexManager(Settings(index_dir=str(tmp_path / "on")), ModelRegistry.fake())
    off = IndexManager(Settings(index_dir=str(tmp_path / "off"), learned_ranking=False), ModelRegistry.fake())
    assert on.searcher.ranker is not None and on.searcher.ranker.head > 0
    assert off.searcher.ranker is None
