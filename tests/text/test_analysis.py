"""BM25 reads every language as Lucene's language analyzers do: words of any script, segmented
where the script has no spaces, stopwords and stems of the document's language."""

from __future__ import annotations

import numpy as np
import pytest
import regex

from mcp_server.retrieval.index import DocumentIndex
from mcp_server.text import analysis
from mcp_server.text.analysis import ThaiDictionary, analyzer_for, base_language, query_tokens, warm_analyzers
from mcp_server.text.lexical import bm25_tokens
from tests.conftest import DOCS, qa_set
from tests.retrieval._chunks import make_chunks

ZH = [
    "黑豹队的防守只丢了308分，在联赛中排名第六，同时也以24次拦截领先国家橄榄球联盟。",
    "超级碗50是一场美式橄榄球比赛，旨在决定国家橄榄球联盟2015赛季的冠军。",
    "这座城市的人口在过去十年里增长了百分之五，主要来自移民。",
]


def test_english_reads_as_it_always_has() -> None:
    text = "The Normans were located in Normandy, 30,583 people in FY2022."
    assert analyzer_for("en").tokens([text]) == bm25_tokens([text])


def test_a_chinese_query_matches_its_chinese_passage_through_bm25_alone() -> None:
    chunks = make_chunks(ZH, language="zh-cn")
    index = DocumentIndex.build(chunks, np.eye(3, 8, dtype=np.float32), model_id="fake")
    assert index.languages == ["zh"]
    assert index.bm25_top("哪支球队赢得了2015赛季的冠军？", 3)[0] == 1
    assert index.bm25_top("黑豹队丢了多少分？", 3)[0] == 0
    vec = np.zeros(8, dtype=np.float32)
    assert index.search(vec, "城市人口增长了多少？", 1, mode="bm25")[0].chunk.chunk_index == 2


def test_han_text_is_read_as_overlapping_bigrams_and_a_lone_character_stays() -> None:
    assert analyzer_for("zh").tokens(["橄榄球 赛"]) == [["橄榄", "榄球", "赛"]]


def test_devanagari_words_keep_their_vowel_signs() -> None:
    tokens = analyzer_for("xx").tokens(["भारत की राजधानी नई दिल्ली है"])[0]  # no stemmer: plain words
    assert "राजधानी" in tokens and "दिल्ली" in tokens


def test_thai_is_segmented_into_words() -> None:
    tokens = analyzer_for("th").tokens(["ทีมรับของแพนเธอร์สเสียคะแนนเพียง 308 คะแนน"])[0]
    assert "คะแนน" in tokens and "308" in tokens
    assert all(len(t) < 12 for t in tokens)


def test_a_language_with_a_snowball_stemmer_matches_inflected_forms() -> None:
    de = analyzer_for("de")
    assert de.tokens(["Häuser"])[0] == de.tokens(["Haus"])[0]
    ru = analyzer_for("ru")
    assert ru.tokens(["городами"])[0] == ru.tokens(["город"])[0] == ["город"]


def test_stopwords_of_the_language_are_dropped() -> None:
    assert analyzer_for("de").tokens(["der und die"]) == [[]]
    assert analyzer_for("es").tokens(["el de la casa"])[0] == analyzer_for("es").tokens(["casa"])[0]


def test_case_and_compatibility_forms_are_folded() -> None:
    assert analyzer_for("de").tokens(["ＳＴＲＡẞＥ"]) == analyzer_for("de").tokens(["strasse"])


def test_a_mixed_document_reads_the_query_in_each_of_its_languages() -> None:
    tokens = query_tokens("Häuser 超级碗", ["de", "zh"])
    assert analyzer_for("de").tokens(["Häuser"])[0][0] in tokens and "超级" in tokens
    assert len(tokens) == len(set(tokens))


def test_region_codes_share_their_language_analyzer() -> None:
    assert base_language("zh-CN") == "zh"
    assert analyzer_for("zh-cn") is analyzer_for("zh")


@pytest.mark.parametrize("language", ["en", "de", "zh", "th", "hi", "ar", "ru", "xx", ""])
def test_no_text_gives_no_tokens(language: str) -> None:
    assert analyzer_for(language).tokens(["", " \n ", "!?"]) == [[], [], []]


def _thai_runs(text: str) -> list[str]:
    return list(regex.findall(r"\p{Thai}+", text))


def _segmented_with_pythainlps_trie(runs: list[str]) -> list[list[str]]:
    from pythainlp.tokenize import word_tokenize

    return [[w for w in word_tokenize(run, engine="newmm", keep_whitespace=False) if w.strip()] for run in runs]


def test_thai_words_are_the_ones_pythainlps_own_dictionary_gives() -> None:
    runs = _thai_runs((DOCS / "txt" / "UDHR_first_article_all.txt").read_text(encoding="utf-8"))
    assert runs
    assert [analysis._thai_words(run) for run in runs] == _segmented_with_pythainlps_trie(runs)


def test_a_whole_thai_article_is_segmented_as_pythainlps_dictionary_does() -> None:
    runs = _thai_runs((qa_set("xquad-dev") / "th" / "doc.txt").read_text(encoding="utf-8"))
    assert len(runs) > 1000
    assert [analysis._thai_words(run) for run in runs] == _segmented_with_pythainlps_trie(runs)


def test_the_thai_dictionary_lists_every_word_starting_at_a_position_shortest_first() -> None:
    from pythainlp.util import Trie

    words = ["สวัส", "สวัสดี", "ดี", "ครับ", " ครับผม "]
    ours, theirs = ThaiDictionary(words), Trie(words)
    text = "สวัสดีครับผมดี"
    for start in range(len(text)):
        assert ours.prefixes(text, start) == theirs.prefixes(text, start)
    assert ours.prefixes(text) == ["สวัส", "สวัสดี"]
    assert "ครับผม" in ours and len(ours) == 5


def test_warming_loads_the_thai_dictionary_only_for_a_text_with_thai_in_it() -> None:
    analysis._thai_dictionary_unlocked.cache_clear()
    warm_analyzers("Die Verteidigung der Panthers 超级碗 भारत")
    assert analysis._thai_dictionary_unlocked.cache_info().currsize == 0
    warm_analyzers("Panthers ทีมรับของแพนเธอร์ส")
    assert analysis._thai_dictionary_unlocked.cache_info().currsize == 1
