"""Embedders: a provider implements ``embed_batch``; the base class adds the rest.

The base adds normalisation (vectors leave here unit-length, so FAISS inner product is cosine
similarity), batching with a progress callback, a content-hash cache (texts whose vectors are
already known are not embedded again), ``embed_query`` and a ``count_tokens`` that makes every
embedder a chunking ``TokenCounter``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from cachetools import LRUCache

from mcp_server.chunking import HFTokenCounter
from mcp_server.core.errors import ModelLoadError

if TYPE_CHECKING:
    from mcp_server.encoders.onnx_encoder import OnnxEncoder, ServedGraph

log = logging.getLogger(__name__)

__all__ = ["Embedder", "FakeEmbedder", "ProgressFn", "SentenceTransformerEmbedder"]

# (done, total, message): called from the worker thread after each batch.
ProgressFn = Callable[[int, int, str], None]

DEFAULT_CACHE_ENTRIES = 20_000  # ~30 MB of 384-d float32 vectors
SPEED_SAMPLE_CHARS = 2_000  # embedding speed is measured over at least this much text (one query is noise)
ONNX_BATCH_TOKENS = 512  # padded tokens per ONNX Runtime batch (bench/latency.py's cold section measures it)
# a cached vector's array header, its 32-byte key and the cache's bookkeeping (measured: ~240 B)
CACHED_VECTOR_OVERHEAD = 240
QUERY_CACHE_ENTRIES = 1024  # agents repeat queries; a repeat then costs no model call

# Queries of these model families need an instruction prefix (their model cards say so) and the
# sentence-transformers config of the published weights does not always carry it as a prompt.
_QUERY_PREFIXES = {
    "multilingual-e5-small": "query: ",
    "multilingual-e5-base": "query: ",
    "multilingual-e5-large": "query: ",
    "bge-small-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "bge-base-en-v1.5": "Represent this sentence for searching relevant passages: ",
    "bge-large-en-v1.5": "Represent this sentence for searching relevant passages: ",
}
# ... and the E5 family embeds documents after a prefix of its own.
_PASSAGE_PREFIXES = {
    "multilingual-e5-small": "passage: ", "multilingual-e5-base": "passage: ", "multilingual-e5-large": "passage: ",
}


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # an all-zero vector stays zero instead of becoming NaN
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


def plan_batches(counts: Sequence[int], *, batch_size: int, batch_tokens: int | None) -> list[tuple[int, int]]:
    """Batches over texts sorted by token count: ``batch_size`` texts each, or, with
    ``batch_tokens`` set, as many as pad to at most that many tokens (at least one): short
    sentences go many to a call, long ones few, so each call costs about the same."""
    if not batch_tokens:
        return [(start, min(start + batch_size, len(counts))) for start in range(0, len(counts), batch_size)]
    runs: list[tuple[int, int]] = []
    start = 0
    for end, count in enumerate(counts):
        # sorted ascending: the newest text is the longest, so the batch pads to its count
        if end > start and (end - start + 1) * count > batch_tokens:
            runs.append((start, end))
            start = end
    if start < len(counts):
        runs.append((start, len(counts)))
    return runs


class Embedder(ABC):
    """A text embedding model. Subclasses set the attributes and implement ``embed_batch``."""

    model_id: str
    dimension: int
    max_tokens: int
    batch_size: int = 32
    # Padded tokens per batch instead of a count (None: ``batch_size`` texts); ``plan_batches`` says why
    batch_tokens: int | None = None
    query_prefix: str = ""
    # Characters per second before the first measurement (MiniLM on one CPU thread embeds
    # ~10,000); ``estimate_seconds`` uses the measured speed as soon as there is one.
    prior_chars_per_second: float = 10_000.0

    def __init__(self, *, cache_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        self._cache: LRUCache[bytes, np.ndarray] = LRUCache(maxsize=max(cache_entries, 1))
        self._queries: LRUCache[str, np.ndarray] = LRUCache(maxsize=QUERY_CACHE_ENTRIES)
        self._cache_lock = threading.Lock()
        self.texts_embedded = 0  # texts actually sent to the model (cache misses)
        self._speed: float | None = None  # measured characters per second (moving average)
        self._running = 0  # embed() calls under way (builds, partial answers), under _cache_lock
        self.cache_used_at = 0.0  # time.monotonic() of the last embed(): its place in the memory budget's LRU

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``, shape (len(texts), dimension); need not be normalised."""

    def embed_batches(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """``embed_batch`` of each batch as ``embed`` planned it; a provider that can run batches
        side by side does."""
        return [self.embed_batch(batch) for batch in batches]

    def batches_at_once(self, running: int) -> int:
        """How many batches ``embed`` hands to ``embed_batches`` at a time while ``running``
        embed() calls are under way (this one included). One, unless a provider runs batches in
        parallel (``SentenceTransformerEmbedder`` on ONNX Runtime)."""
        return 1

    @contextlib.contextmanager
    def urgent(self) -> Iterator[None]:
        """Embeddings this thread asks for inside are waited for by a caller (a first answer), not
        by a background build: an embedder with a queue may serve them first. Here: nothing to do."""
        yield

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries; the default embeds them as passages after ``query_prefix``."""
        return self.embed_batch([self.query_prefix + text for text in texts])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts including special tokens; the default guesses from whitespace."""
        return [len(text.split()) + 2 for text in texts]

    def embed(
        self, texts: Sequence[str], *, progress: ProgressFn | None = None, unit: str = "chunks",
    ) -> np.ndarray:
        """Unit vectors for ``texts`` (float32, (n, dimension)); known texts are not re-embedded.

        Texts go to the model sorted by token count, so a batch pads to similar lengths (sorting
        by characters is not enough: dot leaders and tables pack many tokens into few characters);
        ``out`` keeps the caller's order. ``unit`` names the texts in progress messages.
        """
        keys = [self._key(text) for text in texts]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        todo: dict[bytes, list[int]] = {}
        with self._cache_lock:
            self.cache_used_at = time.monotonic()
            for i, key in enumerate(keys):
                cached = self._cache.get(key)
                if cached is not None:
                    out[i] = cached
                else:
                    todo.setdefault(key, []).append(i)
        unique = list(todo)
        tokens = self.count_tokens([texts[todo[key][0]] for key in unique]) if unique else []
        ordered = sorted(zip(tokens, unique, strict=True), key=lambda pair: pair[0])
        missing = [key for _, key in ordered]
        total = len(missing)
        # (start, end) of each batch in ``missing``; a text pads to the model's window at most
        runs = plan_batches([min(count, self.max_tokens) for count, _ in ordered], batch_size=self.batch_size,
                            batch_tokens=self.batch_tokens)
        if progress is not None:
            progress(0, total, f"embedding {total} of {len(texts)} {unit} with {self.model_id}")
        chars, seconds = 0, 0.0
        with self._cache_lock:
            self._running += 1
        try:
            done, step = 0, 0
            while step < len(runs):
                # re-read at every step: a second build starting meanwhile takes the other cores back
                width = max(1, self.batches_at_once(self._running))
                groups = [missing[start:end] for start, end in runs[step : step + width]]
                step += len(groups)
                batches = [[texts[todo[key][0]] for key in keys] for keys in groups]
                began = time.perf_counter()
                results = self.embed_batches(batches)
                seconds += time.perf_counter() - began
                for batch_keys, batch, raw in zip(groups, batches, results, strict=True):
                    vectors = _normalise(raw)
                    chars += sum(len(text) for text in batch)
                    self.texts_embedded += len(batch)
                    with self._cache_lock:
                        for key, vector in zip(batch_keys, vectors, strict=True):
                            self._cache[key] = vector
                            out[todo[key]] = vector
                    done += len(batch_keys)
                if chars >= SPEED_SAMPLE_CHARS:
                    self._measured(chars, seconds)
                    chars, seconds = 0, 0.0
                if progress is not None:
                    progress(done, total, f"embedded {done}/{total} {unit}")
        finally:
            with self._cache_lock:
                self._running -= 1
        return out

    def known(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(mask of ``texts`` whose vectors are cached, those vectors in order): what ``embed`` would
        return for them without a model call (a complete build under way has embedded them)."""
        keys = [self._key(text) for text in texts]
        mask = np.zeros(len(texts), dtype=np.bool_)
        vectors: list[np.ndarray] = []
        with self._cache_lock:
            for i, key in enumerate(keys):
                cached = self._cache.get(key)
                if cached is not None:
                    mask[i] = True
                    vectors.append(cached)
        return mask, (np.stack(vectors) if vectors else np.zeros((0, self.dimension), dtype=np.float32))

    def estimate_seconds(self, chars: int) -> float:
        """How long embedding ``chars`` characters of new text should take at the measured speed."""
        return chars / (self._speed or self.prior_chars_per_second)

    def _measured(self, chars: int, seconds: float) -> None:
        speed = chars / max(seconds, 1e-9)
        # a moving average: the speed follows the machine's load without jumping at one slow batch
        self._speed = speed if self._speed is None else 0.7 * self._speed + 0.3 * speed

    def embed_query(self, query: str) -> np.ndarray:
        """The unit vector of one search query, shape (dimension,); recent queries are cached."""
        with self._cache_lock:
            cached = self._queries.get(query)
        if cached is not None:
            return cached
        vector = _normalise(self.embed_queries([query]))[0]
        vector.flags.writeable = False  # shared between callers through the cache
        with self._cache_lock:
            self._queries[query] = vector
        return vector

    @property
    def cache_entries(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()
            self._queries.clear()

    def cache_bytes(self) -> int:
        """Bytes of the cached vectors (the query cache is small and fixed: not counted)."""
        with self._cache_lock:
            return len(self._cache) * (4 * self.dimension + CACHED_VECTOR_OVERHEAD)

    def trim_cache(self, fraction: float) -> int:
        """Drop the least recently used ``fraction`` of the cached vectors; the bytes freed."""
        with self._cache_lock:
            drop = min(len(self._cache), max(1, int(len(self._cache) * fraction)))
            for _ in range(drop):
                self._cache.popitem()
            return drop * (4 * self.dimension + CACHED_VECTOR_OVERHEAD)

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, dim={self.dimension}, max_tokens={self.max_tokens})"


class SentenceTransformerEmbedder(Embedder):
    """A loaded ``sentence_transformers.SentenceTransformer``; its tokenizer counts tokens."""

    def __init__(self, model: Any, *, model_id: str, batch_size: int = 32, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model = model
        self._reload: Callable[[], Any] | None = None  # set when the weights were released for ONNX Runtime
        self._model_lock = threading.Lock()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self._describe(model_id=model_id, batch_size=batch_size, dimension=int(get_dim()),
                       max_tokens=int(model.max_seq_length), tokenizer=model.tokenizer,
                       backend=getattr(model.tokenizer, "backend_tokenizer", None),
                       prompts=getattr(model, "prompts", None) or {})
        self.runtime = "torch"  # what embeds, and why (health)

    def _describe(self, *, model_id: str, batch_size: int, dimension: int, max_tokens: int, tokenizer: Any,
                  backend: Any, prompts: dict[str, str]) -> None:
        self.model_id = model_id
        self.batch_size = batch_size
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.tokenizer = tokenizer
        # Counting goes straight to the Rust tokenizer (no Python encoding objects: a 3 MB book
        # counts in a third of the time and without ~200 MB of garbage); a WordPiece tokenizer
        # also tells the chunker it may sum per-word counts instead of re-tokenising chunks.
        self._counter = HFTokenCounter(backend, self.max_tokens) if backend is not None else None
        self.splits_on_whitespace = bool(self._counter and self._counter.splits_on_whitespace)
        name = model_id.rsplit("/", 1)[-1]
        self.query_prefix = prompts.get("query") or _QUERY_PREFIXES.get(name, "")
        self.passage_prefix = prompts.get("passage") or prompts.get("document") or _PASSAGE_PREFIXES.get(name, "")
        self.onnx: OnnxEncoder | None = None  # when set, it embeds instead of PyTorch (onnx_encoder)

    @classmethod
    def from_graph(cls, served: ServedGraph, *, model_id: str, batch_size: int,
                   reload: Callable[[], Any]) -> SentenceTransformerEmbedder:
        """An embedder served by an ONNX graph loaded without PyTorch (``onnx_encoder.load_graph``);
        ``reload`` loads the PyTorch model only if it is ever asked for."""
        embedder = cls.__new__(cls)
        Embedder.__init__(embedder)
        embedder._model, embedder._reload, embedder._model_lock = None, reload, threading.Lock()
        embedder._describe(model_id=model_id, batch_size=batch_size, dimension=served.dimension,
                           max_tokens=served.max_tokens, tokenizer=served.tokenizer, backend=served.tokenizer,
                           prompts=served.prompts)
        embedder.onnx = served.encoder
        embedder.runtime = served.how
        embedder.batch_tokens = ONNX_BATCH_TOKENS  # its cost follows padded tokens (bench/latency.py)
        return embedder

    @classmethod
    def load(
        cls, source: str, *, model_id: str, device: str, local_files_only: bool,
        token: str | None = None, batch_size: int = 32, runtime: str = "torch", threads: int | None = None,
        precision: str = "float32",
    ) -> SentenceTransformerEmbedder:
        """Load weights from a folder or Hugging Face id; library errors propagate to the registry.

        ``runtime="onnx"`` on the CPU also builds the ONNX Runtime encoder (``onnx_encoder``),
        which then embeds passages and queries; where it cannot be built, PyTorch does and
        ``runtime`` says why. A model on this machine whose graph loads without PyTorch
        (``onnx_encoder.load_graph``) never imports it: the server process stays ~390 MB lighter.
        ``precision="int8"``: such a graph with int8 weights, its model id ``model_id`` + ``@int8``;
        ``"int8-blocks"``: with int8 blocks (``@int8-blocks``)."""
        if runtime == "onnx" and device == "cpu" and local_files_only:
            from mcp_server.encoders.onnx_encoder import load_graph, local_folder

            if local_folder(source, token) is None:  # what sentence-transformers would find out, without importing it
                raise ModelLoadError(f"{source} is not in the Hugging Face cache")
            served, why = load_graph(source, threads=threads, token=token, precision=precision)
            if served is not None:
                model_id += served.suffix
                return cls.from_graph(served, model_id=model_id, batch_size=batch_size, reload=lambda: _pytorch_model(
                    source, device=device, local_files_only=local_files_only, token=token))
            log.info("models.onnx_without_torch", extra={"model": model_id, "reason": why})
        model = _pytorch_model(source, device=device, local_files_only=local_files_only, token=token)
        embedder = cls(model, model_id=model_id, batch_size=batch_size)
        if runtime == "onnx":
            if device != "cpu":
                embedder.runtime = f"torch (onnx is used on the CPU only; the device is {device})"
            else:
                from mcp_server.encoders.onnx_encoder import build_encoder

                encoder, how = build_encoder(model, source=source, threads=threads,
                                             local_files_only=local_files_only, token=token)
                embedder.onnx = encoder
                if encoder is not None:
                    embedder.runtime = how
                    embedder.batch_tokens = ONNX_BATCH_TOKENS  # its cost follows padded tokens (bench/latency.py)
                    embedder.release_torch_weights(lambda: _pytorch_model(
                        source, device=device, local_files_only=local_files_only, token=token))
                else:
                    embedder.runtime = f"torch ({how})"
                    log.warning("models.runtime", extra={"model": model_id, "runtime": "torch", "reason": how})
        return embedder

    @property
    def model(self) -> Any:
        """The PyTorch model; loaded again on first use if ``release_torch_weights`` dropped its weights."""
        with self._model_lock:
            if self._reload is not None:
                self._model, self._reload = self._reload(), None
            return self._model

    def release_torch_weights(self, reload: Callable[[], Any]) -> None:
        """ONNX Runtime holds its own copy of the weights: PyTorch's go (90-130 MB per small model).
        The module structure stays on the meta device (its tokenizer keeps working for the encoder);
        ``reload`` brings the weights back if PyTorch is ever asked to embed."""
        with self._model_lock:
            self._model.to("meta")
            self._reload = reload

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        # the query prefix replaces the passage one
        return self._encode([self.query_prefix + text for text in texts])

    def batches_at_once(self, running: int) -> int:
        # ONNX Runtime sessions run side by side (each run on its caller's thread, one intra-op
        # thread): a build alone on the machine's model slots uses every core, two share them
        if self.onnx is None or running > 1:
            return 1
        return self.onnx.streams

    def embed_batches(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        if self.onnx is None:
            return super().embed_batches(batches)
        prefix = self.passage_prefix  # each batch is one ONNX Runtime run, as embed() sized it by tokens
        return self.onnx.encode_side_by_side([[prefix + text for text in batch] for batch in batches])

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.passage_prefix:
            texts = [self.passage_prefix + text for text in texts]
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.onnx is not None:
            return self.onnx.encode(texts, batch_size=self.batch_size)
        return self._torch(texts)

    def _torch(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            self.model.encode(
                list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            ),
            dtype=np.float32,
        )

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        if self._counter is not None:
            return self._counter.count_tokens(texts)
        encoded = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]


def _pytorch_model(source: str, **kwargs: Any) -> Any:
    """A ``SentenceTransformer`` in eval mode (imports PyTorch)."""
    quiet_transformers()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(source, **kwargs).eval()


def quiet_transformers() -> None:
    """transformers' per-load progress bars would spam stderr (the MCP stdio log channel)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic only
        pass


class FakeEmbedder(Embedder):
    """Deterministic bag-of-words vectors (hashed words): similar wording -> similar vectors.

    Good enough for tests of caching, persistence and ranking plumbing; no model, no torch.
    """

    def __init__(
        self, *, model_id: str = "fake-embedder", dimension: int = 64, max_tokens: int = 256,
        batch_size: int = 32, **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.model_id = model_id
        self.dimension = dimension
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.batches = 0
        self.prior_chars_per_second = 1e9  # no model: effectively free

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                word = word.strip(".,;:!?\"'()[]")
                if not word:
                    continue
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[i, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
            out[i, -1] += 0.01  # never all-zero
        return out
