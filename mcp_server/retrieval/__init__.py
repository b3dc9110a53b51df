"""Retrieval: embedders, reranker, per-document hybrid indexes and their cache layers.

The lifespan builds ``ModelRegistry.load(settings)`` (in a thread) and
``IndexManager(settings, models, shared=...)`` (a ``SharedIndexStore``: ``redis.index_store.RedisIndexStore``
with ``MCP_INDEX_STORE=redis``, else None); ``retrieve_chunks`` calls ``open`` then ``search``.
"""

from mcp_server.retrieval.embedders import Embedder, FakeEmbedder, SentenceTransformerEmbedder
from mcp_server.retrieval.index import MAX_NEIGHBORS, MAX_TOP_K, DocumentIndex
from mcp_server.retrieval.manager import IndexManager, make_index_key
from mcp_server.retrieval.models import MINILM_ID, ModelRegistry, RoleStatus
from mcp_server.retrieval.rerankers import CrossEncoderReranker, FakeReranker, Reranker
from mcp_server.retrieval.shared import MemoryIndexStore, SharedIndexStore
from mcp_server.retrieval.store import IndexStore

__all__ = [
    "MAX_NEIGHBORS",
    "MAX_TOP_K",
    "MINILM_ID",
    "CrossEncoderReranker",
    "DocumentIndex",
    "Embedder",
    "FakeEmbedder",
    "FakeReranker",
    "IndexManager",
    "IndexStore",
    "MemoryIndexStore",
    "ModelRegistry",
    "Reranker",
    "RoleStatus",
    "SentenceTransformerEmbedder",
    "SharedIndexStore",
    "make_index_key",
]
