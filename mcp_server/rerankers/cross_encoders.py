"""Rerankers: score (query, passage) pairs; higher is more relevant. A real one and a fake."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from mcp_server import metrics

__all__ = ["CrossEncoderReranker", "FakeReranker", "Reranker"]


class Reranker(ABC):
    """``head``: how many of a ranking's first items it scores (None: all); ``weight``: None to sort
    them by its score alone, else its place's weight beside the given order's (``ranking.rerank_head``);
    ``languages``: the documents' languages it was trained for (None: any; others keep their order)."""

    model_id: str
    head: int | None = None
    weight: float | None = None
    languages: tuple[str, ...] | None = None

    @abstractmethod
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in the order given."""


class CrossEncoderReranker(Reranker):
    """A ``sentence_transformers.CrossEncoder`` (e.g. ms-marco-MiniLM-L-6-v2)."""

    def __init__(self, model: Any, *, model_id: str, batch_size: int = 32) -> None:
        self.model = model
        self.model_id = model_id
        self.batch_size = batch_size

    @classmethod
    def load(
        cls, source: str, *, model_id: str, device: str, local_files_only: bool,
        token: str | None = None, max_length: int = 512, batch_size: int = 32,
    ) -> CrossEncoderReranker:
        from mcp_server.encoders.embedders import quiet_transformers

        quiet_transformers()
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(
            source, device=device, local_files_only=local_files_only, token=token, max_length=max_length
        )
        model.eval()
        return cls(model, model_id=model_id, batch_size=batch_size)

    @metrics.timed("rerank")
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        scores = self.model.predict(
            [(query, text) for text in texts], batch_size=self.batch_size,
            show_progress_bar=False, convert_to_numpy=True,
        )
        return [float(s) for s in np.asarray(scores, dtype=np.float32).reshape(len(texts), -1)[:, 0]]


class FakeReranker(Reranker):
    """Scores by the share of query words present in the text (deterministic, no model)."""

    def __init__(
        self, *, model_id: str = "fake-reranker", head: int | None = None, weight: float | None = None,
        languages: tuple[str, ...] | None = None,
    ) -> None:
        self.model_id = model_id
        self.head, self.weight, self.languages = head, weight, languages
        self.calls = 0

    @metrics.timed("rerank")
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls += 1
        words = {w.strip(".,;:!?\"'()").lower() for w in query.split()} - {""}
        out = []
        for text in texts:
            have = {w.strip(".,;:!?\"'()").lower() for w in text.split()}
            out.append(len(words & have) / max(len(words), 1))
        return out
