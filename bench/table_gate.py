"""A per-question table gate, learned from TAT-QA, read offline on the cached heads (issue #46).

    .venv/bin/python bench/table_gate.py               # train the gate, build (or read) the heads, screen

TAT-QA (``../shared/corpus/train/tatqa``, MIT) labels each question with where its answer is:
``table``, ``text`` or ``table-text``. A logistic regression over the bundled MiniLM's question
vector and a few shape features (digits, year-like numbers, numbers, words) predicts P(the answer
needs a table) (label: table or table-text). It is trained on TAT-QA's dev file and checked on its
test file (other reports), then refit on both for the screen.

The screen re-orders today's heads (``bench/head_levers.py``'s cache: FinanceBench dev plain and
named, dev2; ``bench/head_encoders.py``'s SQuAD-v2-small first 30) with that probability, the
first 20 only: a table candidate's reciprocal-rank score gets ``w * (P - c) / K`` added
(``boost``: both ways, promotions only, demotions only; ``labelled``: promotions scaled by the
table's label share), the best table takes a place when P is high (``gated slot``), or the
tables' label view (``head_levers.label_lever``) is fused with a weight ``w * P`` (``gated
labels``). Three gates: table or mixed answers against text ones, the same with shape features,
table-only answers against text ones (mixed left out).
hit@5 / MRR (first five places), characters per result, questions gained / lost against today.
The named phrasings' heads equal the plain ones (the index's ``asked`` drops the naming clause),
so dev is read once. Validation only: the gate trains on TAT-QA, the QA sets are only read.
"""

from __future__ import annotations

import argparse
import json
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

from bench import head_levers as hl  # noqa: E402
from bench.data import load_average  # noqa: E402

TATQA = ROOT.parent / "shared" / "corpus" / "train" / "tatqa"
_NUMBER = re.compile(r"\d[\d,.]*")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
TOP = 20


def tatqa(split: str, table_only: bool = False) -> list[tuple[str, int, str]]:
    """(question, 1 when its answer needs the table, the context's uid) of one TAT-QA file; with
    ``table_only`` the questions answered from the table and the text together are left out."""
    data = json.loads((TATQA / f"tatqa_dataset_{split}.json").read_text(encoding="utf-8"))
    return [(q["question"], int(q["answer_from"] != "text"), ctx["table"]["uid"])
            for ctx in data for q in ctx["questions"] if not (table_only and q["answer_from"] == "table-text")]


def shape(question: str) -> list[float]:
    """General shape of a question: any digit, year-like numbers, numbers, words (log), a '?'."""
    words = question.split()
    return [float(any(ch.isdigit() for ch in question)), min(len(_YEAR.findall(question)), 3) / 3,
            min(len(_NUMBER.findall(question)), 5) / 5, float(np.log1p(len(words))) / 4,
            float(question.rstrip().endswith("?"))]


class Gate:
    """P(table) of a question: logistic regression over [MiniLM vector, shape]."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], use_shape: bool = False, c: float = 3.0) -> None:
        self.embed, self.use_shape, self.c = embed, use_shape, c
        self.model: Any = None

    def x(self, questions: list[str]) -> np.ndarray:
        vecs = np.asarray(self.embed(questions), dtype=np.float64)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
        if not self.use_shape:
            return vecs
        return np.hstack([vecs, np.array([shape(q) for q in questions])])

    def fit(self, questions: list[str], y: np.ndarray) -> Gate:
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression(C=self.c, max_iter=2000).fit(self.x(questions), y)
        return self

    def p(self, questions: list[str]) -> np.ndarray:
        return self.model.predict_proba(self.x(questions))[:, 1]


def held_out(embed: Callable[[list[str]], np.ndarray]) -> None:
    from sklearn.metrics import roc_auc_score

    train, test = tatqa("dev"), tatqa("test_gold")
    qs, y = [q for q, _, _ in train], np.array([t for _, t, _ in train])
    tq, ty = [q for q, _, _ in test], np.array([t for _, t, _ in test])
    print(f"TAT-QA: train (dev file) {len(qs)} questions, {y.mean():.3f} table; "
          f"held out (test file) {len(tq)}, {ty.mean():.3f} table")
    for use_shape in (False, True):
        for c in (0.3, 1.0, 3.0, 10.0):
            p = Gate(embed, use_shape, c).fit(qs, y).p(tq)
            acc = float(((p >= 0.5) == ty).mean())
            majority = max(ty.mean(), 1 - ty.mean())
            print(f"  shape={use_shape!s:5s} C={c:<4}: accuracy {acc:.3f} (majority {majority:.3f}), "
                  f"AUC {roc_auc_score(ty, p):.3f}")


def describe(name: str, p: np.ndarray) -> str:
    q = np.quantile(p, [0.1, 0.25, 0.5, 0.75, 0.9])
    return (f"{name:10s} n={len(p):3d} mean {p.mean():.2f}  p10/25/50/75/90 "
            + "/".join(f"{v:.2f}" for v in q) + f"  >=0.5: {(p >= 0.5).mean():.2f}")


# --- levers ----------------------------------------------------------------------------------------
def boost(weight: float, centre: float, gated: bool = True,
          side: str = "both") -> Callable[[dict[str, Any]], list[int]]:
    """Today's first 20 by 1/(K + place), each table's score plus ``weight`` * (P - centre) / K
    (P = 1 for every question when not ``gated``; ``side`` ``up`` keeps only promotions, ``down``
    only demotions)."""
    from mcp_server.retrieval.ranking import RRF_K

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        m = min(TOP, n)
        table = np.asarray(row["table"][:m], dtype=np.float64)
        shift = (row["p_table"] if gated else 1.0) - centre
        shift = max(shift, 0.0) if side == "up" else min(shift, 0.0) if side == "down" else shift
        fused = 1 / (RRF_K + np.arange(1, m + 1)) + weight * shift * table / RRF_K
        return [int(i) for i in np.argsort(-fused, kind="stable")] + list(range(m, n))

    return lever


def gated_labels(weight: float) -> Callable[[dict[str, Any]], list[int]]:
    """``head_levers.label_lever`` with the labels' weight ``weight`` * P(table)."""

    def lever(row: dict[str, Any]) -> list[int]:
        return hl.label_lever(weight * row["p_table"], TOP)(row)

    return lever


def labelled_promote(weight: float, centre: float) -> Callable[[dict[str, Any]], list[int]]:
    """``boost``'s promotions, each table's scaled by its label share (``head_levers.label_score``:
    how much of the question's terms its title, header and row labels hold)."""
    from mcp_server.retrieval.ranking import RRF_K

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        m = min(TOP, n)
        share = hl.label_score(row)[:m]
        fused = 1 / (RRF_K + np.arange(1, m + 1)) + weight * max(row["p_table"] - centre, 0.0) * share / RRF_K
        return [int(i) for i in np.argsort(-fused, kind="stable")] + list(range(m, n))

    return lever


def gated_slot(slot: int, threshold: float) -> Callable[[dict[str, Any]], list[int]]:
    """When P(table) >= ``threshold`` and the first ``slot`` places hold no table, the best table of
    the first 20 takes place ``slot`` + 1 (the rest shift down)."""

    def lever(row: dict[str, Any]) -> list[int]:
        n = len(row["y"])
        order = list(range(n))
        if row["p_table"] < threshold or row["table"][:slot].any():
            return order
        best = next((i for i in range(slot, min(TOP, n)) if row["table"][i]), None)
        if best is not None:
            order.remove(best)
            order.insert(slot, best)
        return order

    return lever


def squad_rows(log: Callable[[str], None]) -> list[dict[str, Any]]:
    from bench.head_encoders import squad_heads

    rows = squad_heads(log)
    for row in rows:  # SQuAD's chunks are prose: a table is a chunk the chunker typed so (none expected)
        row.setdefault("table", np.array([t.lstrip().startswith("|") for t in row["texts"]]))
        row.setdefault("terms", [])  # the label levers read no terms: tables are all they move
    return rows


def evaluate(rows: list[dict[str, Any]], lever: Callable[[dict[str, Any]], list[int]] | None) -> dict[str, Any]:
    ranks, chars, strict = [], [], 0
    for row in rows:
        order = lever(row) if lever is not None else list(range(len(row["y"])))
        ranks.append(hl.first_hit(row["y"][order]))
        chars += [len(row["texts"][i]) for i in order[:5]]
        if "strict" in row:
            strict += bool(row["strict"][order[:5]].any())
    n = len(rows)
    return {"hit@5": sum(r is not None and r <= 5 for r in ranks) / n,
            "mrr": sum(1 / r for r in ranks if r is not None and r <= 5) / n, "strict": strict / n,
            "chars": statistics.median(chars), "top5": [r is not None and r <= 5 for r in ranks]}


VARIANTS = (("table or mixed, vector", False, False), ("table or mixed, vector + shape", False, True),
            ("table only, vector", True, False))


def first_gold_table(rows: list[dict[str, Any]], probs: np.ndarray) -> str:
    """How well P(table) separates the questions whose first relevant candidate (first 20) is a table."""
    from sklearn.metrics import roc_auc_score

    ys, ps = [], []
    for row, p in zip(rows, probs, strict=True):
        hits = np.flatnonzero(row["y"][:TOP])
        if len(hits):
            ys.append(bool(row["table"][hits[0]]))
            ps.append(p)
    if len(set(ys)) < 2:
        return "no tables among the first relevant"
    return f"AUC vs first relevant is a table {roc_auc_score(ys, ps):.2f} ({sum(ys)} of {len(ys)} tables)"


def levers(prior: float) -> list[tuple[str, Callable[[dict[str, Any]], list[int]]]]:
    out: list[tuple[str, Callable[[dict[str, Any]], list[int]]]] = []
    for centre in (0.0, round(prior, 2), 0.5):
        out += [(f"boost w={w} c={centre}", boost(w, centre)) for w in (0.05, 0.1, 0.2, 0.4, 0.8)]
    for centre in (0.6, 0.7, 0.8, 0.9):
        out += [(f"promote w={w} c={centre}", boost(w, centre, side="up")) for w in (0.1, 0.2, 0.4, 0.8)]
    for centre in (0.3, 0.5, 0.7):
        out += [(f"demote w={w} c={centre}", boost(w, centre, side="down")) for w in (0.1, 0.2, 0.4, 0.8)]
    for centre in (0.0, 0.5, 0.6, 0.7):
        out += [(f"labelled w={w} c={centre}", labelled_promote(w, centre)) for w in (0.1, 0.2, 0.4, 0.8)]
    out += [(f"gated slot {k} t={t}", gated_slot(k, t)) for k in (2, 4) for t in (0.0, 0.5, 0.7, 0.85)]
    out += [(f"gated labels w={w}", gated_labels(w)) for w in (0.1, 0.2, 0.3, 0.5)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-squad", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    from mcp_server.core.settings import Settings
    from mcp_server.embedding.registry import ModelRegistry

    fast = ModelRegistry.load(Settings(log_dir=None)).fast
    seen: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:  # each question embedded once per run
        missing = [t for t in dict.fromkeys(texts) if t not in seen]
        if missing:
            seen.update(zip(missing, np.asarray(fast.embed_queries(missing), dtype=np.float64), strict=True))
        return np.stack([seen[t] for t in texts])

    print(f"load average {load_average()}")
    held_out(embed)
    data = dict(hl.heads(log))
    data.pop("dev named")  # the named phrasings' heads are the plain ones ("asked" drops the naming)
    if not args.no_squad:
        data["squad"] = squad_rows(log)
    names = list(data)
    baseline = {n: evaluate(data[n], None) for n in names}

    def cells(lever: Callable[[dict[str, Any]], list[int]] | None) -> list[tuple[dict[str, Any], int, int]]:
        out = []
        for n in names:
            r = evaluate(data[n], lever)
            won = sum(a and not b for a, b in zip(r["top5"], baseline[n]["top5"], strict=True))
            lost = sum(b and not a for a, b in zip(r["top5"], baseline[n]["top5"], strict=True))
            out.append((r, won, lost))
        return out

    def line(label: str, result: list[tuple[dict[str, Any], int, int]]) -> str:
        text = []
        for n, (r, won, lost) in zip(names, result, strict=True):
            extra = f" s{r['strict']:.3f}" if n == "squad" else ""
            text.append(f"{r['hit@5']:.3f}/{r['mrr']:.3f}{extra} {r['chars']:5.0f} +{won}-{lost}")
        return label.ljust(26) + " ".join(f"{c:>28s}" for c in text)

    for variant, table_only, use_shape in VARIANTS:
        every = tatqa("dev", table_only) + tatqa("test_gold", table_only)
        prior = float(np.mean([t for _, t, _ in every]))
        gate = Gate(embed, use_shape).fit([q for q, _, _ in every], np.array([t for _, t, _ in every]))
        print(f"\n== gate: {variant} (TAT-QA prior {prior:.2f})")
        for name, rows in data.items():
            probs = gate.p([row["query"] for row in rows])
            for row, p in zip(rows, probs, strict=True):
                row["p_table"] = float(p)
            print(describe(name, probs) + ("" if name == "squad" else "  " + first_gold_table(rows, probs)))
        print("lever".ljust(26) + " ".join(f"{n + ' h5/MRR chars':>28s}" for n in names))
        print(line("today", cells(None)))
        results = [(label, cells(lever)) for label, lever in levers(prior)]
        for label, result in results:
            print(line(label, result), flush=True)
        for pick, other in (("dev", "dev2"), ("dev2", "dev")):  # chosen on one set, read on the other
            i, j = names.index(pick), names.index(other)
            fair = [(lab, res) for lab, res in results if res[i][0]["hit@5"] >= baseline[pick]["hit@5"]]
            lab, res = max(fair, key=lambda x: (x[1][i][0]["mrr"], x[1][i][0]["hit@5"]))
            print(f"chosen on {pick} (best MRR, hit@5 not lower): {lab}: {other} "
                  f"{res[j][0]['hit@5']:.3f}/{res[j][0]['mrr']:.3f} +{res[j][1]}-{res[j][2]}")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
