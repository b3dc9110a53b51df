"""The lexical side stored beside an index (indexes/lexical.py): loading an index does not analyse its
chunks again, and a folder without that analysis, or with a damaged or stale one, loads as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexStore
from mcp_server.indexes import lexical as lexical_module
from mcp_server.indexes.lexical import POINTER_FILE
from mcp_server.retrieval import DocumentIndex
from mcp_server.text.analysis import Analyzer
from tests.retrieval._chunks import make_chunks

KEY = "lexical"
QUERIES = ["Prince Andrew at the ball", "Natasha and Pierre", "the French army crossed the river", "zeppelin"]


@pytest.fixture(scope="module")
def texts(corpus_dir: Path) -> list[str]:
    book = (corpus_dir / "docs" / "txt" / "book-war-and-peace-1225p.txt").read_text(encoding="utf-8")[:150_000]
    paragraphs = [p.strip() for p in book.split("\n\n") if p.strip()]
    return paragraphs[:160] + paragraphs[:6]  # repeated passages make template candidates too


def built(texts: list[str]) -> DocumentIndex:
    return DocumentIndex.build(make_chunks(texts, language="en"), FakeEmbedder().embed(texts), model_id="fake")


def ranking(index: DocumentIndex) -> list[object]:
    out: list[object] = [index.templates.tolist(), sorted(index.identity.tokens) if index.identity else None]
    for query in QUERIES:
        scores, share = index.lexical.scores(query)
        out.append((None if scores is None else scores.tolist(), share, index.bm25_top(query, 10)))
    terms, positions = ["princ", "andrew", "natasha", "zeppelin", ""], [0, 5, 3, 40, 41]
    lengths, tf = index.lexical.term_counts(positions, terms)
    tokens = [index.lexical.analysed[p] for p in positions]  # the pool counts ids: as counting the tokens
    assert lengths.tolist() == [len(t) for t in tokens]
    assert tf.tolist() == [[t.count(term) if term else 0 for t in tokens] for term in terms]
    out.append((lengths.tolist(), tf.tolist(), tokens))
    return out


def analysed_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = Analyzer.tokens
    monkeypatch.setattr(Analyzer, "tokens",
                        lambda self, batch, runs=None: seen.extend(batch) or real(self, batch, runs))
    return seen


def test_a_stored_index_loads_without_analysing_its_chunks_and_ranks_as_built(
    texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = built(texts)
    IndexStore(tmp_path).save(KEY, fresh, chunker_version="1")
    seen = analysed_texts(monkeypatch)
    loaded = IndexStore(tmp_path).load(KEY)
    assert loaded is not None
    expected = ranking(fresh)
    assert ranking(loaded) == expected
    assert not set(seen) & set(texts)  # the queries were analysed; no chunk was


def test_a_folder_without_the_analysis_loads_as_before_and_gets_it(
    texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = built(texts)
    store = IndexStore(tmp_path)
    store.save(KEY, fresh, chunker_version="1")
    folder = store.path(KEY)
    for written in [folder / POINTER_FILE, *folder.glob("lexical.*.npz")]:
        written.unlink()  # what a server before this file wrote
    seen = analysed_texts(monkeypatch)
    first = store.load(KEY)
    assert first is not None and ranking(first) == ranking(fresh)
    assert set(texts) <= set(seen)  # analysed as before ...
    assert (folder / POINTER_FILE).is_file()  # ... and stored for the next load
    seen.clear()
    again = store.load(KEY)
    assert again is not None and ranking(again) == ranking(fresh) and not set(seen) & set(texts)


def _flip_file(folder: Path) -> None:
    (path,) = folder.glob("lexical.*.npz")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _other_chunks(folder: Path) -> None:
    pointer = json.loads((folder / POINTER_FILE).read_text())
    (folder / POINTER_FILE).write_text(json.dumps({**pointer, "chunks_sha256": "0" * 64}))


def _truncated_pointer(folder: Path) -> None:
    (folder / POINTER_FILE).write_bytes((folder / POINTER_FILE).read_bytes()[:20])


def _path_in_pointer(folder: Path) -> None:
    pointer = json.loads((folder / POINTER_FILE).read_text())
    (folder / POINTER_FILE).write_text(json.dumps({**pointer, "file": "../manifest.json"}))


@pytest.mark.parametrize("damage", [_flip_file, _other_chunks, _truncated_pointer, _path_in_pointer])
def test_a_damaged_or_stale_analysis_is_analysed_again_and_the_index_kept(
    damage: object, texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = built(texts)
    store = IndexStore(tmp_path)
    store.save(KEY, fresh, chunker_version="1")
    damage(store.path(KEY))  # type: ignore[operator]
    seen = analysed_texts(monkeypatch)
    loaded = store.load(KEY)
    assert loaded is not None and store.quarantined == 0
    assert ranking(loaded) == ranking(fresh) and set(texts) <= set(seen)
    seen.clear()
    again = store.load(KEY)  # written again by that load
    assert again is not None and ranking(again) == ranking(fresh) and not set(seen) & set(texts)


def test_an_analysis_of_another_analyzer_version_is_not_read(
    texts: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = IndexStore(tmp_path)
    store.save(KEY, built(texts), chunker_version="1")
    monkeypatch.setattr(lexical_module, "ANALYSIS_VERSION", lexical_module.ANALYSIS_VERSION + 1)
    seen = analysed_texts(monkeypatch)
    assert store.load(KEY) is not None and set(texts) <= set(seen)


def test_the_stored_analysis_is_numpy_arrays_without_pickle(texts: list[str], tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    store.save(KEY, built(texts), chunker_version="1")
    (path,) = store.path(KEY).glob("lexical.*.npz")
    with np.load(path, allow_pickle=False) as arrays:  # raises on an object array
        assert sorted(arrays.files) == ["ids", "offsets", "templates", "vocabulary", "words"]
