"""Chunking: cut a processed document into chunks that fit the embedder and cite their source.

    params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
    chunks = chunk_document(doc, params, counter)   # counter: the embedder or HFTokenCounter

Sizes follow the seed's adaptive table per document type; no chunk exceeds the model's
window in the model's own tokens; each chunk carries its exact character span and the
pages, slide, sheet, rows and heading path it comes from.
"""

from mcp_server.chunking._chunker import chunk_document
from mcp_server.chunking._locations import infer_locations
from mcp_server.chunking._params import CHUNKER_VERSION, ChunkParams, chunk_params_for
from mcp_server.chunking._scoring import content_type, importance_score
from mcp_server.chunking._tokens import HFTokenCounter, TokenCounter

__all__ = [
    "CHUNKER_VERSION",
    "ChunkParams",
    "HFTokenCounter",
    "TokenCounter",
    "chunk_document",
    "chunk_params_for",
    "content_type",
    "importance_score",
    "infer_locations",
]
