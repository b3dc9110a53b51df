"""RAG Document Server: a deterministic MCP tool server for documents (no LLM inside).

The sub-packages are layers, lowest first: a module imports from its own layer and the ones listed
before it, never from one listed after it (``tests/test_imports.py`` reads this list and checks
every import, function-local and ``TYPE_CHECKING`` ones too):

    core        settings, errors, the stage dataclasses, logging, the thread seam (concurrency)
    metrics     Prometheus instruments, one small function per thing recorded, the scrape
    caches      in-memory cache layers under one memory budget, build admission, the idle trim
    subprocesses  child processes started, stopped and killed one way; the parser pool --workers share
    fetch       downloads: http(s) with the address policy, local files
    text        language detection, each language's BM25 analyzer, the sentence units vectors embed, templates
    processors  one parser per format, the sniffing registry, the sandboxed parser pool
    chunking    a processed document cut into chunks that cite their source
    encoders    the embedding model runtimes (each with a fake): sentence-transformers on ONNX, e5
    rerankers   the cross-encoders that reorder a head (each with a fake): PyTorch or ONNX folders
    detectors   the instruction detector: a classifier over an embedder's vectors, its weights beside it
    embedding   the model roles: which model embeds which document, loaded with fallbacks
    citations   passage ids that find a passage again, a quote aligned with the document's wording
    retrieval   one document's hybrid index and its search, every ranking rule, pools
    indexes     indexes built, stored, shared and cached: the manager, the folder store, the shared store
    pipeline    one document through the stages (service), many documents (research), reading
    middleware  what every tool call passes through: guard, rate limiter, HTTP caller identity
    tools       the MCP tools, the context they read (AppContext), health reports
    redis       the Redis implementations of the shared rate limiter, caches and index store
    server      the MCP surface: MCPServer build, HTTP app, stdio, lifespan, resources, /metrics

This module sits under every layer; ``__main__`` (the command line) above them all.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rag-document-server")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

SERVER_NAME = "RAG Document Server"

__all__ = ["SERVER_NAME", "__version__"]
