"""The sentence boundary pattern's scan, the lookbehind pattern before it against the current one, on
every text file of the corpus (docs/, and the XQuAD and SQuAD documents when the QA sets are there).

    .venv/bin/python bench/sentence_boundary.py [--rounds 5]

Both patterns scan the same texts in alternating rounds (CPU seconds of this process, median of the
rounds, the load average printed); the cuts (where a sentence ends, where the next one starts) are
checked equal first. tests/text/test_sentences.py checks the spans on the corpus and on random text.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import regex  # noqa: E402

from bench.data import DOCS, QA, load_average  # noqa: E402
from mcp_server.text import sentences  # noqa: E402

# The pattern before (tests/text/test_sentences.py holds it too): its full stops looked behind for.
_CLOSERS = "\"')\\]\u201d\u2019\u00bb\u300d\u300f\uff09"
_LOOKBEHIND_BOUNDARY = regex.compile(
    rf"(?<=[.!?])([{_CLOSERS}]*)\s+(?=[\"'(\[\u201c\u2018\u00ab]?[\p{{Lu}}\p{{Lt}}\p{{Lo}}0-9])"
    rf"|(?<=[\u3002\uff01\uff1f\u0964\u0965\u061f\u06d4])([{_CLOSERS}]*)\s*(?=\S)"
    r"|\s*\n\s*"
)
_TEXT_SUFFIXES = {".txt", ".csv", ".json", ".xml", ".html", ".htm", ".md", ".eml", ".org", ".rst", ".yaml", ".yml"}


def _cuts(pattern: re.Pattern[str] | regex.Pattern[str], text: str) -> list[tuple[int, int]]:
    """(where a sentence ends, where the next one starts) at each boundary ``pattern`` finds."""
    out = []
    for match in pattern.finditer(text):
        closed = next((g for g in (1, 2) if match.group(g) is not None), None)
        out.append((match.end(closed) if closed is not None else match.start(), match.end()))
    return out


def corpus_texts() -> dict[str, str]:
    folders = [DOCS, *(QA / name for name in ("xquad-dev", "squad-v2-small") if (QA / name).is_dir())]
    return {str(path): path.read_bytes().decode("utf-8", errors="replace")
            for folder in folders for path in sorted(folder.rglob("*"))
            if path.is_file() and path.suffix.lower() in _TEXT_SUFFIXES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts = corpus_texts()
    patterns = {"lookbehind (before)": _LOOKBEHIND_BOUNDARY, "full stop matched (now)": sentences._BOUNDARY}
    differ = [name for name, text in texts.items() if _cuts(patterns["lookbehind (before)"], text)
              != _cuts(patterns["full stop matched (now)"], text)]
    chars = sum(len(text) for text in texts.values())
    print(f"{len(texts)} files, {chars:,} characters; cuts differ in {len(differ)} {differ[:5]}; "
          f"load average {load_average()}")
    seconds: dict[str, list[float]] = {name: [] for name in patterns}
    for _ in range(args.rounds):
        for name, pattern in patterns.items():
            started = time.process_time()
            for text in texts.values():
                _cuts(pattern, text)
            seconds[name].append(time.process_time() - started)
    print(f"\n| pattern ({args.rounds} rounds, load {load_average()} at the end) | CPU s, median | MB/s |"
          "\n|---|---:|---:|")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} | {chars / median / 1e6:.1f} |")


if __name__ == "__main__":
    main()
