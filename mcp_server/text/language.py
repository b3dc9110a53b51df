"""Which language a text is in: langdetect, seeded, majority vote over three runs.

langdetect samples n-grams at random; the fixed seed makes one run reproducible and the vote
keeps a stray run from deciding. Failures answer "en".
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "LANGUAGE_NAMES", "SparseProfiles", "detect_language", "dominant_script", "language_detection_available",
    "language_name", "language_probabilities", "load_profiles", "passage_languages",
]

# langdetect loads its profiles into a shared factory on first use, and a call racing that load
# answers from half the profiles: every call holds this lock (calls take milliseconds).
_LOCK = threading.Lock()
_MAX_CHARS = 5000
_MIN_CHARS = 10
_RUNS = 3
_DEFAULT = "en"

LANGUAGE_NAMES: dict[str, str] = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "it": "Italian",
    "pt": "Portuguese",
    "hi": "Hindi",
    "bn": "Bengali",
    "te": "Telugu",
    "ta": "Tamil",
    "mr": "Marathi",
    "ml": "Malayalam",
    "kn": "Kannada",
    "gu": "Gujarati",
    "pa": "Punjabi",
    "ur": "Urdu",
    "zh-cn": "Chinese",
    "zh-tw": "Chinese",
    "zh": "Chinese",
    "ja": "Japanese",
}


class SparseProfiles(Mapping[str, list[float]]):
    """langdetect's n-gram profiles with only their non-zero probabilities.

    langdetect keeps each of its ~88,000 n-grams as a list of 55 floats, 96 % of them zero: ~60 MB
    in every process that detects (each server worker and each parser forkserver). Here the same
    float64 values sit in flat arrays (~12 MB); a lookup rebuilds the n-gram's row (the detector
    only reads it), so every probability it computes is the same to the last bit. The detector
    samples the same few n-grams of a text over and over: recent rows are kept.
    """

    _RECENT = 4096  # rows kept (~2 MB)

    def __init__(self, rows: dict[str, int], starts: array[int], columns: array[int], values: array[float],
                 width: int) -> None:
        self._rows, self._starts, self._columns, self._values, self._width = rows, starts, columns, values, width
        self._recent: dict[str, list[float]] = {}

    @classmethod
    def from_dense(cls, dense: Mapping[str, Sequence[float]]) -> SparseProfiles:
        rows: dict[str, int] = {}
        starts, columns, values = array("q", [0]), array("B"), array("d")
        width = 0
        for word, row in dense.items():
            width = max(width, len(row))
            for column, value in enumerate(row):
                if value:
                    columns.append(column)
                    values.append(value)
            rows[word] = len(starts) - 1
            starts.append(len(values))
        return cls(rows, starts, columns, values, width)

    def __getitem__(self, word: str) -> list[float]:
        out = self._recent.get(word)
        if out is not None:
            return out
        row = self._rows[word]
        out = [0.0] * self._width
        for at in range(self._starts[row], self._starts[row + 1]):
            out[self._columns[at]] = self._values[at]
        if len(self._recent) >= self._RECENT:
            self._recent.clear()
        self._recent[word] = out
        return out

    def __contains__(self, word: object) -> bool:
        return word in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def load_profiles() -> None:
    """Load langdetect's profiles now (once per process) into ``SparseProfiles``, straight from its
    JSON files (converting the dense lists afterwards would leave their memory fragmented behind)."""
    from langdetect import detector_factory

    if detector_factory._factory is not None:
        return
    try:
        factory = _sparse_factory(detector_factory)
    except Exception:  # noqa: BLE001 - another langdetect's layout: its own (dense) loader
        detector_factory.init_factory()
        return
    detector_factory._factory = factory


def _sparse_factory(detector_factory: Any) -> Any:
    """A ``DetectorFactory`` as ``load_profile`` fills it (the same files, order and arithmetic)."""
    import json
    import os

    from langdetect.utils.lang_profile import LangProfile

    folder = detector_factory.PROFILES_DIRECTORY
    names = os.listdir(folder)
    width = len(names)  # langdetect sizes every row by the folder's entries
    if width > 256:
        raise ValueError("more languages than a byte numbers")
    files = [os.path.join(folder, name) for name in names if not name.startswith(".")]
    words: dict[str, int] = {}
    ids, columns, values = array("q"), array("B"), array("d")
    languages: list[str] = []
    for filename in (f for f in files if os.path.isfile(f)):
        with open(filename, encoding="utf-8") as handle:
            profile = LangProfile(**json.load(handle))
        if profile.name in languages:
            raise ValueError(f"the language {profile.name} twice")
        index = len(languages)
        languages.append(profile.name)
        for word in profile.freq:
            row = words.setdefault(word, len(words))
            if 1 <= len(word) <= 3:
                ids.append(row)
                columns.append(index)
                values.append(1.0 * profile.freq.get(word) / profile.n_words[len(word) - 1])
    order = np.argsort(np.frombuffer(ids, dtype=np.int64), kind="stable")  # by n-gram, languages in order
    starts = array("q", [0])
    starts.frombytes(np.cumsum(np.bincount(np.frombuffer(ids, dtype=np.int64), minlength=len(words)),
                               dtype=np.int64).tobytes())
    sorted_columns, sorted_values = array("B"), array("d")
    sorted_columns.frombytes(np.frombuffer(columns, dtype=np.uint8)[order].tobytes())
    sorted_values.frombytes(np.frombuffer(values, dtype=np.float64)[order].tobytes())
    factory = detector_factory.DetectorFactory()
    factory.langlist = languages
    factory.word_lang_prob_map = SparseProfiles(words, starts, sorted_columns, sorted_values, width)
    return factory


def language_detection_available() -> bool:
    try:
        import langdetect  # noqa: F401
    except ImportError:
        return False
    return True


def language_name(code: str) -> str:
    """English name of an ISO code, or the code itself when it is not in the map."""
    return LANGUAGE_NAMES.get(code, code)


def language_probabilities(text: str) -> dict[str, float]:
    """langdetect's probability of each language it finds plausible for ``text`` (seeded, one
    run); empty for short text or any failure."""
    sample = text[:_MAX_CHARS]
    if len(sample.strip()) < _MIN_CHARS:
        return {}
    try:
        from langdetect import DetectorFactory, detect_langs
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return {}
    with _LOCK:
        load_profiles()
        DetectorFactory.seed = 0
        try:
            return {found.lang: float(found.prob) for found in detect_langs(sample)}
        except (LangDetectException, ValueError, KeyError):
            return {}


def detect_language(text: str, runs: int = _RUNS) -> str:
    """ISO 639-1 code (``zh-cn``/``zh-tw`` for Chinese); "en" for short text or any failure.
    ``runs``: the detector's runs that vote (each reads the whole sample)."""
    sample = text[:_MAX_CHARS]
    if len(sample.strip()) < _MIN_CHARS:
        return _DEFAULT
    try:
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return _DEFAULT
    votes: Counter[str] = Counter()
    with _LOCK:
        load_profiles()
        DetectorFactory.seed = 0
        for _ in range(runs):
            try:
                votes[detect(sample)] += 1
            except (LangDetectException, ValueError, KeyError):
                continue
    if not votes:
        return _DEFAULT
    return votes.most_common(1)[0][0]


# Scripts by code point range (start of each range, then its script; "" = no letter of interest).
# A passage in another script than its document's gets a language of its own (``passage_languages``).
_RANGES: tuple[tuple[int, str], ...] = (
    (0x0000, ""), (0x0041, "Latin"), (0x005B, ""), (0x0061, "Latin"), (0x007B, ""), (0x00C0, "Latin"),
    (0x0250, ""), (0x0370, "Greek"), (0x0400, "Cyrillic"), (0x0530, "Armenian"),
    (0x0590, "Hebrew"), (0x0600, "Arabic"), (0x0700, ""), (0x0750, "Arabic"), (0x0780, ""), (0x0900, "Devanagari"),
    (0x0980, "Bengali"), (0x0A00, "Gurmukhi"), (0x0A80, "Gujarati"), (0x0B00, "Oriya"), (0x0B80, "Tamil"),
    (0x0C00, "Telugu"), (0x0C80, "Kannada"), (0x0D00, "Malayalam"), (0x0D80, "Sinhala"), (0x0E00, "Thai"),
    (0x0E80, "Lao"), (0x0F00, ""), (0x1000, "Myanmar"), (0x10A0, "Georgian"), (0x1100, "Hangul"), (0x1200, ""),
    (0x1780, "Khmer"), (0x1800, ""), (0x1E00, "Latin"), (0x1F00, "Greek"), (0x2000, ""), (0x3040, "Kana"),
    (0x3100, ""), (0x3130, "Hangul"), (0x3190, ""), (0x3400, "Han"), (0x4DC0, ""), (0x4E00, "Han"), (0xA000, ""),
    (0xAC00, "Hangul"), (0xD7B0, ""), (0xF900, "Han"), (0xFB00, ""), (0xFB50, "Arabic"), (0xFE00, ""),
    (0xFE70, "Arabic"), (0xFF00, ""), (0x20000, "Han"), (0x2FA20, ""),
)
_STARTS = np.array([start for start, _ in _RANGES], dtype=np.uint32)
_NAMES = [name for _, name in _RANGES]
_SCRIPT_SAMPLE = 2000  # characters of a passage that decide its script
SCRIPT_SAMPLES = 3  # passages of another script the detector reads; their majority names the rest
# A Han, kana or Hangul character is a syllable or a word, not a letter: it counts as two letters.
_SYLLABIC = {"Han": 2, "Kana": 2, "Hangul": 2}
KANA_SHARE = 0.1  # Han text with this share of kana is Japanese


def dominant_script(text: str, sample: int = _SCRIPT_SAMPLE) -> str:
    """The script most letters of ``text`` (its first ``sample`` characters) are written in, or ""
    when it has no letters. Han with a tenth of kana counts as "Kana" (Japanese)."""
    head = text[:sample]
    if head.isascii():  # most passages: its only letters are A-Z and a-z, Latin in _RANGES
        return "Latin" if head.lower() != head.upper() else ""
    return _counted_script(head)


def _counted_script(head: str) -> str:
    """``dominant_script`` of ``head`` by counting every character's script."""
    codes = np.frombuffer(head.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return ""
    kinds = np.searchsorted(_STARTS, codes, side="right") - 1
    counts = np.bincount(kinds, minlength=len(_NAMES))
    letters = {name: 0 for name in _NAMES if name}
    for kind in np.nonzero(counts)[0]:
        if _NAMES[kind]:
            letters[_NAMES[kind]] += int(counts[kind]) * _SYLLABIC.get(_NAMES[kind], 1)
    total = sum(letters.values())
    if not total:
        return ""
    if letters["Kana"] and letters["Kana"] >= KANA_SHARE * (letters["Kana"] + letters["Han"]):
        letters["Kana"] += letters.pop("Han")
    return max(letters, key=lambda name: letters[name])


def passage_languages(texts: Sequence[str], document_language: str, document_script: str) -> list[str]:
    """The language of each passage of a document: the document's, unless the passage is written in
    another script than the document (a Chinese quotation in an English report); then the detector
    reads the first ``SCRIPT_SAMPLES`` passages of that script, one run each, and their majority
    stands for the rest of it (a detector run per passage would dominate a long document in many
    scripts, and three per sample took half a second of a first call on eleven languages).
    Passages of the document's own script keep its language: telling German from English
    passages would cost a detector run per passage on every document."""
    out: list[str] = []
    seen: dict[str, Counter[str]] = {}  # script -> languages detected for its first passages
    for text in texts:
        script = dominant_script(text)
        if script in ("", document_script):
            out.append(document_language)
            continue
        votes = seen.setdefault(script, Counter())
        if sum(votes.values()) < SCRIPT_SAMPLES:
            votes[detect_language(_written_in(text, script), runs=1)] += 1  # the passages vote, not runs
        out.append(votes.most_common(1)[0][0])
    return out


def _written_in(text: str, script: str) -> str:
    """The characters of ``text`` in ``script`` (and the spaces between them): what the detector
    should read of a passage that quotes one language inside another."""
    sample = text[:_SCRIPT_SAMPLE]
    codes = np.frombuffer(sample.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    names = np.array(_NAMES, dtype=object)[np.searchsorted(_STARTS, codes, side="right") - 1]
    keep = np.isin(names, ["Kana", "Han"] if script == "Kana" else [script])
    return "".join(ch if k or ch.isspace() else " " for ch, k in zip(sample, keep, strict=True))
