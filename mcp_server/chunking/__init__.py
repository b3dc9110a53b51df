"""Chunking: cut a processed document into chunks that the embedder can read and that cite their source.

    params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
    chunks = chunk_document(doc, params, counter)   # counter: the embedder or HFTokenCounter

Sizes follow an adaptive table per document type and length; no chunk exceeds ``CHUNK_WINDOWS``
model windows in the model's own tokens (the index embeds a chunk's sentences and row groups,
each within one window); each chunk carries its exact character span and the
pages, slide, sheet, rows and heading path it comes from.
"""

from mcp_server.chunking._chunker import chunk_document
from mcp_server.chunking._locations import infer_locations
from mcp_server.chunking._params import CHUNK_WINDOWS, CHUNKER_VERSION, ChunkParams, chunk_params_for
from mcp_server.chunking._scoring import content_type, importance_score
from mcp_server.chunking._tokens import HFTokenCounter, TokenCounter, special_tokens

__all__ = [
    "CHUNKER_VERSION",
    "CHUNK_WINDOWS",
    "ChunkParams",
    "HFTokenCounter",
    "TokenCounter",
    "chunk_document",
    "chunk_params_for",
    "content_type",
    "importance_score",
    "infer_locations",
    "special_tokens",
]
