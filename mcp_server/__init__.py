"""RAG Document Server: a deterministic MCP tool server for documents (no LLM inside)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rag-document-server")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

SERVER_NAME = "RAG Document Server"

__all__ = ["SERVER_NAME", "__version__"]
