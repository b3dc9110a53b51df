"""Embeddings through ONNX Runtime: the same model, the same vectors, in about half the time.

PyTorch runs a small sentence-transformers model on the CPU mostly as dispatch overhead of many
small operations. ONNX Runtime runs the same graph, fused, in about half the time, for one query
and for batches alike (bench/latency.py measures warm calls and first answers with either
runtime: ``MCP_EMBEDDING_RUNTIME``).

The graph is exported from the loaded model itself, in memory, at start-up (about a second), so
no second copy of the weights is downloaded or stored. It covers the common shape of a
sentence-transformers model: one Hugging Face transformer, then mean or CLS pooling, then
optionally normalisation. Anything else (another pooling, extra dense layers, a prompt that the
pooling must exclude), a missing ``onnx`` package or a graph whose vectors differ from PyTorch's on
the probe texts keeps PyTorch, and health says why.
"""

from __future__ import annotations

import io
import os
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

# The exported graph must give PyTorch's vectors: cosine scores of the index are compared with
# these, so any drift would re-rank. float32 kernels differ by ~1e-7; more means a wrong graph.
TOLERANCE = 1e-4
MAX_STREAMS = 4  # batches run side by side at most: beyond, activations cost memory for little speed
PROBES = ("query: a", "What were the total revenues in the second quarter of 2023, and how did they change?",
          " ".join(["long"] * 600))  # longer than any window: truncation must match too


class OnnxEncoder:
    """Encodes texts with an ONNX Runtime session of a sentence-transformers model's forward pass.

    ``session.run`` is thread-safe: concurrent builds and queries share one session."""

    def __init__(self, session: Any, tokenize: Any, input_names: list[str], *, streams: int = 1) -> None:
        self._session = session
        self._tokenize = tokenize  # the model's own: the same truncation and casing as its encode()
        self._inputs = input_names
        self.streams = max(1, streams)  # batches that may run side by side (encode_side_by_side)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def encode_side_by_side(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One ``encode`` per batch, up to ``streams`` at once: the first on the calling thread,
        the others on the encoder's threads (``session.run`` releases the GIL)."""
        if len(batches) <= 1 or self.streams <= 1:
            return [self._batch(list(batch)) for batch in batches]
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.streams - 1, thread_name_prefix="onnx-batch")
            pool = self._pool
        results: list[np.ndarray] = []
        for start in range(0, len(batches), self.streams):
            group = [list(batch) for batch in batches[start : start + self.streams]]
            others = [pool.submit(self._batch, batch) for batch in group[1:]]
            results.append(self._batch(group[0]))
            results.extend(future.result() for future in others)
        return results

    def encode(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Unit vectors (the graph normalises), float32, one row per text. Batches hold texts of
        similar length, longest first, as sentence-transformers' ``encode`` sorts them: padding
        stays short and the first batch shows the peak memory."""
        texts = list(texts)
        if len(texts) <= batch_size:
            return self._batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.empty((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            batch = self._batch([texts[i] for i in rows])
            if vectors.shape[1] == 0:
                vectors = np.empty((len(texts), batch.shape[1]), dtype=np.float32)
            vectors[rows] = batch
        return vectors

    def _batch(self, texts: list[str]) -> np.ndarray:
        features = self._tokenize(texts)
        feed = {name: features[name].numpy().astype(np.int64, copy=False) for name in self._inputs}
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)


def build_encoder(model: Any, *, threads: int | None) -> tuple[OnnxEncoder | None, str]:
    """The encoder for ``model`` (a loaded SentenceTransformer on the CPU), or None and why not.

    Blocking (export and session creation take about a second): called while models load.
    """
    try:
        import onnxruntime as ort
        import torch
    except ImportError as exc:
        return None, f"onnxruntime is not installed ({exc.name})"
    try:
        import onnx  # noqa: F401  (torch's exporter writes the graph with it)
    except ImportError:
        return None, "the onnx package is not installed (pip install onnx)"
    graph = _pooled_graph(model, torch)
    if isinstance(graph, str):
        return None, graph
    # preprocess() is tokenize()'s newer name in sentence-transformers: the same truncation and casing
    tokenize = getattr(model, "preprocess", None) or model.tokenize
    sample = tokenize([PROBES[1]])
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample]
    buffer = io.BytesIO()
    try:
        # the TorchScript exporter is deprecated in favour of torch.export, which needs the onnxscript
        # package; the tracer's warnings are about shapes that the dynamic axes cover
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                graph, tuple(sample[name] for name in names), buffer,  # type: ignore[arg-type]  # a file object works
                input_names=names, output_names=["vector"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in names}, opset_version=17, dynamo=False,
            )
        options = ort.SessionOptions()
        # the registry gives torch its share of the cores; the session takes the same share
        options.intra_op_num_threads = max(1, threads or 1)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # an exporter or runtime limitation: PyTorch serves the queries
        return None, f"the ONNX export failed: {type(exc).__name__}: {str(exc)[:200]}"
    # a build alone may use every core: as many single-threaded runs side by side as fit
    streams = min(MAX_STREAMS, max(1, (os.cpu_count() or 1) // options.intra_op_num_threads))
    encoder = OnnxEncoder(session, tokenize, names, streams=streams)
    expected = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    drift = float(np.abs(encoder.encode(PROBES) - expected).max())
    if not drift <= TOLERANCE:
        return None, f"the ONNX graph's vectors differ from PyTorch's by {drift:.2g}"
    return encoder, (f"onnxruntime {ort.__version__}, {options.intra_op_num_threads} thread(s) per run, "
                     f"up to {streams} batch(es) side by side")


def _pooled_graph(model: Any, torch: Any) -> Any:
    """A torch module from token ids to the model's sentence vector, or the reason there is none."""
    modules = list(model)
    kinds = [type(module).__name__ for module in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"the model's modules {kinds} are not a transformer with pooling"
    pooling = modules[1]
    config = pooling.get_config_dict() if hasattr(pooling, "get_config_dict") else {}
    mode = config.get("pooling_mode") or next(
        (name[len("pooling_mode_"):].removesuffix("_tokens") for name, on in config.items()
         if name.startswith("pooling_mode_") and on is True), None)
    if mode not in ("mean", "cls"):
        return f"pooling {mode!r} is not mean or cls"
    if config.get("include_prompt") is False:
        return "the pooling excludes the prompt"
    backbone = getattr(modules[0], "auto_model", None)
    if backbone is None:
        return "the transformer module has no auto_model"

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.backbone: Any = backbone

        def forward(self, *inputs: Any) -> Any:
            features = dict(zip(names, inputs, strict=True))
            tokens = self.backbone(**features).last_hidden_state
            if mode == "cls":
                vector = tokens[:, 0]
            else:
                mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                vector = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(vector, p=2.0, dim=1)

    tokenize = getattr(model, "preprocess", None) or model.tokenize
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in tokenize(["a"])]
    return Pooled().eval()
