"""General ordering levers on FinanceBench's heads, read offline: does a rule reorder them better than today?

    .venv/bin/python bench/head_levers.py              # build (or read) the heads, screen every lever
    .venv/bin/python bench/head_levers.py --misses     # also each question not at top 5: where its evidence sits

For every question of financebench-dev (plain and named phrasings) and financebench-dev2, the
document's complete index is built in process (as ``bench/financebench.py`` builds it, searched
under its file name) and today's head is read as ``DocumentIndex.search`` orders it (the fusion,
the learned ranker on its first 20, duplicates dropped), 40 deep, with what a lever may read of
each candidate: its text, content type, pages, place in the document and its vector (the mean of
its sentences' vectors, normalised) beside the question's. A candidate is relevant when its pages
hold an evidence page. The heads are cached (bench/results/cache/head-levers-<code>.pkl, keyed by
this checkout's retrieval code). Each lever then re-orders each head; the first relevant
candidate's place gives hit@5, hit@20 and MRR, and the median characters of the first five gives
the text per result; MRR counts the first five places, as ``bench/financebench.py``'s does (its
top 5's ranks). Validation only: nothing here trains, and no lever reads a word list.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import pickle
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import financebench as fb  # noqa: E402
from bench.data import qa_set  # noqa: E402

CACHE = fb.CACHE
SETS = (("dev", False), ("dev", True), ("dev2", False))
DEPTH = 40


def code_key() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "mcp_server" / "retrieval").glob("*")):
        if path.suffix in (".py", ".json"):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def chunk_vectors(index: Any) -> np.ndarray:
    """Per chunk, the mean of its sentences' vectors, normalised (zeros without vectors)."""
    vectors = index.faiss.reconstruct_n(0, index.faiss.ntotal)
    out = np.zeros((len(index.chunks), vectors.shape[1]), dtype=np.float32)
    np.add.at(out, index.owners, vectors)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms > 0, norms, 1.0)


def heads(log: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    saved = CACHE / f"head-levers-{code_key()}.pkl"
    out: dict[str, list[dict[str, Any]]] = pickle.loads(saved.read_bytes()) if saved.exists() else {}  # noqa: S301
    done = {(name, row["doc"]) for name, rows in out.items() for row in rows}
    from mcp_server.retrieval.index import fused_head, learned_order
    from mcp_server.retrieval.learned import bundled
    from mcp_server.retrieval.ranking import drop_duplicates

    pipeline = fb.ServerPipeline(use_cache=True)
    ranker = bundled()
    for qa, named in SETS:
        folder = qa_set(fb.SETS[qa])
        fb.FINANCEBENCH = folder
        questions = [q for q in fb.load_questions("all", named=named) if not named or q["id"].endswith(fb.NAMED)]
        name = f"{qa}{' named' if named else ''}"
        for doc, group in fb.by_document(questions).items():
            if (name, doc) in done:
                continue
            document, key, _, _ = pipeline.process(folder / group[0]["doc"])
            index, stats = pipeline.index(document, key)
            index = index.named(group[0]["doc"])
            vectors = chunk_vectors(index)
            embed = pipeline.embedder(pipeline.models.embedder_by_id(index.model_id)).embed_query
            rows = out.setdefault(name, [])
            for q in group:
                query = index.asked(q["question"])
                qvec = np.asarray(index.query_vector(q["question"], embed), dtype=np.float32)
                ranked = learned_order(index, ranker, query, fused_head(index, qvec, query, DEPTH // 5))
                chunk_of = functools.partial(_chunk, index.chunks)
                chosen = drop_duplicates(ranked, chunk_of, identity=lambda c: c.pos)[:DEPTH]
                pos = [c.pos for c in chosen]
                gold = {e["page"] for e in q["evidence"]}
                chunks = [index.chunks[p] for p in pos]
                rows.append({
                    "id": q["id"], "doc": doc, "query": query, "qvec": qvec / max(float(np.linalg.norm(qvec)), 1e-9),
                    "y": np.array([bool(gold & set(c.location.pages)) for c in chunks]),
                    "pos": np.array(pos), "n_chunks": len(index.chunks), "vectors": vectors[pos],
                    "texts": [c.text for c in chunks], "table": np.array([c.content_type == "table" for c in chunks]),
                    "pages": [tuple(c.location.pages) for c in chunks], "gold": sorted(gold),
                    "dense": np.array([-1.0 if c.dense is None else c.dense for c in chosen]),
                    "bm25": np.array([c.bm25 or 0.0 for c in chosen]),
                    "terms": index.query_tokens(query),
                })
            saved.write_bytes(pickle.dumps(out))
            log(f"{name} {doc}: {len(group)} questions, {stats['chunks']} chunks")
    return out


def _chunk(chunks: list[Any], candidate: Any) -> Any:
    return chunks[candidate.pos]


# --- scoring ------------------------------------------------------------------------------------
def first_hit(y: np.ndarray) -> int | None:
    hits = np.flatnonzero(y)
    return int(hits[0]) + 1 if len(hits) else None


def evaluate(rows: list[dict[str, Any]], lever: Callable[[dict[str, Any]], list[int]] | None) -> dict[str, float]:
    ranks, chars = [], []
    for row in rows:
        order = lever(row) if lever is not None else list(range(len(row["y"])))
        ranks.append(first_hit(row["y"][order]))
        chars += [len(row["texts"][i]) for i in order[:5]]
    n = len(ranks)
    return {"hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
            "hit@20": sum(r is not None and r <= 20 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r is not None and r <= 5) / n, "chars": statistics.median(chars)}


# --- levers -------------------------------------------------------------------------------------
def diversify(kind: str, slots: int = 5, weight: float = 0.5, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """MMR-like: the head's first ``slots`` places are filled in turn by the candidate whose
    today's-place relevance (1 / place) less ``weight`` x its similarity to the places already
    filled is best; ``kind`` says what similarity is: ``vector`` (cosine of the chunks' mean
    vectors), ``type`` (same content type: table or prose), ``page`` (shares a page)."""

    def sim(row: dict[str, Any], i: int, chosen: list[int]) -> float:
        if not chosen:
            return 0.0
        if kind == "vector":
            return float(max(row["vectors"][j] @ row["vectors"][i] for j in chosen))
        if kind == "type":
            return float(np.mean([row["table"][j] == row["table"][i] for j in chosen]))
        if kind == "page":
            return float(max(bool(set(row["pages"][j]) & set(row["pages"][i])) for j in chosen))
        raise ValueError(kind)

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        pool = list(range(min(top, n)))
        chosen: list[int] = []
        while pool and len(chosen) < slots:
            best = max(pool, key=lambda i: _rel(i) - weight * sim(row, i, chosen))
            chosen.append(best)
            pool.remove(best)
        return chosen + [i for i in range(n) if i not in chosen]

    return lever


def _rel(place: int) -> float:
    """Today's place (0-based) as a relevance in (0, 1]: 10 / (10 + place)."""
    return 10.0 / (10.0 + place)


def type_slot(slot: int = 4, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """When the first ``slot`` places hold one content type only, the best candidate of the other
    type (within ``top``) takes place ``slot`` + 1 (the rest shift down)."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        order = list(range(n))
        kinds = set(row["table"][:slot].tolist())
        if len(kinds) != 1:
            return order
        other = next((i for i in range(slot, min(top, n)) if row["table"][i] != row["table"][0]), None)
        if other is None:
            return order
        order.remove(other)
        order.insert(slot, other)
        return order

    return lever


def dense_slot(slot: int = 4, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """When the first ``slot`` places hold one content type only, the candidate of the other type
    (within ``top``) nearest the question (best sentence cosine) takes place ``slot`` + 1."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        order = list(range(n))
        if len(set(row["table"][:slot].tolist())) != 1:
            return order
        others = [i for i in range(slot, min(top, n)) if row["table"][i] != row["table"][0]]
        if not others:
            return order
        other = max(others, key=lambda i: row["dense"][i])
        order.remove(other)
        order.insert(slot, other)
        return order

    return lever


_NUMBER = re.compile(r"[-+$(]*\d[\d,.]*%?\)?")


def label_view(text: str, is_table: bool) -> str:
    """A table chunk's labels: its lines with numbers stripped (title lines, header, row labels)."""
    if not is_table:
        return ""
    lines = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        words = " ".join(_NUMBER.sub(" ", c) for c in cells if c and not set(c) <= set("-: "))
        words = " ".join(words.split())
        if words:
            lines.append(words)
    return "\n".join(lines)


def label_score(row: dict[str, Any]) -> np.ndarray:
    """Per candidate, the share of the question's BM25 terms its label view holds (tables only; a
    term is held when a label word starts with its first five characters)."""
    terms = set(row["terms"])
    out = np.zeros(len(row["y"]))
    if not terms:
        return out
    for i, (text, table) in enumerate(zip(row["texts"], row["table"], strict=True)):
        view = label_view(text, bool(table)).lower()
        if view:
            words = set(re.findall(r"\w+", view))
            out[i] = sum(any(w.startswith(t[:5]) for w in words) for t in terms) / len(terms)
    return out


def label_lever(weight: float, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """Today's place and the label view's place fused as reciprocal ranks (``weight`` for the labels)."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        m = min(top, n)
        score = label_score(row)[:m]
        label_place = np.empty(m)
        label_place[np.argsort(-score, kind="stable")] = np.arange(m)
        fused = 1 / (60 + np.arange(m)) + weight * np.where(score > 0, 1 / (60 + label_place), 0.0)
        head = list(np.argsort(-fused, kind="stable"))
        return [int(i) for i in head] + list(range(m, n))

    return lever


def label_cosines(data: dict[str, list[dict[str, Any]]]) -> None:
    """Each row's ``label_cos``: per candidate of its first 20, the cosine of its label view (tables
    only; prose -1) with the question's vector, embedded by the model its index used."""
    from mcp_server.core.settings import Settings
    from mcp_server.embedding.registry import ModelRegistry

    models = ModelRegistry.load(Settings(log_dir=None))
    for rows in data.values():
        for row in rows:
            if len(row.get("label_cos", ())) == min(DEPTH, len(row["y"])):
                continue
            embedder = models.embedder_for(row["n_chunks"])
            m = min(DEPTH, len(row["y"]))
            views = [label_view(t, bool(k)) for t, k in zip(row["texts"][:m], row["table"][:m], strict=True)]
            wanted = [i for i, v in enumerate(views) if v]
            cos = np.full(m, -1.0)
            if wanted:
                vecs = np.asarray(embedder.embed([views[i] for i in wanted]), dtype=np.float32)
                vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
                cos[wanted] = vecs @ row["qvec"]
            row["label_cos"] = cos


def label_dense_lever(weight: float) -> Callable[[dict[str, Any]], list[int]]:
    """Today's place and the tables' label-view cosine place fused as reciprocal ranks."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        cos = row["label_cos"][:20]
        m = len(cos)
        place = np.empty(m)
        place[np.argsort(-cos, kind="stable")] = np.arange(m)
        fused = 1 / (60 + np.arange(m)) + weight * np.where(cos > -1, 1 / (60 + place), 0.0)
        return [int(i) for i in np.argsort(-fused, kind="stable")] + list(range(m, n))

    return lever


def tables_among_themselves(key: str, weight: float, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """The places the first 20 give to tables stay tables', the prose keeps its places; the tables
    are re-ordered among themselves by today's place and their label score's place (row ``key``:
    ``label_cos``, or None for the lexical label share) fused as reciprocal ranks, ``weight`` the labels'."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        m = min(top, n)
        score = row[key][:m] if key else label_score(row)[:m]
        tables = [i for i in range(m) if row["table"][i]]
        if len(tables) < 2:
            return list(range(n))
        by_label = sorted(tables, key=lambda i: -score[i])
        label_place = {i: p for p, i in enumerate(by_label)}
        fused = {i: 1 / (60 + p) + weight / (60 + label_place[i]) for p, i in enumerate(tables)}
        reordered = iter(sorted(tables, key=lambda i: -fused[i]))
        return [next(reordered) if row["table"][i] else i for i in range(m)] + list(range(m, n))

    return lever


def consensus(weight: float, top: int = 20) -> Callable[[dict[str, Any]], list[int]]:
    """The reverse of diversifying: today's place fused (reciprocal ranks) with the place by each
    candidate's mean cosine to the rest of the first ``top`` (the head's centre first)."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        m = min(top, n)
        vecs = row["vectors"][:m]
        sims = vecs @ vecs.T
        centre = (sims.sum(axis=1) - np.diag(sims)) / max(m - 1, 1)
        place = np.empty(m)
        place[np.argsort(-centre, kind="stable")] = np.arange(m)
        fused = 1 / (60 + np.arange(m)) + weight / (60 + place)
        return [int(i) for i in np.argsort(-fused, kind="stable")] + list(range(m, n))

    return lever


def misses(data: dict[str, list[dict[str, Any]]]) -> None:
    for name, rows in data.items():
        if name == "dev named":
            continue
        for row in rows:
            rank = first_hit(row["y"])
            if rank is not None and rank <= 5:
                continue
            print(f"\n== {name} {row['id']} {row['doc']} evidence pages {row['gold']}: rank {rank}")
            print(f"   Q: {row['query'][:200]}")
            for i in range(min(len(row["y"]), 20)):
                if i < 5 or row["y"][i]:
                    head = " ".join(row["texts"][i].split())[:150]
                    mark = "*" if row["y"][i] else " "
                    kind = "T" if row["table"][i] else "P"
                    print(f"   {mark}{i + 1:2d} {kind} p{row['pages'][i]} d={row['dense'][i]:.3f} "
                          f"b={row['bm25'][i]:.1f} {head}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--misses", action="store_true", help="print each question not at top 5")
    parser.add_argument("--dense-labels", action="store_true", help="also the label view embedded (slower)")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    data = heads(log)
    if args.misses:
        misses(data)
    levers: list[tuple[str, Any]] = [("today", None)]
    if args.dense_labels:
        label_cosines(data)
        levers += [(f"label cos w={w}", label_dense_lever(w)) for w in (0.05, 0.1, 0.2, 0.5)]
        levers += [(f"tables by label cos w={w} top {t}", tables_among_themselves("label_cos", w, t))
                   for t in (20, 40) for w in (0.5, 0.75, 1, 1.25, 1.5, 2, 3)]
    levers += [(f"tables by label share w={w}", tables_among_themselves("", w)) for w in (0.5, 1, 3)]
    levers += [(f"mmr {k} w={w}", diversify(k, weight=w)) for k in ("vector", "type", "page") for w in (0.1, 0.2, 0.4)]
    levers += [(f"type slot {s}", type_slot(s)) for s in (3, 4)]
    levers += [(f"consensus w={w}", consensus(w)) for w in (0.25, 0.5, 1.0)]
    levers += [(f"labels w={w}", label_lever(w)) for w in (0.05, 0.1, 0.2, 0.3)]
    levers += [(f"table by dense slot {s}", dense_slot(s)) for s in (3, 4)]
    print(f"{'lever':24s} " + " ".join(f"{n + ' h5/h20/MRR chars':>34s}" for n in data))
    for label, lever in levers:
        cells = []
        for rows in data.values():
            m = evaluate(rows, lever)
            cells.append(f"{m['hit@5']:.3f}/{m['hit@20']:.3f}/{m['mrr']:.3f} {m['chars']:5.0f}")
        print(f"{label:24s} " + " ".join(f"{c:>34s}" for c in cells))


if __name__ == "__main__":
    main()
