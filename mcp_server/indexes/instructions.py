"""The instruction detector's scores of a stored index's chunks, beside it.

Flagging the passages a search returns (``instructions_to_agent``, ``pipeline/flags.py``) scores
their sentences, which embeds them: free for an index built in this process (its sentences' vectors
are in the embedder's cache), ~0.4 s of model work per shelf question for indexes read from disk.
The complete build scores every chunk once (``score_chunks``, while its vectors are cached), and
``instructions.<digest>.npz`` (NumPy arrays, no pickle: each chunk's sentence spans and scores,
``detectors/scores.py``) holds them, named by ``instructions.json`` with its checksum, the
``chunks.json`` checksum they were scored on and the detector's ``model_id`` (which carries the
classifier's version): the flagger uses stored scores only when they are its detector's, so a new
model scores returned passages again, as before, until the index is built anew.

Like ``lexical.py`` (both through ``sidecars.py``): outside the manifest, written after it, best
effort, never trusted when damaged or another index's, and removed with the previous version's
files (``IndexStore._commit``); a folder without them (written before them, or by a server without a
detector) loads as before.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.detectors.instructions import InstructionDetector
from mcp_server.detectors.scores import InstructionScores
from mcp_server.indexes.sidecars import read_sidecar, store_sidecar
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.text.sentences import sentence_spans

__all__ = ["POINTER_FILE", "read_instructions", "score_chunks", "store_instructions", "store_scores"]

POINTER_FILE = "instructions.json"  # sidecars.py: "<kind>.json"
MANIFEST_FILE = "manifest.json"  # store.py's: the stored version's names and checksums
FORMAT = 1
BATCH_CHUNKS = 256  # chunks scored per detector call: one embedding call's vectors stay a few MB


def score_chunks(detector: InstructionDetector, chunks: Sequence[Chunk]) -> InstructionScores:
    """Every chunk's sentences scored as the flagger scores a returned chunk (its document text's
    ``sentence_spans``, read together). Blocking: a model call."""
    texts = [chunk.document_text() for chunk in chunks]
    spans = [sentence_spans(text) for text in texts]
    scored: list[list[tuple[int, int, float]]] = []
    for at in range(0, len(chunks), BATCH_CHUNKS):
        batch = range(at, min(at + BATCH_CHUNKS, len(chunks)))
        scores = detector.score_passages([[texts[i][a:b] for a, b in spans[i]] for i in batch])
        scored.extend([(a, b, float(s)) for (a, b), s in zip(spans[i], found, strict=True)]
                      for i, found in zip(batch, scores, strict=True))
    return InstructionScores.of(detector.model_id, scored)


def encode(scores: InstructionScores) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, offsets=scores.offsets.astype(np.int64), starts=scores.starts.astype(np.int32),
             ends=scores.ends.astype(np.int32), scores=scores.scores.astype(np.float64))
    return buffer.getvalue()


def decode(data: bytes, detector: str, chunk_count: int) -> InstructionScores:
    """Raises ValueError (or what NumPy raises on a damaged file) unless ``data`` holds scores of
    ``chunk_count`` chunks."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        scores = InstructionScores(detector=detector, offsets=arrays["offsets"].astype(np.int64),
                                   starts=arrays["starts"].astype(np.int32), ends=arrays["ends"].astype(np.int32),
                                   scores=arrays["scores"].astype(np.float64))
    return scores.check(chunk_count)


def read_instructions(folder: Path, manifest: dict[str, Any]) -> InstructionScores | None:
    """The scores stored beside the index ``manifest`` describes, if they are that index's."""
    def scores(data: bytes, pointer: dict[str, Any], chunk_count: int) -> InstructionScores:
        detector = pointer.get("detector")
        if not isinstance(detector, str):
            raise ValueError("unexpected detector")
        return decode(data, detector, chunk_count)
    return read_sidecar(folder, manifest, "instructions", {"format": FORMAT}, scores)


def store_instructions(folder: Path, manifest: dict[str, Any], index: DocumentIndex) -> dict[str, Any]:
    """Write ``index``'s scores beside it, when it has them (best effort: a failure leaves the index
    as it was); returns ``manifest`` unchanged."""
    scores = index.instructions
    if scores is not None:
        store_sidecar(folder, manifest, "instructions", {"format": FORMAT, "detector": scores.detector},
                      lambda: encode(scores.check(len(index))))
    return manifest


def store_scores(folder: Path, index: DocumentIndex) -> None:
    """``index``'s scores beside the version stored in ``folder`` (best effort), when that version
    holds its chunks: the scores of an index stored without them (``IndexBuilder.rescore``)."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_bytes())
    except (OSError, ValueError):
        return
    if isinstance(manifest, dict) and manifest.get("chunk_count") == len(index):
        store_instructions(folder, manifest, index)
