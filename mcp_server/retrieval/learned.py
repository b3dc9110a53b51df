"""The learned ranking: a model, trained here, that re-orders the head of the fusion.

The fusion (``ranking.fuse``) adds reciprocal ranks with hand-set weights. The learned ranker
scores each of the head's candidates from the signals the index has already computed for it
(its fused score and place, its dense cosine and BM25 score and their places, how much of the
query's vocabulary it holds, weighted by rarity, whether it is a table or a template passage,
its length, its share of digits, how many numbers it holds and how many of the query's, its place
in the document) and sorts the head by that score, or by that score's place and the fusion's
together (``with_fusion``), stable, the tail keeping its place. Nothing is looked up by words: the
model sees numbers only. The model is linear over standardised features, or regression trees
(LambdaMART, ``Trees``) over the raw ones, or both added.

Its weights are ``ranker.json`` beside this module, written by ``scripts/train_ranker.py``
(``make train-ranker``) from TAT-QA (MIT): financial-report tables and paragraphs with their
questions' gold evidence, pooled into long pseudo-documents so that every question's candidates
include other reports' tables and prose. docs/architecture.md ("The learned ranker") gives its figures.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.retrieval.ranking import RRF_K

__all__ = [
    "FEATURES", "MODEL_PATH", "CandidateSignals", "ChunkFacts", "LearnedRanker", "Trees", "bundled", "features",
    "held_numbers", "number_signals",
]

MODEL_PATH = Path(__file__).with_name("ranker.json")

FEATURES = (
    "fused", "fused_place", "dense", "dense_gap", "bm25_share", "dense_place", "bm25_place",
    "template", "table", "length", "coverage", "idf_coverage", "digits", "position", "numeric_digits",
    "numeric_table", "numbers", "query_numbers", "dense_z", "bm25_z",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class CandidateSignals:
    """What the index knows of the head's candidates, best fused first (arrays of one length)."""

    fused: np.ndarray  # the fusion's score (reciprocal ranks, RRF_K-scaled)
    dense: np.ndarray  # best sentence cosine (-1 when the chunk has no vectors)
    bm25: np.ndarray  # BM25 score (0 when no query term)
    presence: np.ndarray  # (query terms, candidates): whether the candidate holds the term
    idf: np.ndarray  # per query term, its inverse document frequency in the document
    template: np.ndarray  # bool
    table: np.ndarray  # bool
    chars: np.ndarray  # characters
    digits: np.ndarray  # share of the characters that are digits
    position: np.ndarray  # chunk position / chunks in the document
    numeric_query: bool  # the query holds a digit
    numbers: np.ndarray  # how many numbers (digit runs) the candidate holds
    query_numbers: np.ndarray  # share of the query's numbers the candidate holds (0 when it has none)


def _places(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """log(1 + place) of each score among the present ones (best = 1); absent ones after them all."""
    order = np.argsort(-np.where(present, scores, -np.inf), kind="stable")
    places = np.empty(len(scores), dtype=np.float64)
    places[order] = np.arange(1, len(scores) + 1)
    places[~present] = len(scores) + 1
    return np.log1p(places)


def _z(values: np.ndarray) -> np.ndarray:
    """``values`` less the head's mean, over the head's spread (zeros when all are equal)."""
    spread = float(values.std()) if len(values) else 0.0
    return (values - values.mean()) / spread if spread > 1e-9 else np.zeros(len(values))


def features(s: CandidateSignals) -> np.ndarray:
    """The (candidates, FEATURES) matrix of the head."""
    n = len(s.fused)
    has_dense = s.dense > -1
    dense = np.where(has_dense, s.dense, 0.0)
    top_bm25 = float(s.bm25.max()) if n and s.bm25.max() > 0 else 1.0
    if s.presence.size:
        coverage = s.presence.mean(axis=0)
        weight = float(s.idf.sum())
        idf_coverage = (s.idf @ s.presence) / weight if weight > 0 else coverage
    else:
        coverage = idf_coverage = np.zeros(n)
    columns = [
        s.fused, np.log1p(np.arange(1, n + 1)), dense, dense - (dense.max() if n else 0.0), s.bm25 / top_bm25,
        _places(s.dense, has_dense), _places(s.bm25, s.bm25 > 0), s.template.astype(np.float64),
        s.table.astype(np.float64), np.log1p(s.chars), coverage, idf_coverage, s.digits, s.position,
        s.digits * float(s.numeric_query), s.table * float(s.numeric_query), np.log1p(s.numbers),
        s.query_numbers, _z(dense), _z(s.bm25),
    ]
    return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=1) if n else np.zeros((0, len(FEATURES)))


@dataclass(frozen=True, kw_only=True, slots=True)
class Trees:
    """Regression trees, summed (a LightGBM ranker's, flattened): node ``i`` splits on ``feature[i]``
    (left when the value is <= ``threshold[i]``) or, when ``feature[i]`` < 0, is a leaf of ``value[i]``."""

    feature: np.ndarray  # int
    threshold: np.ndarray
    left: np.ndarray  # int: node ids
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray  # int: each tree's first node

    @classmethod
    def from_dict(cls, body: dict[str, Sequence[float]]) -> Trees:
        ints = {k: np.asarray(body[k], dtype=np.int64) for k in ("feature", "left", "right", "roots")}
        return cls(threshold=np.asarray(body["threshold"], dtype=np.float64),
                   value=np.asarray(body["value"], dtype=np.float64), **ints)

    def scores(self, matrix: np.ndarray) -> np.ndarray:
        """Per row of ``matrix``, the sum of every tree's leaf."""
        nodes = np.repeat(self.roots[:, None], len(matrix), axis=1)  # (trees, rows)
        rows = np.arange(len(matrix))[None, :]
        inner = self.feature[nodes] >= 0
        while inner.any():
            x = matrix[rows, np.maximum(self.feature[nodes], 0)]
            step = np.where(x <= self.threshold[nodes], self.left[nodes], self.right[nodes])
            nodes = np.where(inner, step, nodes)
            inner = self.feature[nodes] >= 0
        return self.value[nodes].sum(axis=0)


@dataclass(frozen=True, kw_only=True, slots=True)
class LearnedRanker:
    """A linear score over standardised FEATURES plus, when given, trees over the raw FEATURES;
    ``head`` candidates are re-ordered by it."""

    model_id: str
    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    head: int
    trees: Trees | None = None
    with_fusion: bool = False  # order by the model's and the fusion's places together (``order``)

    @classmethod
    def from_dict(cls, body: dict[str, object], *, expected: tuple[str, ...] = FEATURES) -> LearnedRanker:
        """A model from its JSON body, whose features must be ``expected`` (this code's FEATURES)."""
        names = tuple(str(n) for n in body["features"])  # type: ignore[attr-defined]
        if names != expected:
            raise ValueError(f"the model's features {names} are not this code's {expected}")
        arrays = {k: np.asarray(body[k], dtype=np.float64) for k in ("mean", "scale", "weights")}
        trees = Trees.from_dict(body["trees"]) if body.get("trees") else None  # type: ignore[arg-type]
        return cls(model_id=str(body["model_id"]), names=names, head=int(body["head"]),  # type: ignore[call-overload]
                   trees=trees, with_fusion=bool(body.get("with_fusion", False)), **arrays)

    @classmethod
    def fake(cls, head: int = 20, **weights: float) -> LearnedRanker:
        """A model scoring by the named FEATURES only, unstandardised (``fake(table=1.0)``: tables first)."""
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"no such features: {sorted(unknown)}")
        return cls(model_id="fake-ranker", names=FEATURES, head=head, mean=np.zeros(len(FEATURES)),
                   scale=np.ones(len(FEATURES)), weights=np.array([weights.get(n, 0.0) for n in FEATURES]))

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> LearnedRanker:
        return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))

    def scores(self, matrix: np.ndarray) -> np.ndarray:
        linear = ((matrix - self.mean) / self.scale) @ self.weights
        return linear + self.trees.scores(matrix) if self.trees is not None else linear

    def order(self, signals: CandidateSignals) -> list[int]:
        """Positions of the head's candidates, best first by the model (ties: fused order); with
        ``with_fusion``, by the reciprocal ranks of the model's order and the fusion's, added with
        equal weights as the fusion adds its own rankings (``ranking.RRF_K``)."""
        return self.ranked(self.scores(features(signals)))

    def ranked(self, scores: np.ndarray) -> list[int]:
        """``order`` from the model's scores of the head, best fused first."""
        order = np.argsort(-scores, kind="stable")
        if self.with_fusion:
            places = np.empty(len(order), dtype=np.float64)
            places[order] = np.arange(1, len(order) + 1)
            fused = np.arange(1, len(order) + 1, dtype=np.float64)
            order = np.argsort(-(1 / (RRF_K + fused) + 1 / (RRF_K + places)), kind="stable")
        return [int(i) for i in order]


@functools.cache
def bundled() -> LearnedRanker:
    """The model shipped with the package (``ranker.json``), loaded once."""
    return LearnedRanker.load()


_DIGIT = re.compile(r"\d")


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def digit_share(text: str) -> float:
    return len(_DIGIT.findall(text)) / max(len(text), 1)


def numbers_of(text: str) -> set[str]:
    """The numbers written in ``text``, without their separators ("1,234.5" -> "12345")."""
    return {n.replace(",", "").replace(".", "") for n in _NUMBER.findall(text)}


def number_signals(query: str, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per text, how many numbers it holds and the share of the query's numbers among them."""
    return held_numbers(query, [numbers_of(t) for t in texts])


def held_numbers(query: str, held: Sequence[Set[str]]) -> tuple[np.ndarray, np.ndarray]:
    """``number_signals`` of texts holding the numbers ``held``."""
    asked = numbers_of(query)
    counts = np.array([len(h) for h in held], dtype=np.float64)
    shares = np.array([len(asked & h) / len(asked) if asked else 0.0 for h in held], dtype=np.float64)
    return counts, shares


class ChunkFacts:
    """Per chunk, the numbers it writes and its share of digits, read once, when a head first holds it:
    every question over a shelf reads the heads of ~10 documents again (the regexes were a sixth of a
    warm search_documents). Copies of an index share it; two threads may read a chunk twice, alike."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks
        self._known: dict[int, tuple[frozenset[str], float]] = {}

    def of(self, positions: Sequence[int]) -> tuple[list[frozenset[str]], np.ndarray]:
        """(the numbers of each chunk at ``positions``, their digit shares)."""
        facts = [self._known.get(pos) or self._read(pos) for pos in positions]
        return [numbers for numbers, _ in facts], np.array([share for _, share in facts], dtype=np.float64)

    def _read(self, pos: int) -> tuple[frozenset[str], float]:
        text = self._chunks[pos].text
        known = self._known[pos] = (frozenset(numbers_of(text)), digit_share(text))
        return known


def idf(df: Sequence[int], size: int) -> np.ndarray:
    """BM25's idf of terms found in ``df`` of ``size`` chunks."""
    return np.array([math.log(1 + (size - d + 0.5) / (d + 0.5)) for d in df], dtype=np.float64)
