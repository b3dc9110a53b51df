"""Rerankers: cross-encoders that score (query, passage) pairs, behind one small interface, ``Reranker``.

``cross_encoders.py`` holds the interface, a ``sentence_transformers.CrossEncoder`` (e.g.
ms-marco-MiniLM-L-6-v2) and the fake for tests; ``onnx_cross_encoder.py`` runs an ONNX cross-encoder
folder without PyTorch (``MCP_RERANKER=bundled``: ours, ``bundled/``, built by
``scripts/train_reranker.py``). The model roles (``embedding/registry.py``) load one; the ranking
rules (``retrieval/ranking.py``) fuse its order with the head's.
"""

from mcp_server.rerankers.cross_encoders import CrossEncoderReranker, FakeReranker, Reranker

__all__ = ["CrossEncoderReranker", "FakeReranker", "Reranker"]
