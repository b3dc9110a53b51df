"""Which language a text is in: langdetect, seeded, majority vote over three runs.

langdetect samples n-grams at random; the fixed seed makes one run reproducible and the vote
keeps the original design's robustness against a stray run. Failures answer "en".
"""

from __future__ import annotations

from collections import Counter

__all__ = ["LANGUAGE_NAMES", "detect_language", "language_detection_available", "language_name"]

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


def language_detection_available() -> bool:
    try:
        import langdetect  # noqa: F401
    except ImportError:
        return False
    return True


def language_name(code: str) -> str:
    """English name of an ISO code, or the code itself when it is not in the map."""
    return LANGUAGE_NAMES.get(code, code)


def detect_language(text: str) -> str:
    """ISO 639-1 code (``zh-cn``/``zh-tw`` for Chinese); "en" for short text or any failure."""
    sample = text[:_MAX_CHARS]
    if len(sample.strip()) < _MIN_CHARS:
        return _DEFAULT
    try:
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        return _DEFAULT
    DetectorFactory.seed = 0
    votes: Counter[str] = Counter()
    for _ in range(_RUNS):
        try:
            votes[detect(sample)] += 1
        except (LangDetectException, ValueError, KeyError):
            continue
    if not votes:
        return _DEFAULT
    return votes.most_common(1)[0][0]
