"""The flags a returned text carries: the document's own, plus sentences that speak to the agent.

Hidden text and invisible code points are found at parse time (``processors/_visibility.py``)
and ride on ``ProcessedDocument.flags`` and ``Chunk.flags``. Sentences addressed to the AI agent
are scored where a text is returned (process_document, chunk_document, retrieve_chunks,
search_documents, get_passage, read_document), by an optional scorer: only the texts an answer
holds are scored, so a server without a scorer pays nothing and one with a scorer pays for what it
returns. A ``PassageScorer`` (the bundled detector) reads each sentence against the sentences around
it, so it is given each returned text's sentences together; a plain ``InstructionScorer`` scores
sentences alone, each once (``SCORED_ENTRIES``). A text returned
before is answered from what was found in it (``FOUND_ENTRIES``), on the event loop: a warm answer
splits no sentence, looks up no score and takes no model slot or thread hop. A chunk of an index
that carries its detector's scores (``detectors/scores.py``: scored by the complete build,
stored beside the index) is flagged from them, on the event loop too, when they are the plugged-in
detector's (its ``model_id``): an index read from disk costs no model call to flag.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from cachetools import LRUCache

from mcp_server import metrics
from mcp_server.core.models import Chunk, ProcessedDocument, TextFlag
from mcp_server.detectors.scores import ChunkScores
from mcp_server.embedding.runner import ModelRunner
from mcp_server.text.sentences import sentence_spans

__all__ = ["Flagger", "InstructionScorer", "PassageScorer", "Piece", "Scorer", "chunk_piece", "document_flags"]

INSTRUCTIONS = "instructions_to_agent"
SCORED_ENTRIES = 20_000  # sentences whose score is remembered (a warm answer scores nothing again)
FOUND_ENTRIES = 4_096  # returned texts whose flagged sentences are remembered (a warm answer splits nothing)

Found = tuple[tuple[int, int, float], ...]  # (start, end, score) in a text of its sentences at the threshold


@runtime_checkable
class InstructionScorer(Protocol):
    """Probability, per sentence, that it addresses the AI agent reading the document."""

    def score(self, sentences: Sequence[str]) -> list[float]: ...


@runtime_checkable
class PassageScorer(Protocol):
    """Probability, per sentence of each passage (in order), that it addresses the AI agent: a
    sentence is read against the sentences around it in its passage."""

    def score_passages(self, passages: Sequence[Sequence[str]]) -> list[list[float]]: ...


Scorer = PassageScorer | InstructionScorer | Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Piece:
    """A returned text as the document holds it: ``text`` is ``content[start:start + len(text)]``."""

    start: int
    text: str
    flags: tuple[TextFlag, ...] = ()  # found at parse time, in document offsets
    scored: ChunkScores | None = None  # its sentences' scores stored with its index, when ``text`` is a chunk's


def chunk_piece(chunk: Chunk, text: str | None = None, scored: ChunkScores | None = None) -> Piece:
    """The chunk's document text (of ``text``, a returned text ending with the chunk's span); ``scored``,
    the chunk's stored sentence scores, kept only when the returned text is the chunk's own."""
    own = text is None or text == chunk.text
    return Piece(start=chunk.location.start_char, text=chunk.document_text(text), flags=chunk.flags,
                 scored=scored if own else None)


async def document_flags(flagger: Flagger, doc: ProcessedDocument, *, upto: int | None = None) -> tuple[TextFlag, ...]:
    """A whole document's flags: its metadata fields' first (named in ``field``, offsets into the
    field's value: invisible code points removed at parse time, and sentences addressed to the agent,
    since metadata is text an agent reads like the content), then its content's, in document order;
    ``upto``: the content's first ``upto`` characters only (the text a tool returns: the detector
    scores no sentence the agent is not given)."""
    fields = [(name, value) for name, value in doc.metadata.items() if isinstance(value, str) and value.strip()]
    text = doc.content if upto is None else doc.content[:upto]
    content = tuple(f for f in doc.flags if not f.field and (upto is None or f.overlaps(0, upto)))
    [flags, *of_fields] = await flagger.flags(
        [Piece(start=0, text=text, flags=content), *(Piece(start=0, text=value) for _, value in fields)])
    named = [f for f in doc.flags if f.field]
    named += [dataclasses.replace(f, field=name) for (name, _), found in zip(fields, of_fields, strict=True)
              for f in found]
    return (*sorted(named, key=lambda f: (f.field, f.start, f.end)), *flags)


class Flagger:
    """Adds ``instructions_to_agent`` flags (sentence span, score) at or above ``threshold``."""

    def __init__(self, scorer: Scorer | None = None, *, threshold: float = 0.5,
                 runner: ModelRunner | None = None) -> None:
        self._scores: LRUCache[str, float] = LRUCache(maxsize=SCORED_ENTRIES)
        self._found: LRUCache[bytes, Found] = LRUCache(maxsize=FOUND_ENTRIES)  # by _key(text)
        self._lock = threading.Lock()  # the caches are shared by the worker threads that score
        self._threshold = threshold
        self.scorer = scorer  # plugged in by the lifespan (DocumentService(scorer=...)), or set by a test
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
            self._found.clear()

    @property
    def threshold(self) -> float:
        return self._threshold

    @threshold.setter
    def threshold(self, threshold: float) -> None:
        """Another threshold finds anew: the texts' remembered findings were at the previous one."""
        with self._lock:
            self._threshold = threshold
            self._found.clear()

    @property
    def active(self) -> bool:
        return self.scorer is not None

    async def flags(self, pieces: Sequence[Piece]) -> list[tuple[TextFlag, ...]]:
        """The flags of each returned text: its own, plus instructions to the agent when a scorer is
        plugged in (scored in a worker thread, holding a model slot); no thread hop without one."""
        if self.scorer is None or not pieces:
            return [piece.flags for piece in pieces]
        pieces = [self._from_stored(piece) for piece in pieces]
        known = self._known(pieces)
        if known is not None:  # every text returned before: no model, no thread
            return [_with(piece, found) for piece, found in zip(pieces, known, strict=True)]
        if self.runner is None:
            return self.flags_now(pieces)
        return await self.runner.run(self.flags_now, pieces)  # a model call: it holds a model slot

    def flags_now(self, pieces: Sequence[Piece]) -> list[tuple[TextFlag, ...]]:
        """Each piece's flags: its own, plus its sentences that score at or above the threshold; one
        call to the scorer for every sentence not scored before. Blocking (a model)."""
        if self.scorer is None:
            return [piece.flags for piece in pieces]
        spans = [sentence_spans(piece.text) for piece in pieces]
        if isinstance(self.scorer, PassageScorer):
            scores = self._score_passages([[piece.text[a:b] for a, b in found]
                                           for piece, found in zip(pieces, spans, strict=True)])
        else:
            scores = self._score([piece.text[a:b] for piece, found in zip(pieces, spans, strict=True)
                                  for a, b in found])
        out: list[tuple[TextFlag, ...]] = []
        at = 0
        for piece, found in zip(pieces, spans, strict=True):
            kept = tuple((a, b, score) for (a, b), score in zip(found, scores[at:at + len(found)], strict=True)
                         if score >= self.threshold)
            at += len(found)
            with self._lock:
                self._found[_key(piece.text)] = kept
            out.append(_with(piece, kept))
        return out

    def _from_stored(self, piece: Piece) -> Piece:
        """``piece`` with what was found in it remembered when it carries the plugged-in detector's scores."""
        scored = piece.scored
        if scored is None or scored.detector != getattr(self.scorer, "model_id", None):
            return piece
        found = tuple((a, b, score) for a, b, score in scored.sentences if score >= self.threshold)
        with self._lock:
            self._found[_key(piece.text)] = found
        return piece

    def _known(self, pieces: Sequence[Piece]) -> list[Found] | None:
        """What was found in each piece's text when it was returned before; None if one is new."""
        keys = [_key(piece.text) for piece in pieces]
        with self._lock:
            known = [self._found.get(key) for key in keys]
        return None if any(found is None for found in known) else [found for found in known if found is not None]

    def _score_passages(self, passages: list[list[str]]) -> list[float]:
        """The scores of every passage's sentences, in order, flat (one call to the scorer)."""
        assert isinstance(self.scorer, PassageScorer)
        scored = self.scorer.score_passages(passages)
        values = [float(v) for sentences, scores in zip(passages, scored, strict=True)
                  for v in _same_length(sentences, scores)]
        metrics.flags_found(INSTRUCTIONS, sum(value >= self.threshold for value in values))
        return values

    def _score(self, sentences: list[str]) -> list[float]:
        with self._lock:
            known = {s: self._scores[s] for s in set(sentences) if s in self._scores}
        new = [s for s in dict.fromkeys(sentences) if s not in known]
        if new:
            assert self.scorer is not None
            # a plain sentence scorer (a PassageScorer went to _score_passages)
            score = (self.scorer.score if isinstance(self.scorer, InstructionScorer)
                     else cast(Callable[[Sequence[str]], Sequence[float]], self.scorer))
            values = [float(v) for v in _same_length(new, score(new))]
            with self._lock:
                for sentence, value in zip(new, values, strict=True):
                    self._scores[sentence] = value
            metrics.flags_found(INSTRUCTIONS, sum(value >= self.threshold for value in values))
            known.update(zip(new, values, strict=True))
        return [known[s] for s in sentences]


def _same_length(sentences: Sequence[str], scores: Sequence[float]) -> Sequence[float]:
    if len(scores) != len(sentences):
        raise ValueError(f"the instruction scorer gave {len(scores)} scores for {len(sentences)} sentences")
    return scores


def _with(piece: Piece, found: Found) -> tuple[TextFlag, ...]:
    """The piece's own flags and one ``instructions_to_agent`` flag per sentence found, in order."""
    if not found:
        return piece.flags
    added = [TextFlag(kind=INSTRUCTIONS, reason="a sentence addressed to the AI agent",
                      start=piece.start + a, end=piece.start + b, score=score) for a, b, score in found]
    return tuple(sorted((*piece.flags, *added), key=lambda f: (f.start, f.end)))


def _key(text: str) -> bytes:
    """A returned text's key: a digest, not the text (a whole document's content is returned too)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
