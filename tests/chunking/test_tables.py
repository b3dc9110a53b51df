"""A Markdown table longer than one chunk splits between rows and repeats its header."""

from __future__ import annotations

from mcp_server.chunking import ChunkParams, HFTokenCounter, chunk_document, chunk_params_for
from mcp_server.core.models import ProcessedDocument

HEADER = "| Name | City | Phone |\n| --- | --- | --- |"


def _table_document(rows: int) -> tuple[str, ProcessedDocument]:
    body = "\n".join(f"| Person {n} lives here | City number {n} | 555-{n:04d} |" for n in range(rows))
    content = f"Contacts of the team.\n\n{HEADER}\n{body}\n\nEnd of the list."
    return body, ProcessedDocument(content=content, doc_type="docx")


def test_a_long_table_splits_between_rows_and_every_piece_repeats_the_header(counter: HFTokenCounter) -> None:
    body, doc = _table_document(120)
    params = chunk_params_for("docx", len(doc.content), counter.max_tokens)
    chunks = chunk_document(doc, params, counter)
    table_chunks = [c for c in chunks if "| Person" in c.text]
    assert len(table_chunks) > 2
    rows = set(body.splitlines())
    for chunk in table_chunks:
        lines = chunk.text.splitlines()
        row_lines = [line for line in lines if line.startswith("| Person")]
        assert all(line in rows for line in row_lines)  # whole rows only
        assert chunk.token_count <= params.max_tokens
        if not chunk.text.startswith("Contacts"):
            assert chunk.text.startswith(HEADER + "\n")
            assert chunk.content_type == "table"
            # the span is the rows it covers; the text adds the header in front of them
            span = doc.content[chunk.location.start_char:chunk.location.end_char]
            assert chunk.text == f"{HEADER}\n{span}"
            assert span.startswith("| Person")
    covered = {line for c in table_chunks for line in c.text.splitlines()}
    assert rows <= covered


def test_a_table_row_wider_than_a_chunk_is_cut_at_words_as_a_last_resort(counter: HFTokenCounter) -> None:
    wide = "| " + " | ".join(f"cell {n} of a very wide row" for n in range(80)) + " |"
    content = f"| a |\n| --- |\n{wide}\n| small |"
    params = ChunkParams(chunk_size=1500, chunk_overlap=100, separators=("\n\n", "\n", " "), max_tokens=64)
    chunks = chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter)
    assert all(c.token_count <= 64 for c in chunks)
    assert chunks[-1].text.endswith("| small |")
