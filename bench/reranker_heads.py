"""The cross-encoder on FinanceBench's heads, read offline: which use of it orders them best?

    .venv/bin/python bench/reranker_heads.py                        # the bundled reranker
    .venv/bin/python bench/reranker_heads.py --model some/folder    # another ONNX reranker folder

Reads the heads ``bench/ranker_heads.py`` caches (run it first: it builds them), puts each in the
server's order today (the fusion, then the learned ranker), scores the first ``--head`` candidates'
texts with the cross-encoder once (cached per model and head), then compares ways of using those
scores: the cross-encoder's order alone, and rank fusions of its place with today's place (weights
``--weights``, ``ranking.RRF_K``), for several head sizes. hit@5 and MRR of the first relevant
candidate per set (no duplicate removal, no neighbours): a screen, to be confirmed by
``bench/financebench.py``. Validation only: nothing here trains.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import ranker_heads as rh  # noqa: E402


def today(row: dict[str, Any], ranker: Any) -> np.ndarray:
    """The head's positions in the server's order today (learned ranker over its own head)."""
    n = min(ranker.head, len(row["signals"].fused))
    order = ranker.order(rh._head(row["signals"], n))
    return np.concatenate([np.asarray(order, dtype=np.int64), np.arange(n, len(row["y"]))])


def fused_order(current: np.ndarray, scores: np.ndarray, n: int, weight: float | None) -> np.ndarray:
    """``current`` with its first ``n`` re-ordered: by ``scores`` alone (``weight`` None) or by
    1/(K + today's place) + weight/(K + the cross-encoder's place)."""
    from mcp_server.retrieval.ranking import RRF_K

    top, top_scores = current[:n], scores[:n]
    if weight is None:
        order = np.argsort(-top_scores, kind="stable")
    else:
        places = np.empty(len(top), dtype=np.float64)
        places[np.argsort(-top_scores, kind="stable")] = np.arange(1, len(top) + 1)
        mine = np.arange(1, len(top) + 1, dtype=np.float64)
        order = np.argsort(-(1 / (RRF_K + mine) + weight / (RRF_K + places)), kind="stable")
    return np.concatenate([top[order], current[n:]])


def metrics(ranks: list[int | None]) -> tuple[float, float]:
    return (sum(r is not None and r <= 5 for r in ranks) / len(ranks),
            sum(1 / r for r in ranks if r is not None) / len(ranks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None, help="an ONNX reranker folder (default: the bundled)")
    parser.add_argument("--heads", type=Path, default=None,
                        help="a saved heads file (default: this checkout's, bench/ranker_heads.py's cache)")
    parser.add_argument("--head", type=int, nargs="*", default=[5, 10, 15, 20])
    parser.add_argument("--weights", type=float, nargs="*", default=[0.5, 1.0, 2.0, 4.0])
    args = parser.parse_args()
    started = time.perf_counter()
    from mcp_server.rerankers.onnx_cross_encoder import MODEL_DIR, OnnxCrossEncoder
    from mcp_server.retrieval.learned import bundled

    folder = args.model or MODEL_DIR
    data = pickle.loads(args.heads.read_bytes()) if args.heads else rh.heads(  # noqa: S301 - our own cache
        lambda m: print(m, file=sys.stderr), 0)
    ranker = bundled()
    key = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()[:12]
    cache = rh.CACHE / f"ce-{key}-{max(args.head)}.pkl"
    scored: dict[tuple[str, str], np.ndarray] = pickle.loads(cache.read_bytes()) if cache.exists() else {}  # noqa: S301
    model = OnnxCrossEncoder.load(folder, threads=1)
    width = max(args.head)
    for name, rows in data.items():
        for row in rows:
            if (name, row["id"]) not in scored:
                current = today(row, ranker)[:width]
                full = np.full(len(row["y"]), -np.inf)
                full[current] = model.score(row["query"], [row["texts"][i] for i in current])
                scored[(name, row["id"])] = full
        cache.write_bytes(pickle.dumps(scored))
    print(f"scored in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    variants: list[tuple[str, Any]] = [("today", None)]
    variants += [(f"ce alone, top {n}", (n, None)) for n in args.head]
    variants += [(f"rrf w={w:g}, top {n}", (n, w)) for n in args.head for w in args.weights]
    print(f"{'variant':24s} " + " ".join(f"{name:>18s}" for name in data))
    for label, spec in variants:
        cells = []
        for name, rows in data.items():
            ranks = []
            for row in rows:
                order = today(row, ranker)
                if spec is not None:
                    order = fused_order(order, scored[(name, row["id"])][order], *spec)
                hits = np.flatnonzero(row["y"][order])
                ranks.append(int(hits[0]) + 1 if len(hits) else None)
            h, m = metrics(ranks)
            cells.append(f"{h:.3f}/{m:.3f} ({len(rows)})")
        print(f"{label:24s} " + " ".join(f"{c:>18s}" for c in cells))


if __name__ == "__main__":
    main()
