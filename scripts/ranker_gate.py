"""A question gate for the learned ranker, learned from TAT-QA (issue #46, ninth round): tried, see below.

``bench/table_gate.py`` learned P(the answer needs a table) from a question's MiniLM vector (a
logistic regression; TAT-QA held out: accuracy 0.842, AUC 0.873). Here that probability becomes
features of the learned ranker beside (or instead of) its digit switch ``numeric_table``:

* ``table_need``: the gate's P for the question (the same for every candidate of its head);
* ``table_need_table``: P when the candidate is a table chunk, else 0.

``scripts/train_ranker.py --gate beside|replace`` trains with them. For every TAT-QA question the
gate's P is **out of fold**: the contexts are cut into FOLDS groups (by report, so a report's other
questions never teach the gate about it) and each question's P comes from a gate fitted on the other
groups, so the ranker never sees a gate that memorised its label. The gate to serve with is then
fitted on all of TAT-QA and written beside the model (``<model>.gate.npz``: 384 weights, an
intercept). ``bench/ranker_heads.py --model`` reads such a model, its gate applied to each question's
vector (the dense search's own), and so do ``bench/financebench.py --ranker`` and ``bench/squad.py
--ranker`` (a ``hybrid+candidate`` row beside today's). Validation sets are only read there, never here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

GATE_FEATURES = ("table_need", "table_need_table")
FOLDS = 5
C = 3.0  # table_gate.py's choice (held out: 0.842 / AUC 0.873)


def labels(contexts: Sequence[dict[str, Any]]) -> dict[str, tuple[str, int, int]]:
    """Per question uid: (its text, 1 when its answer needs the table, its context's number)."""
    return {q["uid"]: (q["question"], int(q["answer_from"] != "text"), i)
            for i, ctx in enumerate(contexts) for q in ctx["questions"]}


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-9)


class Gate:
    """P(table) = sigmoid(w . unit(vector) + b)."""

    def __init__(self, weights: np.ndarray, intercept: float) -> None:
        self.weights, self.intercept = np.asarray(weights, dtype=np.float64), float(intercept)

    def p(self, vectors: np.ndarray) -> np.ndarray:
        z = _unit(vectors) @ self.weights + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def save(self, path: Path) -> None:
        np.savez(path, weights=self.weights.astype(np.float32), intercept=np.float32(self.intercept))

    @classmethod
    def load(cls, path: Path) -> Gate:
        with np.load(path) as body:
            return cls(np.asarray(body["weights"], dtype=np.float64), float(body["intercept"]))


def fit(vectors: np.ndarray, y: np.ndarray, c: float = C) -> Gate:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=2000).fit(_unit(vectors), y)
    return Gate(model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def out_of_fold(vectors: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int = FOLDS) -> np.ndarray:
    """Each question's P from a gate fitted on the other folds' contexts (contexts dealt round-robin)."""
    fold = groups % folds
    p = np.empty(len(y), dtype=np.float64)
    for k in range(folds):
        held = fold == k
        p[held] = fit(vectors[~held], y[~held]).p(vectors[held])
    return p


def columns(p: float, table: np.ndarray) -> np.ndarray:
    """The GATE_FEATURES of a head's candidates for a question of gate value ``p``."""
    table = np.asarray(table, dtype=np.float64)
    return np.stack([np.full(len(table), p), p * table], axis=1)


def gate_values(contexts: Sequence[dict[str, Any]], embed: Callable[[list[str]], np.ndarray],
                log: Callable[[str], None]) -> tuple[dict[str, float], Gate]:
    """(each TAT-QA question's out-of-fold P by uid, the gate fitted on all of them)."""
    from sklearn.metrics import roc_auc_score

    known = labels(contexts)
    uids = list(known)
    vectors = np.asarray(embed([known[u][0] for u in uids]), dtype=np.float64)
    y = np.array([known[u][1] for u in uids])
    groups = np.array([known[u][2] for u in uids])
    p = out_of_fold(vectors, y, groups)
    log(f"gate out of fold ({FOLDS} folds by context): accuracy {float(((p >= 0.5) == y).mean()):.3f}, "
        f"AUC {roc_auc_score(y, p):.3f}, {len(y)} questions, {y.mean():.3f} table")
    return dict(zip(uids, p.tolist(), strict=True)), fit(vectors, y)


class GatedRanker:
    """A ranker file with GATE_FEATURES after ``learned.FEATURES`` and its gate (``<file>.gate.npz``)."""

    def __init__(self, path: Path) -> None:
        from mcp_server.retrieval.learned import FEATURES, LearnedRanker

        body = json.loads(path.read_text(encoding="utf-8"))
        self.model = LearnedRanker.from_dict(body, expected=FEATURES + GATE_FEATURES)
        self.head = self.model.head
        self.gate = Gate.load(gate_path(path))
        self.vector: np.ndarray | None = None  # the question's, set by a bench before each search

    def order(self, signals: Any, vector: np.ndarray | None = None) -> list[int]:
        """The head's order (``learned.LearnedRanker.order``), the gate reading ``vector`` (or ``self.vector``)."""
        from mcp_server.retrieval.learned import features

        vector = self.vector if vector is None else vector
        if vector is None:
            raise ValueError("a gated ranker needs the question's vector")
        p = float(self.gate.p(np.asarray(vector)[None, :])[0])
        matrix = np.hstack([features(signals), columns(p, signals.table)])
        return self.model.ranked(self.model.scores(matrix))


def gate_path(model: Path) -> Path:
    return model.with_name(model.stem + ".gate.npz")


def is_gated(path: Path) -> bool:
    return "table_need" in json.loads(path.read_text(encoding="utf-8")).get("features", [])


def load(path: Path) -> Any:
    """A ranker file, gated or not."""
    from mcp_server.retrieval.learned import LearnedRanker

    return GatedRanker(path) if is_gated(path) else LearnedRanker.load(path)
