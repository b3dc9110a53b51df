"""Language detection: seeded, majority vote, "en" fallback, names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.text.language import (
    LANGUAGE_NAMES,
    _counted_script,
    detect_language,
    dominant_script,
    language_detection_available,
    language_name,
)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("The quick brown fox jumps over the lazy dog and keeps running through the field.", "en"),
        ("Todos los seres humanos nacen libres e iguales en dignidad y derechos.", "es"),
        ("Tous les êtres humains naissent libres et égaux en dignité et en droits.", "fr"),
        ("Alle Menschen sind frei und gleich an Würde und Rechten geboren.", "de"),
        ("人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心。", "zh-cn"),
        ("すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。", "ja"),
    ],
)
def test_common_languages_are_detected(text: str, code: str) -> None:
    assert detect_language(text) == code


@pytest.mark.parametrize("text", ["", "hi", "   ok    ", "12345 678", "!!!???..."])
def test_short_or_letterless_text_falls_back_to_english(text: str) -> None:
    assert detect_language(text) == "en"


def test_detection_is_deterministic() -> None:
    text = "Ceci est un petit texte en français pour vérifier la détection."
    assert len({detect_language(text) for _ in range(5)}) == 1


def test_names_cover_the_18_languages_of_the_design() -> None:
    assert len(set(LANGUAGE_NAMES.values())) == 18
    assert language_name("zh-tw") == "Chinese"
    assert language_name("ko") == "ko"  # unknown codes are returned as they are


def test_langdetect_is_available() -> None:
    assert language_detection_available()


def test_passages_in_another_script_get_their_own_language_from_a_few_detector_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_server.text import language

    calls: list[int] = []
    detect = language.detect_language
    monkeypatch.setattr(language, "detect_language",
                        lambda text, runs=3: calls.append(runs) or detect(text, runs=runs))
    russian = "Это длинное предложение на русском языке о погоде и о городе. " * 3
    texts = ["An English sentence about the weather in the city, long enough."] * 3 + [russian] * 10
    assert language.passage_languages(texts, "en", "Latin") == ["en"] * 3 + ["ru"] * 10
    assert calls == [1] * language.SCRIPT_SAMPLES  # one run each: the sampled passages vote


def test_the_sparse_profiles_give_langdetects_own_probabilities_to_the_last_bit() -> None:
    from langdetect import DetectorFactory, detector_factory

    from mcp_server.text.language import SparseProfiles, load_profiles

    load_profiles()
    sparse = detector_factory._factory
    assert isinstance(sparse.word_lang_prob_map, SparseProfiles)
    dense = DetectorFactory()
    dense.load_profile(detector_factory.PROFILES_DIRECTORY)  # langdetect's own loader: lists of floats
    assert dense.langlist == sparse.langlist
    assert set(dense.word_lang_prob_map) == set(sparse.word_lang_prob_map)
    for word in list(dense.word_lang_prob_map)[::97]:
        assert sparse.word_lang_prob_map[word] == dense.word_lang_prob_map[word]
    texts = ["Alle Menschen sind frei und gleich an Würde und Rechten geboren.", "What were the revenues?",
             "人人生而自由，在尊严和权利上一律平等。", "Защита уступила всего 308 очков.",
             "Les êtres humains naissent libres."]
    DetectorFactory.seed = 0
    for text in texts:
        runs = []
        for factory in (dense, sparse):
            detector = factory.create()
            detector.append(text)
            runs.append([(found.lang, found.prob) for found in detector.get_probabilities()])
        assert runs[0] == runs[1]


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=300) | st.sampled_from(["", "123 !?", "abc"]))
def test_dominant_script_of_ascii_text_is_the_counted_one(text: str) -> None:
    assert dominant_script(text) == _counted_script(text[:2000])


def test_dominant_script_counts_past_ascii() -> None:
    assert dominant_script("abc ÿ") == "Latin"
    assert dominant_script("ab \u0416\u0416\u0416") == "Cyrillic"
    assert dominant_script("12 \u00aa\u00ba") == ""  # ordinal indicators are letters, but no script's here
