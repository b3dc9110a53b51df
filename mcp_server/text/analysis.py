"""Lexical analysis for BM25 in the document's language: the same analyzer reads chunks and queries.

One ``Analyzer`` per language, after Lucene's and Elasticsearch's language analyzers:

- English: ``lexical.bm25_tokens`` (words of two or more word characters, bm25s' English
  stopwords, English Snowball), the analyzer the English ranking constants are measured with.
- Every other language: NFKC and case folding; words are runs of letters, combining marks and
  digits (a plain ``\\w`` cuts Devanagari, Thai and Arabic words at their vowel signs); scripts
  written without spaces are segmented: Han, kana and Hangul into overlapping character bigrams
  (Lucene's CJK bigram analyzer; a lone character stays a unigram), Thai into dictionary words
  (PyThaiNLP's maximal matching; without it, bigrams), Lao, Khmer and Myanmar into bigrams; then
  the language's stopwords (Snowball's lists, else stopwords-iso) and its Snowball stemmer where one
  exists.

Language codes are ISO 639-1 as ``text.language`` detects them ("zh-cn" counts as "zh").
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import cache, lru_cache

import regex

from mcp_server.text.lexical import bm25_tokens, lexical_text

__all__ = [
    "ANALYSIS_VERSION", "Analyzer", "ThaiDictionary", "analyzer_for", "base_language", "query_tokens",
    "warm_analyzers",
]

# Bump when any analyzer reads the same text into other tokens: tokens stored with an index
# (indexes/lexical.py) under another version are analysed again.
ANALYSIS_VERSION = 1

# Snowball stemmers by ISO 639-1 code (PyStemmer's algorithm names).
_SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian", "fa": "persian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
_BIGRAM_SCRIPTS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Lao}\p{Khmer}\p{Myanmar}"
# Thai first (segmented), then the bigram scripts, then words of every other script.
_TOKENS = regex.compile(
    rf"(?P<thai>[\p{{Thai}}]+)|(?P<bigram>[{_BIGRAM_SCRIPTS}]+)"
    rf"|(?P<word>(?:(?![{_BIGRAM_SCRIPTS}\p{{Thai}}])[\p{{L}}\p{{M}}\p{{N}}])+)",
    regex.V1,
)


def base_language(code: str) -> str:
    """``zh-cn`` -> ``zh``: the analyzers are per language, not per region."""
    return (code or "").lower().split("-")[0]


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


class ThaiDictionary:
    """PyThaiNLP's word list as newmm's dictionary: the same ``prefixes`` as its ``Trie`` (every
    listed word that starts at a position, shortest first), from two sets. Hand-written because
    the ``Trie`` builds a Python node per letter of 62,000 words (over a second of one core on a
    document's first call); the sets take a fifth of that, and newmm reads nothing but
    ``prefixes`` and the dictionary's truth."""

    def __init__(self, words: Iterable[str]) -> None:
        self._words = frozenset(word.strip() for word in words if word.strip())
        self._prefixes = frozenset(word[:end] for word in self._words for end in range(1, len(word)))

    def prefixes(self, text: str, start: int = 0) -> list[str]:
        found: list[str] = []
        words, prefixes = self._words, self._prefixes
        for end in range(start + 1, len(text) + 1):
            piece = text[start:end]
            if piece in words:
                found.append(piece)
            if piece not in prefixes:
                break
        return found

    def __contains__(self, word: object) -> bool:
        return word in self._words

    def __len__(self) -> int:
        return len(self._words)


_THAI_LOCK = threading.Lock()


@cache
def _thai_dictionary_unlocked() -> ThaiDictionary | None:
    try:
        from pythainlp.corpus import thai_words
    except ImportError:  # pragma: no cover - pythainlp is a declared dependency
        return None
    return ThaiDictionary(thai_words())


def _thai_dictionary() -> ThaiDictionary | None:
    """The dictionary, loaded once: a caller that arrives during the load (``warm_analyzers``'s
    thread and a document's analysis) waits for it instead of loading it again."""
    with _THAI_LOCK:
        return _thai_dictionary_unlocked()


def _thai_words(run: str) -> list[str]:
    dictionary = _thai_dictionary()
    if dictionary is None:  # pragma: no cover - pythainlp is a declared dependency
        return _bigrams(run)
    from pythainlp.tokenize import word_tokenize

    return [w for w in word_tokenize(run, engine="newmm", custom_dict=dictionary,  # type: ignore[arg-type]
                                     keep_whitespace=False) if w.strip()]


_THAI = regex.compile(r"\p{Thai}")


def warm_analyzers(text: str) -> None:
    """Load now what analysing ``text`` will need and takes long to load (the Thai dictionary):
    called in a thread of its own when a document arrives, while it is chunked."""
    if _thai_dictionary_unlocked.cache_info().currsize == 0 and _THAI.search(text):
        _thai_dictionary()


# Snowball's short stopword lists (as bm25s ships them) where there is one: stopwords-iso's longer
# lists also hold content words ("город", city, in Russian); stopwords-iso for the other languages.
_SNOWBALL_STOPWORDS = {
    "da": "STOPWORDS_DANISH", "nl": "STOPWORDS_DUTCH", "fr": "STOPWORDS_FRENCH", "de": "STOPWORDS_GERMAN",
    "it": "STOPWORDS_ITALIAN", "no": "STOPWORDS_NORWEGIAN", "nb": "STOPWORDS_NORWEGIAN",
    "pt": "STOPWORDS_PORTUGUESE", "ru": "STOPWORDS_RUSSIAN", "es": "STOPWORDS_SPANISH", "sv": "STOPWORDS_SWEDISH",
    "tr": "STOPWORDS_TURKISH",
}


@cache
def _stopwords(language: str) -> frozenset[str]:
    words: tuple[str, ...] | list[str] = ()
    if language in _SNOWBALL_STOPWORDS:
        import bm25s.stopwords

        words = getattr(bm25s.stopwords, _SNOWBALL_STOPWORDS[language])
    else:
        try:
            import stopwordsiso
        except ImportError:  # pragma: no cover - stopwordsiso is a declared dependency
            return frozenset()
        if stopwordsiso.has_lang(language):
            words = sorted(stopwordsiso.stopwords(language))
    return frozenset(unicodedata.normalize("NFKC", w).casefold() for w in words)


class Analyzer:
    """Tokens of texts in one language (chunks and queries alike)."""

    def __init__(self, language: str) -> None:
        self.language = base_language(language)
        self._stem: Callable[[list[str]], list[str]] | None = None
        name = _SNOWBALL.get(self.language)
        if name is not None:
            try:
                import Stemmer

                self._stem = Stemmer.Stemmer(name).stemWords
            except (ImportError, KeyError):  # pragma: no cover - PyStemmer is a declared dependency
                self._stem = None
        self._stop = _stopwords(self.language)

    @property
    def legacy(self) -> bool:
        """English reads with ``lexical.bm25_tokens`` (bm25s' tokenizer with English stemming)."""
        return self.language == "en"

    def tokens(self, texts: Sequence[str], runs: list[list[str] | None] | None = None) -> list[list[str]]:
        """``runs``: gets each text's ``lexical.word_runs`` where read on the way (``bm25_tokens``), else None."""
        if self.legacy:
            return bm25_tokens(texts, runs)
        if runs is not None:
            runs.extend([None] * len(texts))
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[str]:
        folded = unicodedata.normalize("NFKC", lexical_text(text)).casefold()
        words: list[str] = []
        for match in _TOKENS.finditer(folded):
            kind = match.lastgroup
            run = match.group()
            if kind == "word":
                words.append(run)
            elif kind == "bigram":
                words.extend(_bigrams(run))
            else:
                words.extend(_thai_words(run))
        if self._stop:
            words = [w for w in words if w not in self._stop]
        return self._stem(words) if self._stem is not None and words else words

    def __repr__(self) -> str:
        return f"Analyzer({self.language!r})"


def analyzer_for(language: str) -> Analyzer:
    """The (shared, stateless) analyzer of a language; unknown languages get the generic one."""
    return _analyzer(base_language(language) or "en")


@cache
def _analyzer(language: str) -> Analyzer:
    return Analyzer(language)


# Queries whose tokens are remembered: a search over a shelf reads one query in every document's
# index several times (BM25, focus, the learned ranker's presence), ~1-3 ms of tokenizer a time.
QUERY_TOKENS_CACHED = 1024


def query_tokens(query: str, languages: Iterable[str]) -> list[str]:
    """The query read by each language's analyzer, tokens of the first kept first, each once:
    a document mixing languages matches the query in each of its languages."""
    read = tuple(dict.fromkeys(languages))
    if "th" in read:  # Thai words depend on whether its dictionary has loaded yet: read every time
        return _query_tokens(query, read)
    return list(_remembered_query_tokens(query, read))


@lru_cache(maxsize=QUERY_TOKENS_CACHED)
def _remembered_query_tokens(query: str, languages: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_query_tokens(query, languages))


def _query_tokens(query: str, languages: Sequence[str]) -> list[str]:
    if len(languages) == 1:  # as the analyzer reads it, repeated words and all
        return analyzer_for(languages[0]).tokens([query])[0]
    seen: dict[str, None] = {}
    for language in languages:
        for token in analyzer_for(language).tokens([query])[0]:
            seen.setdefault(token, None)
    return list(seen)
