"""The learned ranker: the bundled model loads, and the index orders its head by it where it applies."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from mcp_server.encoders import FakeEmbedder
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.index import fused_head, signals
from mcp_server.retrieval.learned import (
    FEATURES,
    MODEL_PATH,
    ChunkFacts,
    LearnedRanker,
    Trees,
    bundled,
    digit_share,
    number_signals,
    numbers_of,
)
from tests.retrieval._chunks import make_chunks

TEXTS = [
    "Revenue grew in the year as the company sold more services; revenue growth came from new customers.",
    "The weather in the region was mild, and the harbour stayed open through the winter months.",
    "| Item | 2023 | 2022 |\n| --- | --- | --- |\n| Revenue | 4,210 | 3,950 |\n| Cost of revenue | 2,100 | 2,020 |",
    "Our employees volunteered in local schools and planted trees along the river.",
    "Management discussed revenue, the revenue outlook and how revenue is recognised over time.",
]


def build(
    texts: list[str], *, table: int | None = None, language: str = "", key: str = "",
) -> tuple[DocumentIndex, FakeEmbedder]:
    embedder = FakeEmbedder()
    chunks = make_chunks(texts, language=language)
    if table is not None:
        chunks[table] = dataclasses.replace(chunks[table], content_type="table")
    vectors = embedder.embed([c.text for c in chunks])
    return DocumentIndex.build(chunks, vectors, model_id=embedder.model_id, key=key), embedder


def ranked(index: DocumentIndex, embedder: FakeEmbedder, query: str, ranker: LearnedRanker | None) -> list[str]:
    return [h.chunk.text for h in index.search(embedder.embed_query(query), query, 5, ranker=ranker)]


def test_the_bundled_model_loads_with_the_features_this_code_computes() -> None:
    body = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    model = bundled()
    assert model.names == FEATURES == tuple(body["features"])
    assert len(model.weights) == len(model.mean) == len(model.scale) == len(FEATURES)
    assert np.all(model.scale > 0)
    assert body["trained_on"]["data"].startswith("TAT-QA")
    if model.trees is not None:  # every split reads one of the features, every tree ends in leaves
        inner = model.trees.feature >= 0
        assert model.trees.feature[inner].max() < len(FEATURES)
        assert (~inner).sum() >= 2 * len(model.trees.roots)
    assert MODEL_PATH.stat().st_size < 1_000_000


def test_a_model_of_trees_sums_the_leaf_each_candidate_reaches() -> None:
    table, numbers = FEATURES.index("table"), FEATURES.index("query_numbers")
    trees = Trees.from_dict({
        # tree 1: table <= 0.5 ? -1 : +1;  tree 2: query_numbers <= 0.5 ? 0 : +0.5
        "feature": [table, -1, -1, numbers, -1, -1], "threshold": [0.5, 0, 0, 0.5, 0, 0],
        "left": [1, -1, -1, 4, -1, -1], "right": [2, -1, -1, 5, -1, -1],
        "value": [0, -1.0, 1.0, 0, 0.0, 0.5], "roots": [0, 3],
    })
    x = np.zeros((3, len(FEATURES)))
    x[1, table] = 1.0
    x[2, [table, numbers]] = 1.0
    assert trees.scores(x).tolist() == [-1.0, 1.0, 1.5]
    zero = np.zeros(len(FEATURES))
    model = LearnedRanker(model_id="t", names=FEATURES, mean=zero, scale=zero + 1, weights=zero, head=20, trees=trees)
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    assert ranked(index, embedder, query, None)[0] != TEXTS[2]
    assert ranked(index, embedder, query, model)[0] == TEXTS[2]


def test_the_number_signals_count_the_candidates_numbers_and_the_querys_among_them() -> None:
    counts, shares = number_signals("Revenue in 2023 and 2022?", [TEXTS[2], TEXTS[0], "In 2023 we grew."])
    assert counts.tolist() == [6.0, 0.0, 1.0]  # 2023, 2022, 4210, 3950, 2100, 2020
    assert shares.tolist() == [1.0, 0.0, 0.5]
    assert number_signals("What is revenue?", [TEXTS[2]])[1].tolist() == [0.0]


def test_a_model_for_other_features_is_refused() -> None:
    body = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="features"):
        LearnedRanker.from_dict({**body, "features": [*body["features"][1:], "something else"]})


def test_the_learned_ranker_reorders_the_head_of_an_english_index() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    fused = ranked(index, embedder, query, None)
    learned = ranked(index, embedder, query, LearnedRanker.fake(table=1.0))
    assert fused[0] != TEXTS[2]
    assert learned[0] == TEXTS[2]
    assert sorted(learned) == sorted(fused)  # the same results, another order


def test_the_learned_order_keeps_the_fused_order_among_equal_scores() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    assert ranked(index, embedder, query, LearnedRanker.fake()) == ranked(index, embedder, query, None)


def test_a_document_in_another_language_keeps_the_fused_order() -> None:
    index, embedder = build(TEXTS, table=2, language="de")
    query = "What was revenue in 2023?"
    assert index.languages == ["de"]
    assert ranked(index, embedder, query, LearnedRanker.fake(table=1.0)) == ranked(index, embedder, query, None)


def test_a_partial_index_keeps_the_fused_order() -> None:
    embedder = FakeEmbedder()
    chunks = make_chunks(TEXTS)
    chunks[2] = dataclasses.replace(chunks[2], content_type="table")
    partial = DocumentIndex.embed(chunks, embedder, only=[0, 2, 4])
    query = "What was revenue in 2023?"
    assert partial.coverage < 1
    assert ranked(partial, embedder, query, LearnedRanker.fake(table=1.0)) == ranked(partial, embedder, query, None)


def test_the_pool_takes_each_documents_learned_order() -> None:
    from mcp_server.retrieval.pool import PoolSource, search_pool

    index, embedder = build(TEXTS, table=2, key="k" * 32)
    query = "What was revenue in 2023?"

    def embed(model_id: str, text: str) -> np.ndarray:
        return embedder.embed_query(text)

    def pooled(ranker: LearnedRanker | None) -> list[str]:
        hits = search_pool([PoolSource(index=index)], [query], embed, top_k=5, ranker=ranker)
        return [h.hit.chunk.text for h in hits]

    assert pooled(None)[0] != TEXTS[2]
    assert pooled(LearnedRanker.fake(table=1.0))[0] == TEXTS[2]


def test_the_signals_describe_the_candidates() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "revenue 2023"
    head = fused_head(index, embedder.embed_query(query), query, 5)
    found = signals(index, query, head)
    at = [c.pos for c in head].index(2)
    assert found.table[at] and found.table.sum() == 1
    assert found.digits[at] > 0.1
    assert found.presence.shape == (2, len(head))  # "revenue" and "2023"
    assert found.presence[:, at].all()
    assert found.numeric_query
    assert found.query_numbers[at] == 1.0 and found.numbers[at] == 6


def _script(name: str):  # type: ignore[no-untyped-def]
    """The module of ``scripts/<name>.py`` (the scripts are not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CONTEXT = {
    "table": {"table": [["", "2019", "2018"], ["Total net sales", "$1,496.5", "$1,202.9"],
                        ["Cost of services", "801.1", "700.4"]]},
    "paragraphs": [{"order": 1, "text": "Sales by contract type: substantially all of our contracts are fixed-price."},
                   {"order": 2, "text": "On a cost-plus contract we are paid our incurred costs plus a fee."}],
}


def test_training_labels_the_chunk_that_holds_the_gold_paragraph_or_table() -> None:
    script = _script("train_ranker")
    text = script.markdown(CONTEXT)
    table, *paragraphs = text.split("\n\n")
    assert table.startswith("| ") and "Total net sales" in table and len(paragraphs) == 2
    from_text = script.gold_tests(CONTEXT, {"rel_paragraphs": ["2"], "answer_from": "text", "answer": ["fee"]})
    from_table = script.gold_tests(CONTEXT, {"rel_paragraphs": [], "answer_from": "table", "answer": ["1,496.5"],
                                             "derivation": ""})
    chunks = [script.norm(part) for part in (table, *paragraphs)]
    assert [any(t(c) for t in from_text) for c in chunks] == [False, False, True]
    assert [any(t(c) for t in from_table) for c in chunks] == [True, False, False]


def test_the_pairwise_fit_puts_what_is_relevant_first() -> None:
    script = _script("train_ranker")
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(40):
        x = rng.normal(size=(10, len(FEATURES)))
        y = np.zeros(10, dtype=bool)
        y[rng.integers(10)] = True
        x[y, FEATURES.index("table")] += 3.0  # the relevant candidate is told by one feature
        rows.append({"doc": 0, "x": x, "y": y})
    model = script.fit_linear(rows)
    assert script.evaluate(rows, model, with_fusion=False)["mrr"] > 0.9 > script.evaluate(rows, None)["mrr"]
    assert int(np.argmax(np.abs(model["weights"]))) == FEATURES.index("table")


def test_lambdamart_puts_what_is_relevant_first_and_loads_as_the_server_reads_it() -> None:
    script = _script("train_ranker")
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(200):
        x = rng.normal(size=(10, len(FEATURES)))
        y = np.zeros(10, dtype=bool)
        y[rng.integers(10)] = True
        x[:, FEATURES.index("table")] = y & (x[:, 0] > -5)  # the relevant candidate is the table
        rows.append({"doc": 0, "x": x, "y": y})
    model = script.fit_trees(rows)
    assert script.evaluate(rows, model, with_fusion=False)["mrr"] > 0.9 > script.evaluate(rows, None)["mrr"]
    assert script.evaluate(rows, model)["mrr"] > script.evaluate(rows, None)["mrr"]  # with the fusion too
    used = script.ranker(model).trees.feature
    assert set(used[used >= 0].tolist()) == {FEATURES.index("table")}


def test_ordered_with_the_fusion_a_candidate_moves_only_as_far_as_both_places_agree() -> None:
    alone = LearnedRanker.fake()
    together = dataclasses.replace(alone, with_fusion=True)
    scores = np.array([0.5, 0.1, 0.9, 0.0, -1.0])  # the model puts the fusion's third first
    assert alone.ranked(scores) == [2, 0, 1, 3, 4]
    assert together.ranked(scores) == [0, 2, 1, 3, 4]  # 1/61 + 1/62 > 1/63 + 1/61 > 1/62 + 1/63
    assert together.ranked(np.zeros(5)) == [0, 1, 2, 3, 4]


def test_the_bundled_model_orders_a_real_head_and_keeps_its_candidates() -> None:
    index, embedder = build(TEXTS, table=2)
    query = "What was revenue in 2023?"
    fused = ranked(index, embedder, query, None)
    learned = ranked(index, embedder, query, bundled())
    assert sorted(learned) == sorted(fused)


def test_a_chunks_numbers_are_read_once_and_as_from_its_text() -> None:
    chunks = make_chunks(["Revenue was 1,234.5 in 2023 and 987 in 2022.", "No figures here."])
    facts = ChunkFacts(chunks)
    numbers, digits = facts.of([1, 0, 1])
    assert numbers == [frozenset(), frozenset(numbers_of(chunks[0].text)), frozenset()]
    assert numbers[1] == {"12345", "2023", "987", "2022"}
    assert digits.tolist() == [digit_share(chunks[1].text), digit_share(chunks[0].text), 0.0]
    assert facts.of([0])[0][0] is numbers[1]  # the second time from what was read


MANUAL = """# The manual

## `fs.readFile()` and [its options](#options)

Reads the whole file into memory before it calls back. Use a stream for large files.

```js
## not a heading: inside a fence
```

| option | default |
| --- | --- |
| encoding | null |

## Examples

Short.

## Examples

Also short.
"""


def test_a_manuals_sections_are_its_headings_as_written_and_the_paragraphs_under_them() -> None:
    script = _script("ranker_sections")
    sections = script.markdown_sections(MANUAL)
    assert [heading for heading, _ in sections] == ["The manual", "fs.readFile() and its options", "Examples",
                                                    "Examples"]
    _, paragraphs = sections[1]
    assert paragraphs[0].startswith("Reads the whole file") and paragraphs[1].startswith("| option")
    assert not any("inside a fence" in p for _, ps in sections for p in ps)
    assert script.clean("C. REVIEW AND CONFIRMATION OF PLAN") == "REVIEW AND CONFIRMATION OF PLAN"
    script.MIN_BODY = 20  # a heading the pool repeats ("Examples") or over too little text asks nothing
    assert [h for h, _ in script.usable(sections)] == ["fs.readFile() and its options"]


def test_a_sections_lead_sentence_becomes_its_question_and_leaves_the_section() -> None:
    script = _script("ranker_sections")
    asked = script.lead(script.markdown_sections(MANUAL))
    question, paragraphs, heading = asked[1]
    assert question == "Reads the whole file into memory before it calls back."
    assert paragraphs[0] == "Use a stream for large files." and heading == "fs.readFile() and its options"
    assert asked[2][0] == ""  # "Short." is no sentence to ask


def test_strict_labels_take_the_gold_table_and_not_another_reports_with_the_same_rows() -> None:
    script = _script("train_ranker")
    question = {"uid": "q", "rel_paragraphs": [], "answer_from": "table", "answer": ["1,496.5"], "derivation": ""}
    own = dict(CONTEXT, table=dict(CONTEXT["table"], uid="own"), questions=[question])
    other = {"table": {"uid": "other", "table": [["", "2017", "2016"], ["Total net sales", "$930.2", "$877.6"],
                                                 ["Cost of services", "512.3", "498.0"]]},
             "paragraphs": [], "questions": []}
    texts = [script.norm(script.markdown(other)), script.norm(script.markdown(own))]
    loose = script.gold_tests(own, question)
    assert [any(t(text) for t in loose) for text in texts] == [True, True]  # half the row labels suffice
    row = {"doc": 0, "texts": texts, "context": "own", "question": "q", "y": np.array([True, True])}
    (relabelled,) = script.strict([row], [own, other], 278)
    assert relabelled["y"].tolist() == [False, True]


def test_each_questions_gate_value_comes_from_a_gate_that_never_saw_its_report() -> None:
    gate = _script("ranker_gate")
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(20), 5)  # 20 reports of 5 questions
    vectors = rng.normal(size=(100, 8))
    y = (groups % 2).astype(int)  # a report's label: learnable only from that report's own questions
    vectors[:, 0] += groups * 0.01  # nothing else tells the labels apart
    p = gate.out_of_fold(vectors, y, groups, folds=5)
    fitted = gate.fit(vectors, y).p(vectors)
    held = groups % 5 == 0
    alone = gate.fit(vectors[~held], y[~held]).p(vectors[held])
    assert np.allclose(p[held], alone)  # the fold's values are the other folds' gate's
    assert np.mean((fitted >= 0.5) == y) > np.mean((p >= 0.5) == y)  # the whole fit memorises, out of fold not


def test_a_gated_model_and_its_gate_load_from_files_and_order_a_head(tmp_path) -> None:  # type: ignore[no-untyped-def]
    gate = _script("ranker_gate")
    script = _script("train_ranker")
    rng = np.random.default_rng(0)
    rows = []
    for i in range(200):
        p = 0.1 + 0.8 * (i % 2)  # half the questions ask for a table, whose candidate is then the relevant one
        table = np.zeros(10, dtype=bool)
        table[rng.integers(10)] = True
        y = table.copy() if p > 0.5 else ~table & (np.arange(10) == (np.flatnonzero(~table)[0]))
        x = np.hstack([np.zeros((10, len(FEATURES))), gate.columns(p, table)])
        x[:, FEATURES.index("table")] = table
        rows.append({"doc": 0, "x": x, "y": y})
    model = script.fit_trees(rows)
    body = {"model_id": "gated", "features": list(FEATURES) + list(gate.GATE_FEATURES), "head": 20,
            "with_fusion": False, **{k: np.asarray(v).tolist() for k, v in model.items() if k != "trees"},
            "trees": model["trees"]}
    path = tmp_path / "gated.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    gate.Gate(weights=np.array([8.0] + [0.0] * 7), intercept=0.0).save(gate.gate_path(path))
    ranker = gate.load(path)
    assert gate.is_gated(path) and ranker.head == 20
    index, embedder = build(TEXTS, table=2)
    head = fused_head(index, index.query_vector("revenue", embedder.embed_query), "revenue", 5)[:20]
    facts = signals(index, "revenue", head)
    table_at = int(np.flatnonzero(facts.table)[0])
    asks_table, asks_text = np.eye(8)[0], -np.eye(8)[0]  # P(table) ~1 and ~0 through the gate's weights
    assert ranker.order(facts, asks_table)[0] == table_at
    assert ranker.order(facts, asks_text)[0] != table_at
    with pytest.raises(ValueError, match="vector"):
        ranker.order(facts)  # the gate must be given the question
