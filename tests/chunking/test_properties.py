"""Property tests on random text: coverage, order, token limits, overlap and whole words."""

from __future__ import annotations

import string
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.chunking import ChunkParams, HFTokenCounter, TokenCounter, chunk_document
from mcp_server.chunking._layout import _atoms, _words
from mcp_server.chunking._locations import HEADING_LINE, MARKER_LINE
from mcp_server.chunking._params import TEXT_SEPARATORS
from mcp_server.core.models import Chunk, ProcessedDocument

PROPERTY_SETTINGS = settings(max_examples=60, deadline=None,
                             suppress_health_check=[HealthCheck.function_scoped_fixture])

_NORMAL_WORDS = st.one_of(
    st.text(alphabet=string.ascii_letters + "éüß", min_size=1, max_size=12),
    st.sampled_from(["the", "of", "and", "chunk", "model", "window", "importance", "Paris", "1990"]),
    st.sampled_from([",", ".", "!", "?", "—", "$5", "42%", "(see", "it's", "e.g.", "#", "-"]),
)
_LONG_WORDS = st.text(alphabet=string.ascii_lowercase + "./-", min_size=40, max_size=500)
# One word in 40 is a long run without whitespace (URLs, blobs) that may need a hard split.
_WORDS = st.integers(min_value=0, max_value=39).flatmap(lambda n: _LONG_WORDS if n == 0 else _NORMAL_WORDS)
_GAPS = st.sampled_from([" ", " ", " ", " ", "\n", "\n\n", ". ", "\t", "  ", " \n "])


@st.composite
def documents(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, min_size=0, max_size=400))
    words += draw(st.lists(_NORMAL_WORDS, min_size=0, max_size=60))
    gaps = draw(st.lists(_GAPS, min_size=len(words), max_size=len(words)))
    lead = draw(st.sampled_from(["", " ", "\n\n"]))
    return lead + "".join(word + gap for word, gap in zip(words, gaps, strict=True))


@st.composite
def parameters(draw: st.DrawFn) -> ChunkParams:
    size = draw(st.integers(min_value=40, max_value=600))
    ratio = draw(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.45]))
    return ChunkParams(chunk_size=size, chunk_overlap=int(size * ratio), separators=TEXT_SEPARATORS,
                       max_tokens=draw(st.integers(min_value=16, max_value=128)))


class CharCounter:
    """A tokenizer that is not a sum over words (whitespace counts): forces the checked path."""

    max_tokens = 512

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [2 + len(text) // 3 for text in texts]


def _chunks(content: str, params: ChunkParams, counter: TokenCounter) -> list[Chunk]:
    return chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter)


def _over_long(word: str, params: ChunkParams, counter: TokenCounter) -> bool:
    return len(word) > params.chunk_size or counter.count_tokens([word])[0] > params.max_tokens


def _word_around(content: str, position: int) -> str:
    start, end = position, position
    while start > 0 and not content[start - 1].isspace():
        start -= 1
    while end < len(content) and not content[end].isspace():
        end += 1
    return content[start:end]


def _check_contract(content: str, params: ChunkParams, counter: TokenCounter) -> list[Chunk]:
    chunks = _chunks(content, params, counter)
    if not content.strip():
        assert chunks == []
        return chunks
    covered = bytearray(len(content))
    for chunk in chunks:
        start, end = chunk.location.start_char, chunk.location.end_char
        assert chunk.text == content[start:end] == chunk.text.strip()
        covered[start:end] = b"\x01" * (end - start)
        for boundary in (start, end):  # never inside a word, unless the word is bigger than a chunk
            inside = 0 < boundary < len(content) and not content[boundary - 1].isspace() \
                and not content[boundary].isspace()
            assert not inside or _over_long(_word_around(content, boundary), params, counter)
    assert all(covered[i] or char.isspace() for i, char in enumerate(content))
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    starts = [c.location.start_char for c in chunks]
    ends = [c.location.end_char for c in chunks]
    assert starts == sorted(set(starts)) and ends == sorted(set(ends))
    real = counter.count_tokens([c.text for c in chunks])
    assert all(count <= params.max_tokens for count in real)
    return chunks


@PROPERTY_SETTINGS
@given(content=documents(), params=parameters())
def test_chunks_cover_the_document_in_order_within_the_token_limit(
    content: str, params: ChunkParams, counter: HFTokenCounter
) -> None:
    chunks = _check_contract(content, params, counter)
    assert [c.token_count for c in chunks] == counter.count_tokens([c.text for c in chunks])


@PROPERTY_SETTINGS
@given(content=documents(), params=parameters())
def test_chunks_overlap_by_at_most_the_configured_amount_in_whole_words_within_a_paragraph(
    content: str, params: ChunkParams, counter: HFTokenCounter
) -> None:
    chunks = _chunks(content, params, counter)
    for before, after in zip(chunks, chunks[1:], strict=False):
        overlap = before.location.end_char - after.location.start_char
        assert overlap <= params.chunk_overlap
        if overlap <= 0:
            continue
        assert content[after.location.start_char - 1].isspace()
        # Overlap stays inside a paragraph: none after a chunk that ends at a paragraph break,
        # none reaching back across one.
        assert "\n\n" not in content[after.location.start_char:before.location.end_char + 2]
        # "roughly the configured amount": the next chunk starts at the first word start within
        # reach (the configured overlap, or half the chunk when that is shorter) that is not
        # before a paragraph break inside the previous chunk.
        reach = min(params.chunk_overlap, (before.location.end_char - before.location.start_char) // 2)
        first_allowed = before.location.end_char - reach
        paragraph = content.rfind("\n\n", before.location.start_char, before.location.end_char)
        if paragraph >= 0:
            first_allowed = max(first_allowed, paragraph + 2)
        skipped = content[first_allowed:after.location.start_char]
        assert not any(skipped[i - 1].isspace() and not skipped[i].isspace()
                       for i in range(1, len(skipped))) or first_allowed <= before.location.start_char


@PROPERTY_SETTINGS
@given(content=documents(), params=parameters())
def test_tokenizers_that_are_not_additive_over_words_still_get_chunks_within_the_limit(
    content: str, params: ChunkParams
) -> None:
    counter = CharCounter()
    chunks = _check_contract(content, params, counter)
    assert [c.token_count for c in chunks] == counter.count_tokens([c.text for c in chunks])


@PROPERTY_SETTINGS
@given(content=documents(), params=parameters())
def test_a_paragraph_that_fits_a_chunk_is_never_cut(
    content: str, params: ChunkParams, counter: HFTokenCounter
) -> None:
    chunks = _chunks(content, params, counter)
    position = 0
    for piece in content.split("\n\n"):
        start = position + len(piece) - len(piece.lstrip())
        end = position + len(piece.rstrip())
        position += len(piece) + 2
        text = content[start:end]
        if not text or len(text) > params.chunk_size or counter.count_tokens([text])[0] > params.max_tokens:
            continue
        last_line = text.rsplit("\n", 1)[-1]
        if HEADING_LINE.fullmatch(last_line) or MARKER_LINE.fullmatch(last_line):
            continue  # a heading or marker never ends a chunk: it goes with what follows it
        assert any(c.location.start_char <= start and end <= c.location.end_char for c in chunks)


_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]  # every whitespace, U+001C-U+001F among them


@given(st.lists(st.sampled_from(["a", "word", "é", "中", "\x00", *_SPACES]), max_size=40).map("".join))
def test_the_atoms_text_is_the_slices_of_their_offsets(content: str) -> None:
    starts, ends = _atoms(content)
    assert _words(content, starts, ends) == [content[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
