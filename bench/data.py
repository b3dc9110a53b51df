"""What the benchmarks measure with: where the documents and QA sets are, how an answer is scored,
how a column of timings is summarised and printed.

    from bench.data import QA, qa_set, squad_questions, squad_scores, hit_rate, mrr, percentile, table

Paths follow the test suite's discovery (tests/conftest.py) without importing the tests:
``RAG_CORPUS_DIR`` names a corpus folder holding ``docs/`` and ``qa/``; without it the documents
are the repository's ``tests/corpus`` and the QA sets ``../shared/corpus/qa`` beside the checkout
(they are not carried: big, and FinanceBench's questions are CC BY-NC). A script that needs a QA
set asks ``qa_set(name)``, which stops it with the reason when the set is not there.

Ranks are 1-based, ``None`` when no result counts: hit@k is the share of questions ranked at most
k, MRR the mean of 1/rank (0 for ``None``).

Importing this module sets ``HF_HUB_OFFLINE`` and ``TOKENIZERS_PARALLELISM`` (unless set): a
benchmark never waits on a model hub, and tokenizers never fork-warn in the parser pool. It
imports nothing of ``mcp_server``, so a script may still point ``sys.path`` at another checkout.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "CORPUS", "DOCS", "QA", "RESULTS", "ROOT", "SQUAD_REFERENCES", "Retrieved", "answer_rank", "chars_per_result",
    "first_rank", "financebench_questions", "hit_rate", "jsonl", "load_average", "mrr", "page_rank", "percentile",
    "qa_set", "squad_questions", "squad_scores", "table", "xquad",
]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
_CORPUS_ENV = os.environ.get("RAG_CORPUS_DIR") or None
CORPUS = Path(_CORPUS_ENV or ROOT / "tests" / "corpus").resolve()
DOCS = CORPUS / "docs"
QA = Path(_CORPUS_ENV or ROOT.parent / "shared" / "corpus").resolve() / "qa"

# hit / strict / MRR at k=5 on SQuAD-v2-small that the server is compared with (strict None: not reported)
SQUAD_REFERENCES: dict[str, tuple[float, float | None, float]] = {
    "LangChain FAISS similarity": (0.952, 0.918, 0.829),
    "Okapi BM25": (0.980, 0.952, 0.858),
    "seed v2.1": (0.812, None, 0.437),
    "goal": (0.99, 0.97, 0.90),
}

Retrieved = list[tuple[str, int, int]]  # (text, start_char, end_char) per result, best first


# --- data sets --------------------------------------------------------------------------------
def qa_set(name: str) -> Path:
    """The folder of the QA set ``name`` (``squad-v2-small``, ``financebench-dev``, ``xquad-dev``);
    stops the script with the reason when it is not there."""
    folder = QA / name
    if not folder.is_dir():
        raise SystemExit(f"QA set {name} not found at {folder}: the QA sets are not carried in the repository "
                         f"(tests/corpus/README.md); set RAG_CORPUS_DIR to a corpus folder holding qa/{name}")
    return folder


def jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def squad_questions() -> list[dict[str, Any]]:
    """SQuAD-v2-small's answerable questions (``doc`` is relative to the set's folder)."""
    return [q for q in jsonl(qa_set("squad-v2-small") / "questions.jsonl")
            if not q.get("is_impossible") and q.get("answers")]


def financebench_questions() -> list[dict[str, Any]]:
    """FinanceBench dev's questions (``doc`` is ``docs/<name>.pdf``, ``evidence`` holds 1-based pages)."""
    return jsonl(qa_set("financebench-dev") / "questions.jsonl")


def xquad(lang: str) -> tuple[str, list[dict[str, Any]]]:
    """XQuAD dev in ``lang``: (the document's text, its questions)."""
    folder = qa_set("xquad-dev") / lang
    if not folder.is_dir():
        raise SystemExit(f"XQuAD dev has no language {lang!r} at {folder}")
    return (folder / "doc.txt").read_text(encoding="utf-8"), jsonl(folder / "questions.jsonl")


# --- scores -----------------------------------------------------------------------------------
def first_rank(results: Iterable[Any], counts: Callable[[Any], bool]) -> int | None:
    """1-based rank of the first result that ``counts``, else None."""
    return next((rank for rank, result in enumerate(results, start=1) if counts(result)), None)


def answer_rank(texts: Iterable[str], answers: Iterable[str]) -> int | None:
    """Rank of the first text that contains one of the gold answer strings."""
    gold = set(answers)
    return first_rank(texts, lambda text: any(answer in text for answer in gold))


def page_rank(pages: Iterable[Iterable[int]], gold: Iterable[int]) -> int | None:
    """Rank of the first result whose pages include a gold evidence page."""
    wanted = set(gold)
    return first_rank(pages, lambda result_pages: bool(wanted & set(result_pages)))


def hit_rate(ranks: Sequence[int | None], k: int | None = None) -> float:
    """Share of questions with a counted result (within the first ``k`` when given)."""
    return sum(r is not None and (k is None or r <= k) for r in ranks) / (len(ranks) or 1)


def mrr(ranks: Sequence[int | None]) -> float:
    return sum(1 / r for r in ranks if r is not None) / (len(ranks) or 1)


def chars_per_result(texts: Sequence[str]) -> tuple[float, float]:
    """(median, mean) characters of the returned results; a gain counts at no more text per result."""
    lengths = [len(text) for text in texts]
    return (statistics.median(lengths), statistics.fmean(lengths)) if lengths else (0.0, 0.0)


def squad_scores(questions: Sequence[dict[str, Any]], retrieve: Callable[[str, str, int], Retrieved],
                 k: int = 5) -> dict[str, float]:
    """hit (a result holds a gold answer string), strict (that result also overlaps the gold paragraph
    ``[paragraph_char_start, paragraph_char_end)``), MRR and n over ``retrieve(doc, question, k)``.
    Fits SQuAD and XQuAD alike."""
    ranks: list[int | None] = []
    strict = 0
    for q in questions:
        answers = {a["text"] for a in q["answers"]}
        lo, hi = q["paragraph_char_start"], q["paragraph_char_end"]
        results = retrieve(q["doc"], q["question"], k)[:k]
        ranks.append(answer_rank((text for text, _, _ in results), answers))
        strict += any(any(a in text for a in answers) and start < hi and end > lo for text, start, end in results)
    n = len(questions)
    return {"hit": hit_rate(ranks), "strict": strict / n, "mrr": mrr(ranks), "n": n}


# --- summaries and output ---------------------------------------------------------------------
def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 <= q <= 1) of the values: p95 is ``percentile(v, 0.95)``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load_average(sep: str = "/", digits: int = 1) -> str:
    """The machine's 1/5/15-minute load averages: print it beside anything timed (the cores may be shared)."""
    return sep.join(f"{value:.{digits}f}" for value in os.getloadavg())


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A Markdown table; ``align`` has one letter per column, ``l`` (default) or ``r``."""
    rule = "|" + "|".join("---:" if align[i:i + 1] == "r" else "---" for i in range(len(header))) + "|"
    body = ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(["| " + " | ".join(header) + " |", rule, *body])
