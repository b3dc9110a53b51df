"""What the instruction detector found in a document's chunks, held with its index.

The ``instructions_to_agent`` flags of a returned passage need the detector's score of each of its
sentences, which needs each sentence's vector (``detectors/instructions.py``). A document indexed in
this process had its sentences embedded by the build, so the vectors are a cache hit; an index read
from disk has none in the embedder's cache, and scoring a shelf's returned passages cost ~0.4 s of
model work per question. So the complete build scores every chunk once (``indexes/instructions.py``),
the scores are stored beside the index and read with it, and a returned chunk is flagged from them.

``InstructionScores`` holds, for chunk i, its sentences' (start, end) in the chunk's document text
(``Chunk.document_text``) and their scores, as flat arrays; ``detector`` names the detector (its
``model_id``, which carries the classifier's version) that scored them: a different detector's
scores are never used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ChunkScores", "InstructionScores"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkScores:
    """One chunk's sentences as the detector scored them: (start, end, score) in its document text."""

    detector: str
    sentences: tuple[tuple[int, int, float], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class InstructionScores:
    """Chunk i's sentences are ``starts/ends/scores[offsets[i]:offsets[i + 1]]``."""

    detector: str
    offsets: np.ndarray  # int64, len(chunks) + 1, non-decreasing from 0
    starts: np.ndarray  # int32
    ends: np.ndarray  # int32
    scores: np.ndarray  # float64: the scores as the detector gave them (a threshold compares them)

    @classmethod
    def of(cls, detector: str, chunks: Sequence[Sequence[tuple[int, int, float]]]) -> InstructionScores:
        flat = [sentence for chunk in chunks for sentence in chunk]
        offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(chunk) for chunk in chunks], out=offsets[1:])
        return cls(detector=detector, offsets=offsets,
                   starts=np.array([s[0] for s in flat], dtype=np.int32),
                   ends=np.array([s[1] for s in flat], dtype=np.int32),
                   scores=np.array([s[2] for s in flat], dtype=np.float64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def check(self, chunk_count: int) -> InstructionScores:
        """Itself; ValueError unless its arrays are well formed for ``chunk_count`` chunks."""
        offsets = self.offsets
        if len(offsets) != chunk_count + 1 or (len(offsets) and int(offsets[0]) != 0):
            raise ValueError("chunk count mismatch")
        if np.any(np.diff(offsets) < 0) or int(offsets[-1]) != len(self.starts):
            raise ValueError("offsets out of order")
        if not len(self.starts) == len(self.ends) == len(self.scores):
            raise ValueError("array lengths differ")
        if np.any(self.starts < 0) or np.any(self.ends < self.starts):
            raise ValueError("span out of order")
        return self

    def chunk(self, pos: int) -> ChunkScores:
        a, b = int(self.offsets[pos]), int(self.offsets[pos + 1])
        return ChunkScores(detector=self.detector, sentences=tuple(zip(
            self.starts[a:b].tolist(), self.ends[a:b].tolist(), self.scores[a:b].tolist(), strict=True)))
