"""Train the learned ranker (mcp_server/retrieval/ranker.json) from TAT-QA: ``make train-ranker``.

    .venv/bin/python scripts/train_ranker.py                 # writes mcp_server/retrieval/ranker.json
    .venv/bin/python scripts/train_ranker.py --dry-run       # fits and reports, writes nothing
    .venv/bin/python scripts/train_ranker.py --reuse --sections kept,masked --out a.json   # tried, not kept

Data: TAT-QA (Zhu et al. 2021, MIT; ``$RAG_CORPUS_DIR/train/tatqa``, default ../shared/corpus):
555 contexts from real financial reports, each a table and its paragraphs, with 3,331 questions
and their gold evidence (the paragraphs, and the table when the answer comes from it). No
evaluation set is read here.

How: the contexts are pooled, in file order, into pseudo-documents of CONTEXTS_PER_DOCUMENT each
(Markdown: the tables as tables, the paragraphs as prose): two of ~340 chunks, so that every
question's head is crowded with other reports' tables and prose that share its words, as a filing's
is. Each pseudo-document goes through the server's own pipeline (processor, chunker, embedder,
``DocumentIndex``); for every question the fusion's head (``LearnedRanker.head`` candidates) is read
as the learned ranker reads it (``retrieval.index.signals``), a candidate labelled relevant when it
holds a gold paragraph or the gold table's rows. The model (``--kind``) is LambdaMART (LightGBM's
lambdarank, TREES trees of LEAVES leaves, flattened into ``ranker.json`` for ``learned.Trees``) or a
pairwise logistic regression (RankNet with a linear scorer) over standardised features; the server
orders the head by the model's place and the fusion's together (WITH_FUSION). The last
HELD_OUT_SHARE of the pseudo-documents is held out and the fusion's order and the model's are
compared there (hit@5, MRR); then the model is refitted on all of them. Deterministic.
``bench/ranker_heads.py`` screens a written model on FinanceBench's heads (validation only).
Tried and not kept (docs/architecture.md "The learned ranker"): ``--sections`` adds the self-supervised
heads of ``scripts/ranker_sections.py`` (a long manual's section headings or first sentences asked of
it) to the training, never to the held-out figures; ``--strict-labels`` labels TAT-QA's heads with
``train_reranker.gold_tests`` (the gold table's own values) instead of ``gold_tests`` here;
``--gate`` adds ``scripts/ranker_gate.py``'s question gate (P(the answer needs a table), out of fold)
as two features and writes the gate beside ``--out`` (bench/HISTORY.md 2026-11-29, ninth round);
``--seed`` (feature bagging) and ``--rising`` (monotone features) measure how much a model moves by chance.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

CONTEXTS_PER_DOCUMENT = 278  # two pseudo-documents of ~340 chunks: heads as crowded as a filing's
HEAD = 20  # the head the model orders: the evidence is in the fusion's top 20 for most questions
HELD_OUT_SHARE = 0.2
C = 1.0  # inverse regularisation of the logistic regression
KIND = "trees"
WITH_FUSION = True  # the server orders the head by the model's and the fusion's places together
TREES, LEAVES, LEARNING_RATE, MIN_LEAF = 200, 15, 0.05, 50  # LambdaMART's size
FILES = ("tatqa_dataset_dev.json", "tatqa_dataset_test_gold.json")


def corpus() -> Path:
    base = Path(os.environ.get("RAG_CORPUS_DIR", ROOT.parent / "shared" / "corpus"))
    folder = base / "train" / "tatqa"
    if not folder.is_dir():
        raise SystemExit(f"TAT-QA not found at {folder}: set RAG_CORPUS_DIR to a corpus holding train/tatqa")
    return folder


def norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def markdown(context: dict[str, Any]) -> str:
    rows = [[cell.replace("|", "/").strip() for cell in row] for row in context["table"]["table"]]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    table = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    table += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    paragraphs = [p["text"] for p in sorted(context["paragraphs"], key=lambda p: p["order"])]
    return "\n\n".join(["\n".join(table), *paragraphs])


def gold_tests(context: dict[str, Any], question: dict[str, Any]) -> list[Any]:
    """Tests on a chunk's normalised text, one per piece of gold evidence."""
    tests = []
    by_order = {str(p["order"]): p["text"] for p in context["paragraphs"]}
    for order in question.get("rel_paragraphs", []):
        text = norm(by_order.get(str(order), ""))
        if len(text) >= 20:
            probes = {text[:60], text[-60:]}  # a paragraph cut between two chunks counts in either
            tests.append(lambda chunk, probes=probes: any(p in chunk for p in probes))
    if "table" in question.get("answer_from", ""):
        labels = {norm(r[0]) for r in context["table"]["table"] if r and len(norm(r[0])) >= 6}
        numbers = {norm(n) for n in re.findall(r"\d[\d,.]*\d", " ".join(map(str, question["answer"]
                   if isinstance(question["answer"], list) else [question["answer"]])) + " " +
                   question.get("derivation", "")) if len(norm(n)) >= 3}
        if labels:
            def table_test(chunk: str, labels: set[str] = labels, numbers: set[str] = numbers) -> bool:
                held = sum(label in chunk for label in labels)
                return held >= max(1, len(labels) // 2) or (held >= 1 and any(n in chunk for n in numbers))
            tests.append(table_test)
    return tests


def build(contexts: list[dict[str, Any]], work: Path, log: Any, per_document: int) -> list[dict[str, Any]]:
    """Per question: its head's feature matrix and labels, and its pseudo-document's number."""
    from bench.financebench import ServerPipeline
    from mcp_server.retrieval.index import fused_head, signals

    pipeline = ServerPipeline(use_cache=True)
    work.mkdir(parents=True, exist_ok=True)
    groups = [contexts[i:i + per_document] for i in range(0, len(contexts), per_document)]
    rows = []
    for d, group in enumerate(groups):
        path = work / f"tatqa-{d:02d}.md"
        path.write_text("\n\n".join(markdown(c) for c in group) + "\n", encoding="utf-8")
        document, key, _, _ = pipeline.process(path)
        index, stats = pipeline.index(document, key)
        normed = [norm(c.text) for c in index.chunks]
        embed = pipeline.embedder(pipeline.models.embedder_by_id(index.model_id)).embed_query
        kept = 0
        for context in group:
            for question in context["questions"]:
                tests = gold_tests(context, question)
                if not tests:
                    continue
                query = index.asked(question["question"])
                head = fused_head(index, index.query_vector(query, embed), query, 5)[:HEAD]
                labels = np.array([any(t(normed[c.pos]) for t in tests) for c in head])
                if labels.any() and not labels.all():
                    rows.append({"doc": d, "signals": signals(index, query, head), "y": labels,
                                 "texts": [normed[c.pos] for c in head], "context": context["table"]["uid"],
                                 "question": question["uid"]})
                    kept += 1
        log(f"document {d}: {len(group)} contexts, {stats['chunks']} chunks, {kept} questions with a relevant "
            "and an irrelevant candidate in the head")
    return rows


def pairs(rows: list[dict[str, Any]], mean: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    diffs = []
    for row in rows:
        x = (row["x"] - mean) / scale
        pos, neg = x[row["y"]], x[~row["y"]]
        diffs.append((pos[:, None, :] - neg[None, :, :]).reshape(-1, x.shape[1]))
    d = np.concatenate(diffs)
    return np.concatenate([d, -d]), np.concatenate([np.ones(len(d)), np.zeros(len(d))])


def standardise(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    every = np.concatenate([r["x"] for r in rows])
    mean, scale = every.mean(axis=0), every.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def fit_linear(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """RankNet with a linear scorer: a logistic regression over every (relevant, other) pair's difference."""
    from sklearn.linear_model import LogisticRegression

    mean, scale = standardise(rows)
    x, y = pairs(rows, mean, scale)
    model = LogisticRegression(C=C, fit_intercept=False, max_iter=2000).fit(x, y)
    return {"mean": mean, "scale": scale, "weights": model.coef_[0]}


def fit_trees(rows: list[dict[str, Any]], trees: int = TREES, leaves: int = LEAVES, seed: int = 0,
              rising: tuple[int, ...] = ()) -> dict[str, Any]:
    """LambdaMART (LightGBM's lambdarank) over the raw features, flattened for ``learned.Trees``; a
    ``seed`` other than 0 draws 80 % of the features per tree (how much a model moves by chance); the
    score may only rise with the features at ``rising``."""
    import lightgbm

    x = np.concatenate([r["x"] for r in rows])
    monotone = {"monotone_constraints": [int(i in rising) for i in range(x.shape[1])]} if rising else {}
    y = np.concatenate([r["y"] for r in rows]).astype(int)
    model = lightgbm.LGBMRanker(objective="lambdarank", n_estimators=trees, num_leaves=leaves,
                                learning_rate=LEARNING_RATE, min_child_samples=MIN_LEAF, subsample=1.0,
                                colsample_bytree=0.8 if seed else 1.0, reg_lambda=1.0, random_state=seed,
                                deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1,
                                lambdarank_truncation_level=HEAD, **monotone)
    model.fit(x, y, group=[len(r["y"]) for r in rows])
    n = x.shape[1]
    return {"mean": np.zeros(n), "scale": np.ones(n), "weights": np.zeros(n),
            "trees": flatten(model.booster_.dump_model()["tree_info"])}


def flatten(tree_info: list[dict[str, Any]]) -> dict[str, list[float]]:
    """LightGBM's dumped trees as the node arrays ``learned.Trees`` reads."""
    out: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right", "value", "roots")}

    def add(node: dict[str, Any]) -> int:
        at = len(out["feature"])
        for key in ("feature", "threshold", "left", "right", "value"):
            out[key].append(-1 if key in ("feature", "left", "right") else 0.0)
        if "leaf_value" in node:
            out["value"][at] = round(float(node["leaf_value"]), 7)
            return at
        if node["decision_type"] != "<=":
            raise ValueError(f"unsupported split {node['decision_type']}")
        out["feature"][at], out["threshold"][at] = int(node["split_feature"]), float(node["threshold"])
        out["left"][at] = add(node["left_child"])
        out["right"][at] = add(node["right_child"])
        return at

    for tree in tree_info:
        out["roots"].append(add(tree["tree_structure"]))
    return out


def ranker(model: dict[str, Any], with_fusion: bool = WITH_FUSION) -> Any:
    from mcp_server.retrieval.learned import FEATURES, LearnedRanker

    return LearnedRanker.from_dict({"model_id": "candidate", "features": list(FEATURES), "head": HEAD,
                                    "with_fusion": with_fusion, **model})


def evaluate(rows: list[dict[str, Any]], model: dict[str, Any] | None,
             with_fusion: bool = WITH_FUSION) -> dict[str, float]:
    """hit@5 and MRR of the fusion's order (``model`` None) or the server's with ``model``."""
    hits, rr = [], []
    scorer = ranker(model, with_fusion) if model is not None else None
    for row in rows:
        order = np.arange(len(row["y"])) if scorer is None else scorer.ranked(scorer.scores(row["x"]))
        first = int(np.flatnonzero(row["y"][order])[0]) + 1
        hits.append(first <= 5)
        rr.append(1 / first)
    return {"hit@5": round(float(np.mean(hits)), 4), "mrr": round(float(np.mean(rr)), 4), "questions": len(rows)}


def strict(rows: list[dict[str, Any]], contexts: list[dict[str, Any]], per_document: int) -> list[dict[str, Any]]:
    """``rows`` labelled by ``train_reranker.gold_tests``: a gold table is held only by a chunk holding
    three of its own values that no other table of the pseudo-document holds (``gold_tests`` here
    also takes another report's table that shares half its row labels); heads left with no relevant
    or no irrelevant candidate drop out."""
    from collections import Counter

    import train_reranker

    by_uid = {c["table"]["uid"]: (i, c) for i, c in enumerate(contexts)}
    common = {}
    for start in range(0, len(contexts), per_document):
        seen = Counter(v for c in contexts[start:start + per_document] for v in train_reranker.table_values(c))
        common[start // per_document] = {v for v, n in seen.items() if n > 1}
    out = []
    for row in rows:
        if "texts" not in row:
            raise SystemExit("--strict-labels needs heads built by this version: run without --reuse")
        number, context = by_uid[row["context"]]
        question = next(q for q in context["questions"] if q["uid"] == row["question"])
        tests = train_reranker.gold_tests(context, question, common[number // per_document])
        y = np.array([any(t(text) for t in tests) for text in row["texts"]], dtype=bool)
        if y.any() and not y.all():
            out.append(dict(row, y=y))
    return out


def sections(modes: list[str], log: Any) -> list[dict[str, Any]]:
    """The self-supervised heads of ``scripts/ranker_sections.py`` in ``modes`` (built when not cached)."""
    import ranker_sections

    out = []
    for mode in modes:
        saved = ranker_sections.WORK / mode / "heads.pkl"
        rows = pickle.loads(saved.read_bytes()) if saved.exists() else ranker_sections.build(mode, log)  # noqa: S301
        log(f"sections ({mode}): {len(rows)} questions")
        out += rows
    return out


def add_gate(rows: list[dict[str, Any]], contexts: list[dict[str, Any]], log: Any, saved: Path) -> dict[str, Any]:
    """Each row's features widened by ``ranker_gate.GATE_FEATURES``, its question's gate value out of
    fold; the gate fitted on every question (to serve with) and what to say of it. The questions'
    vectors are kept in ``saved`` (every question of ``contexts``, in order)."""
    import ranker_gate

    def embed(texts: list[str]) -> np.ndarray:
        if saved.exists():
            kept = np.load(saved)
            if len(kept) == len(texts):
                return kept
        from mcp_server.core.settings import Settings
        from mcp_server.embedding.registry import ModelRegistry

        vectors = np.asarray(ModelRegistry.load(Settings(log_dir=None)).fast.embed_queries(texts), dtype=np.float32)
        np.save(saved, vectors)
        return vectors

    oof, gate = ranker_gate.gate_values(contexts, embed, log)
    for row in rows:
        row["x"] = np.hstack([row["x"], ranker_gate.columns(oof[row["question"]], row["signals"].table)])
    return {"features": ranker_gate.GATE_FEATURES, "gate": gate,
            "about": {"kind": "logistic regression over the question's MiniLM vector, P(answer needs a table)",
                      "out_of_fold": ranker_gate.FOLDS, "c": ranker_gate.C}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="fit and report only")
    parser.add_argument("--contexts", type=int, default=CONTEXTS_PER_DOCUMENT, help="contexts per pseudo-document")
    parser.add_argument("--kind", choices=["trees", "linear"], default=KIND, help="the model: LambdaMART or linear")
    parser.add_argument("--trees", type=int, default=TREES, help="LambdaMART: trees")
    parser.add_argument("--leaves", type=int, default=LEAVES, help="LambdaMART: leaves per tree")
    parser.add_argument("--drop", default="", help="comma-separated features the model may not use (held at 0)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the heads of the last run (bench/results/cache/tatqa/<contexts>/heads.pkl)")
    parser.add_argument("--sections", default="",
                        help="comma-separated modes of scripts/ranker_sections.py (kept, masked, lead) whose "
                             "self-supervised heads join the training (never the held-out figures)")
    parser.add_argument("--strict-labels", action="store_true",
                        help="label TAT-QA's heads with train_reranker.gold_tests (the gold table's own values)")
    parser.add_argument("--seed", type=int, default=0,
                        help="trees: other than 0, each tree sees 80%% of the features drawn with this seed")
    parser.add_argument("--rising", default="", help="trees: comma-separated features the score may only rise with")
    parser.add_argument("--gate", action="store_true",
                        help="add ranker_gate.GATE_FEATURES (P(the answer needs a table) from the question's "
                             "vector, out of fold in training) and write the gate beside --out (tried, not kept)")
    parser.add_argument("--out", type=Path, default=ROOT / "mcp_server" / "retrieval" / "ranker.json")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    from mcp_server.retrieval.learned import FEATURES, features

    folder = corpus()
    contexts = [c for name in FILES for c in json.loads((folder / name).read_text(encoding="utf-8"))]
    work = ROOT / "bench" / "results" / "cache" / "tatqa" / str(args.contexts)
    saved = work / "heads.pkl"
    if args.reuse and saved.exists():
        rows = pickle.loads(saved.read_bytes())  # noqa: S301 - our own cache
    else:
        rows = build(contexts, work, log, args.contexts)
        saved.write_bytes(pickle.dumps(rows))
    if args.strict_labels:
        rows = strict(rows, contexts, args.contexts)
    extra = sections(args.sections.split(",") if args.sections else [], log)
    for row in rows + extra:
        row["x"] = features(row["signals"])
    gate_body: dict[str, Any] = {}
    if args.gate:
        if extra:
            raise SystemExit("--gate reads TAT-QA questions only: not with --sections")
        gate_body = add_gate(rows, contexts, log, work / "gate-vectors.npy")
    names = list(FEATURES) + list(gate_body.get("features", []))
    dropped = [names.index(name) for name in args.drop.split(",") if name]
    for row in rows + extra:
        row["x"][:, dropped] = 0.0
    log(f"{len(rows)} questions; relevant candidates per head: mean {np.mean([r['y'].sum() for r in rows]):.2f}, "
        f"first relevant at fused place 1 for {np.mean([bool(r['y'][0]) for r in rows]):.3f}")
    def fit(chosen: list[dict[str, Any]]) -> dict[str, Any]:
        rising = tuple(names.index(n) for n in args.rising.split(",") if n)
        if args.kind == "linear":
            return fit_linear(chosen)
        return fit_trees(chosen, args.trees, args.leaves, args.seed, rising)

    documents = sorted({r["doc"] for r in rows})
    cut = documents[int(len(documents) * (1 - HELD_OUT_SHARE))]
    train, held = [r for r in rows if r["doc"] < cut], [r for r in rows if r["doc"] >= cut]
    held_out = {"fusion": evaluate(held, None), "learned": evaluate(held, fit(train + extra))}
    log(f"held out (documents {cut}+): {json.dumps(held_out)}")
    model = fit(rows + extra)
    log(f"on all: fusion {evaluate(rows, None)}, learned (fitted on them) {evaluate(rows, model)}")
    if args.kind == "linear":
        for name, weight in sorted(zip(names, model["weights"], strict=True), key=lambda item: -abs(item[1])):
            log(f"  {name:16s} {weight:+.3f}")
    body = {
        "model_id": f"tatqa-{args.kind}-v2{'-gated' if args.gate else ''}{f'-seed{args.seed}' if args.seed else ''}",
        "features": names, "head": HEAD, "with_fusion": WITH_FUSION,
        "mean": [round(float(v), 6) for v in model["mean"]], "scale": [round(float(v), 6) for v in model["scale"]],
        "weights": [round(float(v), 6) for v in model["weights"]],
        "trees": model.get("trees"),
        "trained_on": {"data": "TAT-QA train/tatqa (dev + test gold), MIT", "questions": len(rows),
                       "contexts_per_document": args.contexts, "kind": args.kind, "held_out": held_out,
                       "unused": [names[i] for i in dropped],
                       **({"sections": args.sections, "section_questions": len(extra)} if extra else {}),
                       **({"labels": "strict"} if args.strict_labels else {}),
                       **({"gate": gate_body["about"]} if gate_body else {}),
                       **({"trees": args.trees, "leaves": args.leaves} if args.kind == "trees" else {})},
    }
    if not args.dry_run:
        args.out.write_text(json.dumps(body, separators=(",", ":")) + "\n", encoding="utf-8")
        log(f"wrote {args.out}")
        if gate_body:
            import ranker_gate

            gate_body["gate"].save(ranker_gate.gate_path(args.out))
            log(f"wrote {ranker_gate.gate_path(args.out)}")


if __name__ == "__main__":
    main()
