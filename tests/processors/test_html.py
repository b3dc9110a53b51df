"""HTML: charset handling, chrome removal, Markdown headings/lists/tables, the depth limit; the whole page
(``html_view="full"``, the reading before main-content extraction) and the main content."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from mcp_server.processors._html_main import MAX_DEPTH
from tests.processors._corpus import process_file

# (file, must_include, must_not_include) of the whole page (view "full")
HTML_VECTORS = [
    ("html/fake-html-cp1252.html", ["# My First Heading", "Die schöne Frau", "15,50 €", "très"], ["\ufffd"]),
    ("html/fake-html-lang-de.html", ["### Jahresabschluss zum Geschäftsjahr"], ["<h3"]),
    ("html/testArabicMisleadingCharset.html", ["# Test Arabic", "في قرية من القرى"], ["\ufffd", "Ù"]),
    ("html/table_06.html", ["# Header", "This is the first paragraph.", "| A | B |", "After table"], []),
    ("html/kvp_data_example.html", ["# Restaurant Receipt Form", "Quack Quackling"], []),
    ("html/example-10k-1p.html", ["Galaxy Gaming, Inc.", "| Nevada |"], []),
    ("html/what_is_haystack.html", ["# What is Haystack?", "open source Python framework"], ["function(", "gtag("]),
    ("html/test_blog.html", ["A Case Study for MATH"], ["window.", "<script"]),
    ("html/wiki_duck.html", ["# Duck", "waterfowl"], [".mw-parser-output", "<style"]),
]


@pytest.mark.parametrize(("relative", "must_include", "must_not_include"), HTML_VECTORS)
def test_html_pages_convert_to_the_expected_text(
    corpus_dir: Path, relative: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = process_file(corpus_dir / "docs", relative, html_view="full")
    assert doc.doc_type == "html"
    for text in must_include:
        assert text in doc.content
    for text in must_not_include:
        assert text not in doc.content


def _html(markup: str, charset: str | None = None, view: str = "full") -> object:
    return process_document(
        DocumentInput(data=markup.encode("utf-8"), doc_type="html", charset=charset),
        ProcessOptions(html_view=view),  # type: ignore[arg-type]
    )


def test_the_title_goes_to_metadata_and_the_top() -> None:
    doc = _html("<html><head><title>My Page</title></head><body><p>Body text here.</p></body></html>")
    assert doc.metadata["title"] == "My Page"  # type: ignore[attr-defined]
    assert doc.content.startswith("# My Page")  # type: ignore[attr-defined]


def test_page_chrome_is_removed_but_article_headers_stay() -> None:
    doc = _html(
        "<body><header>Site menu</header><nav>Home | About</nav><script>var x=1;</script>"
        "<article><header><h1>Story</h1></header><p>The story text.</p></article>"
        "<aside>Related</aside><footer>Copyright</footer></body>"
    )
    content = doc.content  # type: ignore[attr-defined]
    assert "# Story" in content and "The story text." in content
    for chrome in ("Site menu", "Home | About", "var x", "Related", "Copyright"):
        assert chrome not in content


def test_lists_become_dashes_with_nesting() -> None:
    doc = _html("<ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul>")
    content = doc.content  # type: ignore[attr-defined]
    assert "- one" in content and "- two" in content and "  - inner" in content


def test_rowspan_and_colspan_fill_the_grid() -> None:
    doc = _html(
        "<table><tr><th colspan=2>Wide</th><th>C</th></tr>"
        "<tr><td rowspan=2>Tall</td><td>b1</td><td>c1</td></tr>"
        "<tr><td>b2</td><td>c2</td></tr></table>"
    )
    table = doc.tables[0].content  # type: ignore[attr-defined]
    assert table.splitlines() == [
        "| Wide | Wide | C |",
        "|---|---|---|",
        "| Tall | b1 | c1 |",
        "| Tall | b2 | c2 |",
    ]
    assert table in doc.content  # type: ignore[attr-defined]


def test_hostile_spans_are_capped() -> None:
    doc = _html("<table><tr><td colspan=100000 rowspan=100000>x</td></tr></table>")
    assert len(doc.tables[0].content) < 100_000  # type: ignore[attr-defined]


def test_headings_give_heading_path_locations() -> None:
    doc = _html("<h1>Top</h1><p>a</p><h2>Sub</h2><p>b</p><h1>Next</h1><p>c</p>")
    content = doc.content  # type: ignore[attr-defined]
    spans = [(content[loc.start : loc.end], loc.heading_path) for loc in doc.locations]  # type: ignore[attr-defined]
    assert spans == [("# Top\n\na\n\n", ("Top",)), ("## Sub\n\nb\n\n", ("Top", "Sub")), ("# Next\n\nc", ("Next",))]


def test_link_targets_are_extracted_and_link_text_kept() -> None:
    doc = _html('<p>Read <a href="https://example.org/guide">the guide</a> now.</p>')
    assert "Read the guide now." in doc.content  # type: ignore[attr-defined]
    assert [u.url for u in doc.extracted_urls] == ["https://example.org/guide"]  # type: ignore[attr-defined]


def _nested(depth: int) -> str:
    return "<html><body>" + "<div>" * depth + "deep text" + "</div>" * depth + "</body></html>"


@pytest.mark.parametrize("view", ["main", "full"])
def test_a_page_nested_100k_tags_deep_is_a_clear_error_naming_the_limit_and_its_depth(view: str) -> None:
    with pytest.raises(ProcessingError) as refused:
        _html(_nested(100_000), view=view)
    assert refused.value.details == {"doc_type": "html", "reason": "too_deep", "depth": 100_002,
                                     "max_depth": MAX_DEPTH}
    assert "100,002 deep" in refused.value.message and f"deeper than {MAX_DEPTH}" in refused.value.message


def test_the_depth_of_a_page_with_more_tags_than_are_counted_is_a_lower_bound() -> None:
    page = "<html><body>" + "<div>" * 300_000 + "</body></html>"  # counting stops at 250,000 tags
    with pytest.raises(ProcessingError, match="nests its tags at least 250,000 deep") as refused:
        _html(page)
    assert refused.value.details["depth"] == 250_000


@pytest.mark.parametrize("view", ["main", "full"])
def test_a_page_just_inside_the_depth_limit_is_read_and_one_level_more_is_refused(view: str) -> None:
    inside = MAX_DEPTH - 2  # <html> and <body> are two of the levels
    assert "deep text" in _html(_nested(inside), view=view).content  # type: ignore[attr-defined]
    with pytest.raises(ProcessingError, match=f"nests its tags {inside + 3} deep"):
        _html(_nested(inside + 1), view=view)


def test_entities_are_not_expanded_from_a_doctype() -> None:
    bomb = (
        '<!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<html><body><p>&b;&b;&b;</p></body></html>"
    )
    for view in ("main", "full"):
        assert "aaaaaaaaaa" not in _html(bomb, view=view).content  # type: ignore[attr-defined]


@pytest.mark.parametrize("style", ["font-size: 1.2.3px", "opacity: ..", "color: rgba(0, 0, 0, 1.2.3)",
                                   "clip: rect(1.2.3px, 0, 0, 0); position: absolute",
                                   "clip-path: inset(1.2.3%)", "left: -1.2.3px; position: absolute"])
def test_a_malformed_number_in_a_style_is_ignored_as_a_browser_ignores_it(style: str) -> None:
    doc = _html("<html><body><p>The visible paragraph of the page, long enough to be its text.</p>"
                f'<p style="{style}">The styled paragraph.</p></body></html>')
    assert "The styled paragraph." in doc.content  # type: ignore[attr-defined]
