"""The learned ranker's heads on FinanceBench, read offline: does a model order them better than the fusion?

    .venv/bin/python bench/ranker_heads.py                          # the bundled ranker.json
    .venv/bin/python bench/ranker_heads.py --model a.json b.json    # several candidate models at once

A model trained with ``scripts/train_ranker.py --gate`` (its gate in ``<model>.gate.npz``) reads each
question's vector (the dense search's, kept in the heads) through ``scripts/ranker_gate.py``.

For every question of financebench-dev (plain and named phrasings) and financebench-dev2, the
document's complete index is built in process (as ``bench/financebench.py`` builds it, searched
under its file name) and the fusion's head is read as the learned ranker reads it
(``retrieval.index.signals``); a candidate is relevant when its pages hold an evidence page. The
heads are cached (bench/results/cache/ranker-heads.pkl, keyed by this checkout's retrieval code).
Each model then orders each head and the first relevant candidate's place gives hit@5 and MRR,
beside the fusion's own order: a quick screen of candidate models (no duplicate removal, no
neighbours), to be confirmed by ``bench/financebench.py``. Validation only: nothing here trains.
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

from bench import financebench as fb  # noqa: E402
from bench.data import qa_set  # noqa: E402

CACHE = fb.CACHE / "ranker-heads"
SETS = (("dev", False), ("dev", True), ("dev2", False))


def code_key() -> str:
    digest = hashlib.sha256()
    for name in ("index.py", "lexical.py", "ranking.py", "focus.py", "naming.py"):  # not the model's code
        path = ROOT / "mcp_server" / "retrieval" / name
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def heads(log: Any, max_bytes: int) -> dict[str, list[dict[str, Any]]]:
    """Per set name, per question: its head's signals and relevance labels; the filings of at most
    ``max_bytes``, smallest first, both sets' in turn (saved after each, so a cut run keeps them)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    saved = CACHE / f"{code_key()}.pkl"
    out: dict[str, list[dict[str, Any]]] = pickle.loads(saved.read_bytes()) if saved.exists() else {}  # noqa: S301
    done = {(name, row["doc"]) for name, rows in out.items() for row in rows}
    todo = []
    for qa, named in SETS:
        folder = qa_set(fb.SETS[qa])
        fb.FINANCEBENCH = folder
        questions = [q for q in fb.load_questions("all", named=named) if not named or q["id"].endswith(fb.NAMED)]
        name = f"{qa}{' named' if named else ''}"
        for doc, group in fb.by_document(questions).items():
            size = (folder / group[0]["doc"]).stat().st_size
            if size <= max_bytes and (name, doc) not in done:
                todo.append((size, name, folder, doc, group))
    if not todo:
        return out
    from mcp_server.retrieval.index import fused_head, signals

    pipeline = fb.ServerPipeline(use_cache=True)
    for _, name, folder, doc, group in sorted(todo, key=lambda item: item[0]):
        document, key, _, _ = pipeline.process(folder / group[0]["doc"])
        index, stats = pipeline.index(document, key)
        index = index.named(group[0]["doc"])
        embed = pipeline.embedder(pipeline.models.embedder_by_id(index.model_id)).embed_query
        rows = out.setdefault(name, [])
        for q in group:
            query = index.asked(q["question"])
            vector = index.query_vector(q["question"], embed)
            head = fused_head(index, vector, query, fb.K)[:HEAD_MAX]
            gold = {e["page"] for e in q["evidence"]}
            labels = np.array([bool(gold & set(index.chunks[c.pos].location.pages)) for c in head])
            rows.append({"id": q["id"], "doc": doc, "y": labels, "signals": signals(index, query, head),
                         "query": query, "vector": vector, "texts": [index.chunks[c.pos].text for c in head]})
        saved.write_bytes(pickle.dumps(out))
        log(f"{name} {doc}: {len(group)} questions, {stats['chunks']} chunks")
    return out


HEAD_MAX = 40  # the signals kept per question; a model orders its own ``head`` of them


def evaluate(rows: list[dict[str, Any]], model: Any | None) -> dict[str, float]:
    """hit@5 and MRR of the first relevant candidate, in the fusion's order or ``model``'s."""
    ranks = []
    for row in rows:
        y = row["y"]
        if model is not None:
            n = min(model.head, len(row["signals"].fused))
            cut = _head(row["signals"], n)
            order = model.order(cut, row["vector"]) if hasattr(model, "gate") else model.order(cut)
            y = np.concatenate([y[:n][order], y[n:]])
        hits = np.flatnonzero(y)
        ranks.append(int(hits[0]) + 1 if len(hits) else None)
    return {"hit@5": sum(r is not None and r <= 5 for r in ranks) / len(ranks),
            "mrr": sum(1 / r for r in ranks if r is not None) / len(ranks),
            "hit@20": sum(r is not None and r <= 20 for r in ranks) / len(ranks)}


def _head(signals: Any, n: int) -> Any:
    import dataclasses

    cut = {f.name: getattr(signals, f.name) for f in dataclasses.fields(signals)}
    for name, value in cut.items():
        if isinstance(value, np.ndarray) and value.ndim == 1 and len(value) == len(signals.fused):
            cut[name] = value[:n]
        elif isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == len(signals.fused):
            cut[name] = value[:, :n]
    return type(signals)(**cut)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, nargs="*", default=[], help="ranker files (default: the bundled one)")
    parser.add_argument("--max-mb", type=float, default=100.0, help="only the filings of at most this size")
    parser.add_argument("--no-build", action="store_true", help="only the heads already cached")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    from mcp_server.retrieval.learned import LearnedRanker
    from scripts.ranker_gate import GatedRanker, is_gated

    data = heads(log, 0 if args.no_build else int(args.max_mb * 1e6))
    models: list[tuple[str, Any]] = [("fusion", None)]
    models += [(str(p), GatedRanker(p) if is_gated(p) else LearnedRanker.load(p)) for p in args.model] or [
        ("ranker.json", LearnedRanker.load())]
    print(f"{'model':40s} " + " ".join(f"{name:>22s}" for name in data))
    for label, model in models:
        cells = []
        for rows in data.values():
            m = evaluate(rows, model)
            cells.append(f"{m['hit@5']:.3f}/{m['mrr']:.3f} ({len(rows)})")
        print(f"{label[-40:]:40s} " + " ".join(f"{c:>22s}" for c in cells))


if __name__ == "__main__":
    main()
