"""Embeddings through ONNX Runtime: the same model, the same vectors, in about half the time.

PyTorch runs a small sentence-transformers model on the CPU mostly as dispatch overhead of many
small operations. ONNX Runtime runs the same graph, fused, in about half the time, for one query
and for batches alike (bench/latency.py measures warm calls and first answers with either
runtime: ``MCP_EMBEDDING_RUNTIME``).

The graph is exported from the same weights by a child process (tracing leaves memory behind in
the process that does it) into the user's cache folder, once per model and library version; no
weights are downloaded. Beside it (``<graph>.json``) the child leaves the Rust tokenizer as the
model runs it and PyTorch's vectors of a few probe texts: a server that finds both loads the graph
with ``load_graph`` and never imports PyTorch or sentence-transformers (~390 MB per process); the
graph must still give PyTorch's vectors on the probes.

It covers the common shape of a sentence-transformers model: one Hugging Face transformer, then
mean or CLS pooling, then optionally normalisation. Anything else (another pooling, extra dense
layers, a prompt that the pooling must exclude), a missing ``onnx`` package, a failed export or a
graph whose vectors differ from the loaded model's on the probe texts keeps PyTorch, and health
says why.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.core.concurrency import thread_pool
from mcp_server.encoders._onnx_export import PROBES, encode_texts, input_names, tokenizer_of, unsupported
from mcp_server.subprocesses import processes

# The exported graph must give PyTorch's vectors: cosine scores of the index are compared with
# these, so any drift would re-rank. float32 kernels differ by ~1e-7; more means a wrong graph.
TOLERANCE = 1e-4
EXPORT_TIMEOUT = 300  # seconds: a big model on a busy machine; beyond it, PyTorch serves
_EXPORTER = Path(__file__).with_name("_onnx_export.py")
log = logging.getLogger(__name__)
MAX_STREAMS = 4  # batches run side by side at most: beyond, activations cost memory for little speed
KEEP_GRAPHS = 3  # graphs of one model kept in the cache folder (the most recently used)
_SAMPLE = 1 << 20  # bytes hashed at each end of a big model file (content_key)
# An int8 graph (``precision="int8"``) is not the float graph: its probe vectors must stay this close to
# PyTorch's (cosine; MiniLM's per-channel int8 measured 0.97-1.0 on a 10-K's sentences, mean 0.992)
INT8_MIN_COSINE = 0.95
INT8_SUFFIX = "@int8"  # the model id of an int8 graph's vectors: an index never mixes them with float ones
INT8_BLOCKS_SUFFIX = "@int8-blocks"  # precision "int8-blocks" (``_int8_blocks``): ~0.999 of the float vectors
INT8_PRECISIONS = {"int8": INT8_SUFFIX, "int8-blocks": INT8_BLOCKS_SUFFIX}


class OnnxEncoder:
    """Encodes texts with an ONNX Runtime session of a sentence-transformers model's forward pass.

    ``session.run`` is thread-safe: concurrent builds and queries share one session."""

    def __init__(self, session: Any, tokenize: Any, input_names: list[str], *, streams: int = 1) -> None:
        self._session = session
        self._tokenize = tokenize  # the model's own: the same truncation and casing as its encode()
        self._inputs = input_names
        self.streams = max(1, streams)  # batches that may run side by side (encode_side_by_side)
        self._pool: Executor | None = None
        self._pool_lock = threading.Lock()
        self._run_options = _shrinking_arena()

    def encode_side_by_side(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """One ``encode`` per batch, up to ``streams`` at once: the first on the calling thread,
        the others on the encoder's threads (``session.run`` releases the GIL)."""
        if len(batches) <= 1 or self.streams <= 1:
            return [self._batch(list(batch)) for batch in batches]
        with self._pool_lock:
            if self._pool is None:
                self._pool = thread_pool(self.streams - 1, "onnx-batch")
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
        feed = {name: _int64(features[name]) for name in self._inputs}
        return np.asarray(self._session.run(None, feed, self._run_options)[0], dtype=np.float32)


def _int64(ids: Any) -> np.ndarray:
    """Token ids as ONNX Runtime takes them: a torch tensor (the model's tokenizer) or an array."""
    array = ids.numpy() if hasattr(ids, "numpy") else ids
    return np.asarray(array).astype(np.int64, copy=False)


def _shrinking_arena() -> Any:
    """Run options that hand the CPU arena's growth back after each run: otherwise the arena keeps
    the largest batch's activations for good (measured: MiniLM's grew by ~550 MB after 8 x 512-token
    batches and never shrank; with shrinking it returns to the session's size at the same speed)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def build_encoder(
    model: Any, *, source: str, threads: int | None, local_files_only: bool = True, token: str | None = None,
    cache_dir: Path | None = None,
) -> tuple[OnnxEncoder | None, str]:
    """The encoder for ``model`` (a SentenceTransformer on the CPU loaded from ``source``), or None
    and why not.

    The graph is exported by a child process (``_onnx_export.py``) into ``cache_dir`` (by default
    the user's cache folder), named by what it is made from; later starts load it from there.
    Whatever file is loaded must give ``model``'s own vectors on the probe texts, so a stale or
    altered file is never used: it is exported again once, else PyTorch serves. Blocking (an
    export takes a few seconds, a cached load well under one): called while models load.
    """
    try:
        import onnxruntime as ort
    except ImportError as exc:
        return None, f"onnxruntime is not installed ({exc.name})"
    try:
        import onnx  # noqa: F401  (torch's exporter writes the graph with it)
    except ImportError:
        return None, "the onnx package is not installed (pip install onnx)"
    reason = unsupported(model)
    if reason is not None:
        return None, reason
    path = _cache_path(source, cache_dir)
    fresh = not path.is_file()
    if not fresh:
        used(path)
    for _ in range(2):
        if fresh:
            reason = _export(source, path, local_files_only=local_files_only, token=token)
            if reason is not None:
                return None, f"the ONNX export failed: {reason}"
        options = _session_options(threads)
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged file: exported again, then PyTorch serves
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        else:
            # a build alone may use every core: as many single-threaded runs side by side as fit
            streams = min(MAX_STREAMS, max(1, (os.cpu_count() or 1) // options.intra_op_num_threads))
            encoder = OnnxEncoder(session, tokenizer_of(model), input_names(model), streams=streams)
            expected = model.encode(list(PROBES), convert_to_numpy=True, normalize_embeddings=True,
                                    show_progress_bar=False)
            drift = float(np.abs(encoder.encode(PROBES) - expected).max())
            reason = f"the ONNX graph's vectors differ from PyTorch's by {drift:.2g}"
            if drift <= TOLERANCE:
                return encoder, (f"onnxruntime {ort.__version__}, {options.intra_op_num_threads} thread(s) per "
                                 f"run, up to {streams} batch(es) side by side")
        if fresh:
            break
        fresh = True  # a cached file that does not match: export once more
    for stale in (path, _sidecar_path(path)):
        with contextlib.suppress(OSError):
            stale.unlink()
    return None, reason or "no ONNX graph"


def _session_options(threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # the registry gives each model call its share of the cores; each run takes that share
    options.intra_op_num_threads = max(1, threads or 1)
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


@dataclass(frozen=True, kw_only=True, slots=True)
class ServedGraph:
    """A graph loaded without PyTorch: the encoder and what the embedder needs to describe itself."""

    encoder: OnnxEncoder
    tokenizer: Any  # tokenizers.Tokenizer, truncating and padding as the model's tokenize()
    max_tokens: int
    dimension: int
    prompts: dict[str, str]
    how: str  # the runtime line of health
    int8: bool = False  # an int8 graph serves (``quantized``): its vectors are a model of their own
    suffix: str = ""  # what the model id gains where an int8 graph serves (``INT8_PRECISIONS``)


def local_folder(source: str, token: str | None = None) -> Path | None:
    """The folder of ``source`` on this machine: itself, or its snapshot in the Hugging Face cache
    (never a download); None when it is not there."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True, token=token))
    except Exception:  # noqa: BLE001 - not cached, or not a valid id: the same answer
        return None


def load_graph(
    source: str, *, threads: int | None, token: str | None = None, cache_dir: Path | None = None,
    precision: str = "float32",
) -> tuple[ServedGraph | None, str]:
    """The graph of the local model ``source`` ready to embed, loaded without PyTorch, or None and
    why not. Exported first (by the child process, which imports PyTorch and exits) when the cache
    folder has no graph with its sidecar yet; a graph whose vectors are not PyTorch's on the probes
    is exported again once, else refused (``build_encoder`` then tries with PyTorch loaded).
    ``precision="int8"``: the graph's matrix products with int8 weights (``quantized``), made once
    beside it; where that fails the float graph serves (``ServedGraph.int8`` says which).
    ``precision="int8-blocks"``: its products as int8 blocks instead (``quantized_blocks``)."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        return None, f"onnxruntime is not installed ({exc.name})"
    folder = local_folder(source, token)
    if folder is None:
        return None, f"{source} is not on this machine"
    path = _cache_path(str(folder), cache_dir)
    fresh = not (path.is_file() and _sidecar_path(path).is_file())
    if not fresh:
        used(path)
    reason = "no ONNX graph"
    for _ in range(2):
        if fresh:
            failed = _export(str(folder), path, local_files_only=True, token=token)
            if failed is not None:
                return None, f"the ONNX export failed: {failed}"
            if not _sidecar_path(path).is_file():  # the graph stays: build_encoder runs it with PyTorch's tokenizer
                return None, "the model's tokenizer cannot run without PyTorch"
        try:
            return _open_served(path, threads, ort, precision=precision), ""
        except Exception as exc:  # noqa: BLE001 - a damaged, stale or drifting file: exported again once
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        if fresh:
            break
        fresh = True
    for stale in (path, _sidecar_path(path)):
        with contextlib.suppress(OSError):
            stale.unlink()
    return None, reason


def _open_served(path: Path, threads: int | None, ort: Any, *, precision: str = "float32") -> ServedGraph:
    from tokenizers import Tokenizer

    side = json.loads(_sidecar_path(path).read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_str(side["tokenizer"])
    names, lower_case = list(side["inputs"]), bool(side["lower_case"])

    def tokenize(texts: Sequence[str]) -> dict[str, Any]:
        return encode_texts(tokenizer, texts, lower_case=lower_case, names=names)

    options = _session_options(threads)
    expected = np.asarray(side["vectors"], dtype=np.float32)
    served = made(path) if (made := {"int8": quantized, "int8-blocks": quantized_blocks}.get(precision)) else None
    if served is not None:
        encoder = _encoder(served, options, tokenize, names, ort)
        cosine = float(np.min(np.sum(encoder.encode(side["probes"]) * expected, axis=1)))
        if cosine < INT8_MIN_COSINE:
            log.warning("models.quantized_refused", extra={"graph": str(served), "cosine": round(cosine, 4)})
            served = None
    if served is None:
        encoder = _encoder(path, options, tokenize, names, ort)
        drift = float(np.abs(encoder.encode(side["probes"]) - expected).max())
        if drift > TOLERANCE:
            raise ValueError(f"the ONNX graph's vectors differ from PyTorch's by {drift:.2g}")
    how = (f"onnxruntime {ort.__version__}, {options.intra_op_num_threads} thread(s) per run, up to {encoder.streams} "
           f"batch(es) side by side, without PyTorch" + (f", {precision} weights" if served is not None else ""))
    return ServedGraph(encoder=encoder, tokenizer=tokenizer, max_tokens=int(side["max_tokens"]),
                       dimension=int(side["dimension"]), prompts=dict(side["prompts"]), how=how,
                       int8=served is not None, suffix=INT8_PRECISIONS[precision] if served is not None else "")


def _encoder(path: Path, options: Any, tokenize: Any, names: list[str], ort: Any) -> OnnxEncoder:
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    streams = min(MAX_STREAMS, max(1, (os.cpu_count() or 1) // options.intra_op_num_threads))
    return OnnxEncoder(session, tokenize, names, streams=streams)


def quantized(path: Path) -> Path | None:
    """The int8 graph beside the float graph ``path``, made once (ONNX Runtime's dynamic quantization: every
    matrix product's weights int8 per output channel, activations quantized per run; about half the CPU
    of the float graph on a 10-K's sentences, bench/build_stages.py), or None where it cannot be made."""

    def make(made: Path) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        # DefaultTensorType: the exporter's graph leaves some products' outputs untyped for the quantizer
        quantize_dynamic(str(path), str(made), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": 1})
    return _made_once(path, path.with_name(f"{path.stem}-int8.onnx"), make)


def quantized_blocks(path: Path) -> Path | None:
    """The graph of int8 blocks beside the float graph ``path`` (``_int8_blocks``), made once, or None."""
    from mcp_server.encoders._int8_blocks import blockwise
    return _made_once(path, path.with_name(f"{path.stem}-int8b.onnx"), lambda made: blockwise(path, made))


def _made_once(path: Path, target: Path, make: Callable[[Path], None]) -> Path | None:
    """``target``, made by ``make`` beside ``path`` unless it is there (written whole or not at all), or None."""
    if target.is_file():
        used(target)
        return target
    try:
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".int8-") as tmp:
            made = Path(tmp) / target.name
            make(made)
            os.replace(made, target)
    except Exception as exc:  # noqa: BLE001 - the float graph serves
        reason = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("models.quantized_failed", extra={"graph": str(path), "reason": reason})
        return None
    return target


def _sidecar_path(graph: Path) -> Path:
    return graph.with_suffix(".json")


def default_cache_dir() -> Path:
    """The user's cache folder (XDG_CACHE_HOME, else ~/.cache); a service account without a
    writable home (a container's) gets one under the temporary folder instead."""
    for base in (os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", tempfile.gettempdir()):
        folder = Path(base) / "rag-document-server" / "onnx"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    return Path(tempfile.gettempdir())


def _cache_path(source: str, cache_dir: Path | None) -> Path:
    """The file of ``source``'s graph: named by what the model is (a hub id; a folder by its files'
    contents, ``content_key``, not where it is installed, so every install of the same model shares
    one graph), the torch, sentence-transformers and tokenizers versions (read from the installed
    packages' metadata: nothing is imported) and the exporter's own code."""
    folder = Path(source)
    parts = [*(_installed(name) for name in ("torch", "sentence-transformers", "tokenizers")),
             _EXPORTER.read_text(encoding="utf-8")]
    if folder.is_dir():
        parts += [f"{f.relative_to(folder)}:{content_key(f)}" for f in sorted(folder.rglob("*"))
                  if f.is_file() and "__pycache__" not in f.parts]
    else:
        parts.append(source)
    digest = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    name = re.sub(r"[^\w.-]+", "_", source.rstrip("/").rsplit("/", 1)[-1])[:60] or "model"
    return (cache_dir or default_cache_dir()) / f"{name}-{digest}.onnx"


def content_key(path: Path) -> str:
    """What a file holds, read in a moment: its size and the SHA-256 of the whole file, or of a big
    one's first and last ``_SAMPLE`` bytes (a model's header and its last tensors). A graph found
    under the key must still give the model's vectors on the probe texts before it serves."""
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        if size <= 2 * _SAMPLE:
            digest.update(file.read())
        else:
            digest.update(file.read(_SAMPLE))
            file.seek(size - _SAMPLE)
            digest.update(file.read(_SAMPLE))
    return f"{size}:{digest.hexdigest()}"


def used(path: Path) -> None:
    """Mark a cached graph as in use (its time is what ``prune_cache`` keeps the newest by)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def prune_cache(path: Path, *, keep: int = KEEP_GRAPHS) -> None:
    """After ``path`` was written: the graphs of the same model under other keys (other library
    versions, an older model) beyond the ``keep`` most recently used go, with their sidecar and
    probe files, and temporary files a killed export left over an hour ago. Without it the cache
    folder grows by a graph at every upgrade. Errors are ignored: a file another process removes
    or still holds is left."""
    prefix, _, _ = path.name.rpartition("-")
    pattern = re.compile(re.escape(prefix) + r"-[0-9a-f]{24}\.onnx")
    stale = time.time() - 3600
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return
    graphs = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if pattern.fullmatch(entry.name) and entry != path:
                graphs.append((entry.stat().st_mtime, entry))
            elif entry.name.startswith(".") and entry.name.endswith((".onnx", ".tmp")) \
                    and entry.stat().st_mtime < stale:
                entry.unlink()
    for _, graph in sorted(graphs, reverse=True)[max(0, keep - 1):]:
        # the graph and every file named after it (its sidecar, the multilingual graph's probes, its int8 graph)
        for companion in [graph, *graph.parent.glob(glob.escape(graph.stem) + ".*"),
                          *(graph.with_name(f"{graph.stem}-{kind}.onnx") for kind in ("int8", "int8b"))]:
            with contextlib.suppress(OSError):
                companion.unlink()


def _installed(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return f"{name} missing"


def _export(source: str, path: Path, *, local_files_only: bool, token: str | None) -> str | None:
    """Export in a child process into ``path`` (atomically), and its sidecar when the child could
    describe the tokenizer; None, or why the export failed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=".export-", suffix=".onnx", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        return f"no writable folder for the exported model ({exc})"
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **({"HF_TOKEN": token} if token else {})}
    flags = ["--local-files-only"] if local_files_only else []
    try:
        done = processes.run(processes.python_argv(_EXPORTER, source, partial, *flags), env=env,
                             timeout=EXPORT_TIMEOUT)
        lines = done.stdout.strip().splitlines()
        reply: dict[str, Any] = (json.loads(lines[-1]) if lines else
                                 {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]})
        if "error" in reply:
            return str(reply["error"])
        os.replace(partial, path)
        if "sidecar" in reply:
            sidecar = json.dumps({"inputs": reply["inputs"], **reply["sidecar"]}).encode("utf-8")
            write_atomically(_sidecar_path(path), lambda name: Path(name).write_bytes(sidecar))
        else:
            log.info("models.onnx_sidecar", extra={"graph": str(path), "reason": reply.get("sidecar_error")})
        prune_cache(path)
        return None
    except (OSError, processes.TimeoutExpired, json.JSONDecodeError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)


def write_atomically(path: Path, write: Callable[[str], object]) -> None:
    """``write(temporary name)`` beside ``path``, fsynced, then renamed over it (as the index
    store's ``write_atomic``): a process killed while writing leaves no torn file that a later
    start would take for a cached one."""
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(partial)
        with open(partial, "rb") as written:
            os.fsync(written.fileno())
        os.replace(partial, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)
