"""Stable passage ids: a chunk of an index named so that it can be found again without a download.

    p1.<index key>.<chunk position>.<checksum of the chunk text>

The index key already hashes the document's bytes, the embedding models, the chunker version and
the chunk parameters (``manager.make_index_key``), and never the URL: the same bytes at two URLs,
after a restart, or in another worker sharing the index folder give the same id. The key leads to
the index (memory, then disk) and the position to the chunk; the checksum makes sure a stale or
forged id can never return a different passage than the one it was issued for.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__all__ = ["PassageRef", "parse_passage_id", "passage_id", "text_checksum"]

VERSION = "p1"
CHECKSUM_CHARS = 10  # 40 bits: a stale id meeting a changed text by chance is out of the question
# Index keys are lower-case hex today (32 chars); any length that could name a folder is accepted.
_ID = re.compile(rf"^{VERSION}\.([0-9a-f]{{16,64}})\.(0|[1-9][0-9]{{0,8}})\.([0-9a-f]{{{CHECKSUM_CHARS}}})$")


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageRef:
    key: str  # index key
    position: int  # of the chunk in the index (its chunk_index)
    checksum: str


def text_checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:CHECKSUM_CHARS]


def passage_id(key: str, position: int, text: str) -> str:
    if not key:
        raise ValueError("a passage id needs the index key")
    return f"{VERSION}.{key}.{position}.{text_checksum(text)}"


def parse_passage_id(value: str) -> PassageRef:
    """Raise ValueError for anything that is not a well-formed passage id."""
    match = _ID.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a passage id (expected {VERSION}.<key>.<position>.<checksum>)")
    return PassageRef(key=match[1], position=int(match[2]), checksum=match[3])
