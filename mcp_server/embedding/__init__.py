"""Embedding: the model roles — which model embeds which document, loaded with fallbacks.

The lifespan builds ``ModelRegistry.load(settings)`` (in a thread): the fast and accurate English
embedders, the multilingual one, the reranker, each with the status ``health`` reports. The
runtimes themselves are ``encoders/``'s.
"""

from mcp_server.embedding.registry import MINILM_ID, ModelRegistry, RoleStatus

__all__ = ["MINILM_ID", "ModelRegistry", "RoleStatus"]
