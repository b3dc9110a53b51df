"""The flags a returned text carries: the document's own, plus sentences that speak to the agent.

Hidden text and invisible code points are found at parse time (``processors/_visibility.py``)
and ride on ``ProcessedDocument.flags`` and ``Chunk.flags``. Sentences addressed to the AI agent
are scored where a text is returned (process_document, chunk_document, retrieve_chunks,
search_documents, get_passage, read_document), by an optional ``InstructionScorer``: only the
texts an answer holds are scored, and each sentence once (``SCORED_ENTRIES``), so a server
without a scorer pays nothing and one with a scorer pays for what it returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from cachetools import LRUCache

from mcp_server import metrics
from mcp_server.core.models import Chunk, TextFlag
from mcp_server.embedding.runner import ModelRunner
from mcp_server.text.sentences import sentence_spans

__all__ = ["Flagger", "InstructionScorer", "Piece", "Scorer", "chunk_piece", "document_slice"]

INSTRUCTIONS = "instructions_to_agent"
SCORED_ENTRIES = 20_000  # sentences whose score is remembered (a warm answer scores nothing again)


@runtime_checkable
class InstructionScorer(Protocol):
    """Probability, per sentence, that it addresses the AI agent reading the document."""

    def score(self, sentences: Sequence[str]) -> list[float]: ...


Scorer = InstructionScorer | Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Piece:
    """A returned text as the document holds it: ``text`` is ``content[start:start + len(text)]``."""

    start: int
    text: str
    flags: tuple[TextFlag, ...] = ()  # found at parse time, in document offsets


def document_slice(text: str, start: int, end: int) -> Piece:
    """The document's characters ``[start, end)`` in a returned ``text`` that ends with them (a
    chunk continuing a table starts with the table's header rows, which are not in its span)."""
    span = end - start
    if 0 < span <= len(text):
        return Piece(start=start, text=text[len(text) - span:])
    return Piece(start=start, text=text)


def chunk_piece(chunk: Chunk, text: str | None = None) -> Piece:
    loc = chunk.location
    piece = document_slice(chunk.text if text is None else text, loc.start_char, loc.end_char)
    return Piece(start=piece.start, text=piece.text, flags=chunk.flags)


class Flagger:
    """Adds ``instructions_to_agent`` flags (sentence span, score) at or above ``threshold``."""

    def __init__(self, scorer: Scorer | None = None, *, threshold: float = 0.5,
                 runner: ModelRunner | None = None) -> None:
        self._scores: LRUCache[str, float] = LRUCache(maxsize=SCORED_ENTRIES)
        self._lock = threading.Lock()  # the cache is shared by the worker threads that score
        self.scorer = scorer  # plugged in by the lifespan (DocumentService(scorer=...)), or set by a test
        self.threshold = threshold
        self.runner = runner

    @property
    def scorer(self) -> Scorer | None:
        return self._scorer

    @scorer.setter
    def scorer(self, scorer: Scorer | None) -> None:
        """Another scorer scores anew: the remembered scores were the previous one's."""
        with self._lock:
            self._scorer = scorer
            self._scores.clear()

    @property
    def active(self) -> bool:
        return self.scorer is not None

    async def flags(self, pieces: Sequence[Piece]) -> list[tuple[TextFlag, ...]]:
        """The flags of each returned text: its own, plus instructions to the agent when a scorer is
        plugged in (scored in a worker thread, holding a model slot); no thread hop without one."""
        if self.scorer is None or not pieces:
            return [piece.flags for piece in pieces]
        if self.runner is None:
            return self.flags_now(pieces)
        return await self.runner.run(self.flags_now, pieces)  # a model call: it holds a model slot

    def flags_now(self, pieces: Sequence[Piece]) -> list[tuple[TextFlag, ...]]:
        """Each piece's flags: its own, plus its sentences that score at or above the threshold; one
        call to the scorer for every sentence not scored before. Blocking (a model)."""
        if self.scorer is None:
            return [piece.flags for piece in pieces]
        spans = [sentence_spans(piece.text) for piece in pieces]
        sentences = [piece.text[a:b] for piece, found in zip(pieces, spans, strict=True) for a, b in found]
        scores = self._score(sentences)
        out: list[tuple[TextFlag, ...]] = []
        at = 0
        for piece, found in zip(pieces, spans, strict=True):
            added = [
                TextFlag(kind=INSTRUCTIONS, reason="a sentence addressed to the AI agent",
                         start=piece.start + a, end=piece.start + b, score=score)
                for (a, b), score in zip(found, scores[at:at + len(found)], strict=True) if score >= self.threshold
            ]
            at += len(found)
            out.append(tuple(sorted((*piece.flags, *added), key=lambda f: (f.start, f.end))) if added else piece.flags)
        return out

    def _score(self, sentences: list[str]) -> list[float]:
        with self._lock:
            known = {s: self._scores[s] for s in set(sentences) if s in self._scores}
        new = [s for s in dict.fromkeys(sentences) if s not in known]
        if new:
            assert self.scorer is not None
            score = self.scorer.score if isinstance(self.scorer, InstructionScorer) else self.scorer
            values = [float(v) for v in score(new)]
            if len(values) != len(new):
                raise ValueError(f"the instruction scorer gave {len(values)} scores for {len(new)} sentences")
            with self._lock:
                for sentence, value in zip(new, values, strict=True):
                    self._scores[sentence] = value
            metrics.flags_found(INSTRUCTIONS, sum(value >= self.threshold for value in values))
            known.update(zip(new, values, strict=True))
        return [known[s] for s in sentences]
