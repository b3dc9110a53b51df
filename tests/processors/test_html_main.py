"""A web page's main content (the default view): the article without the site around it, the page's
metadata, and the whole page where the page is not an article, renders only with JavaScript, or is
asked for (``html_view="full"``). The corpus's HTML files keep their tables, headings, links,
language and encodings in both views."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from tests.processors._corpus import process_file

CORPUS_HTML = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "corpus" / "docs" / "html").glob("*.html"))

# file -> (extraction used by default, text the main view must hold, text it must not hold)
MAIN_VECTORS: dict[str, tuple[str, list[str], list[str]]] = {
    "test_blog.html": ("main", ["## Experiment Setup", "TL;DR", "gpt-4",
                                "level 3 Algebra test set.\n\n[Image: level 3 algebra]\n\nHowever"],
                       ["Skip to main content", "What's new in AutoGen?", "Tags:"]),
    "what_is_haystack.html": ("main", ["# What is Haystack?", "open source Python framework"],
                              ["Hacktoberfest", "Join Discord", "function(", "gtag("]),
    "wiki_duck.html": ("main", ["# Duck", "## Etymology", "waterfowl", "| Kingdom: | Animalia |",
                                "[Image: A brown duck in a fast-flowing stream]"],
                       ["Jump to content", "Afrikaans", ".mw-parser-output", "[Image: Page semi-protected]"]),
    # not articles: the whole cleaned page, as before
    "kvp_data_example.html": ("full", ["# Restaurant Receipt Form", "Quack Quackling", "| Nr. | Item Description"], []),
    "table_06.html": ("full", ["# Header", "This is the first paragraph.", "| A | B |", "After table"], []),
    "fake-html-lang-de.html": ("full", ["### Jahresabschluss zum Geschäftsjahr"], []),
    "fake-html-cp1252.html": ("full", ["# My First Heading", "Die schöne Frau", "15,50 €", "très"], ["\ufffd"]),
    "testArabicMisleadingCharset.html": ("full", ["# Test Arabic", "في قرية من القرى"], ["\ufffd", "Ù"]),
    "example-10k-1p.html": ("full", ["Galaxy Gaming, Inc.", "| Nevada |"], []),
}


# file -> (encoding, language detected) in both views; the cp1252 page mixes languages in a few lines
ENCODINGS_AND_LANGUAGES: dict[str, tuple[str, str | None]] = {
    "example-10k-1p.html": ("utf-8", "en"), "fake-html-cp1252.html": ("cp1252", None),
    "fake-html-lang-de.html": ("utf-8", "de"), "kvp_data_example.html": ("utf-8", "en"),
    "table_06.html": ("utf-8", "en"), "testArabicMisleadingCharset.html": ("cp1256", "ar"),
    "test_blog.html": ("utf-8", "en"), "what_is_haystack.html": ("utf-8", "en"), "wiki_duck.html": ("utf-8", "en"),
}


def _page(markup: str, view: str = "main", **options: object) -> ProcessedDocument:
    return process_document(DocumentInput(data=markup.encode("utf-8"), doc_type="html"),
                            ProcessOptions(html_view=view, **options))  # type: ignore[arg-type]


def test_every_corpus_html_file_has_a_main_view_vector() -> None:
    assert sorted(MAIN_VECTORS) == CORPUS_HTML


@pytest.mark.parametrize("name", sorted(MAIN_VECTORS))
def test_corpus_pages_read_as_their_main_content_or_whole(corpus_dir: Path, name: str) -> None:
    extraction, must_include, must_not_include = MAIN_VECTORS[name]
    doc = process_file(corpus_dir / "docs", f"html/{name}")
    assert doc.metadata["extraction"] == extraction
    assert ("extraction_reason" in doc.metadata) == (extraction == "full")
    for text in must_include:
        assert text in doc.content, text
    for text in must_not_include:
        assert text not in doc.content, text


@pytest.mark.parametrize("name", CORPUS_HTML)
def test_the_main_view_keeps_tables_headings_links_language_and_encoding(corpus_dir: Path, name: str) -> None:
    main = process_file(corpus_dir / "docs", f"html/{name}")
    full = process_file(corpus_dir / "docs", f"html/{name}", html_view="full")
    assert main.detected_language == full.detected_language
    assert main.metadata["encoding"] == full.metadata["encoding"]
    assert len(main.tables) == len(full.tables)
    for table in main.tables:
        assert table.content in main.content
    # links: the whole page's, whatever part of it is read
    assert {u.url for u in full.extracted_urls if u.source_location == "link"} <= {u.url for u in main.extracted_urls}
    headings = {path[-1].strip(" \u200b") for loc in main.locations if (path := loc.heading_path)}
    full_headings = {path[-1].strip(" \u200b") for loc in full.locations if (path := loc.heading_path)}
    assert bool(headings) == bool(full_headings), "headings give heading paths"
    assert headings <= full_headings


@pytest.mark.parametrize("view", ["main", "full"])
@pytest.mark.parametrize("name", CORPUS_HTML)
def test_corpus_pages_keep_their_encoding_and_language_in_both_views(corpus_dir: Path, name: str, view: str) -> None:
    encoding, language = ENCODINGS_AND_LANGUAGES[name]
    doc = process_file(corpus_dir / "docs", f"html/{name}", html_view=view)
    assert doc.metadata["encoding"] == encoding
    if language:
        assert doc.detected_language == language


def test_the_whole_page_on_request_is_the_reading_before_main_content(corpus_dir: Path) -> None:
    doc = process_file(corpus_dir / "docs", "html/test_blog.html", html_view="full")
    assert doc.metadata["extraction"] == "full"
    assert "extraction_reason" not in doc.metadata
    assert doc.content.startswith("# Does Model and Inference Parameter Matter in LLM Applications?")
    assert "Skip to main content" in doc.content and "## Experiment Setup" in doc.content


def test_the_page_metadata_is_read(corpus_dir: Path) -> None:
    metadata = process_file(corpus_dir / "docs", "html/test_blog.html").metadata
    assert metadata["title"].startswith("Does Model and Inference Parameter Matter in LLM Applications?")
    assert metadata["authors"] == ["Chi Wang Principal Researcher"]
    assert metadata["date"] == "2023-04-21"
    assert metadata["canonical_url"] == "https://microsoft.github.io/autogen/blog/2023/04/21/LLM-tuning-math"
    assert metadata["site_name"] and metadata["language"] == "en"


def test_an_article_loses_the_site_around_it() -> None:
    paragraph = ("The river rose overnight and the town council met at dawn to decide which streets to close. "
                 "Residents were asked to move cars to higher ground before the afternoon tide. ")
    teaser = "<li><a href='https://example.org/{n}'>Other story number {n} you may like</a></li>"
    page = ("<html lang='en'><head><title>Flood - Daily</title><meta property='og:site_name' content='Daily'>"
            "<link rel='canonical' href='https://daily.example/flood'></head><body>"
            "<div class='menu'><a href='https://daily.example/'>Home</a> <a href='https://daily.example/sport'>Sport"
            "</a></div><div class='share'>Share on Facebook Share on Twitter</div>"
            f"<article><h1>Flood</h1><p>{paragraph * 3}</p><h2>What next</h2><p>{paragraph * 2}</p></article>"
            "<div class='related'><h3>Related</h3><ul>" + "".join(teaser.format(n=n) for n in range(8)) +
            "</ul></div><div class='footer'>Copyright Daily Newspapers Ltd. All rights reserved.</div>"
            "</body></html>")
    main, full = _page(page), _page(page, "full")
    assert main.metadata["extraction"] == "main"
    assert "## What next" in main.content and "Residents were asked" in main.content
    for chrome in ("Share on Facebook", "Other story number", "Copyright Daily"):
        assert chrome not in main.content and chrome in full.content
    assert len(main.extracted_urls) == len(full.extracted_urls) == 10  # the page's links, all of them
    assert main.metadata["canonical_url"] == "https://daily.example/flood"
    assert main.metadata["site_name"] == "Daily"


def test_an_article_keeps_its_code_blocks_lists_and_tables() -> None:
    para = "<p>" + "Installing the tool takes one command and a minute of waiting for the packages. " * 4 + "</p>"
    sidebar = "<div class='sidebar'><ul>" + "".join(
        f"<li><a href='/p{n}'>Another guide about topic number {n}</a></li>" for n in range(30)) + "</ul></div>"
    page = (f"<html><body>{sidebar}<article><h1>Install guide</h1>{para}"
            "<pre><code>pip install foo\nfoo --run\n    indented line</code></pre>"
            f"{para}<h2>Options</h2><ol><li>first option</li><li>second option</li></ol>"
            "<table><tr><th>flag</th><th>meaning</th></tr><tr><td>-v</td><td>verbose</td></tr></table>"
            f"{para}</article></body></html>")
    doc = _page(page)
    assert doc.metadata["extraction"] == "main" and "Another guide" not in doc.content
    assert "\n\npip install foo\nfoo --run\n    indented line\n\n" in doc.content
    assert "- first option" in doc.content and "- second option" in doc.content
    assert doc.tables[0].content == "| flag | meaning |\n|---|---|\n| -v | verbose |"
    assert [loc.heading_path for loc in doc.locations] == [("Install guide",), ("Install guide", "Options")]


def test_a_listing_page_is_read_whole_and_says_why() -> None:
    items = "".join(f"<li><a href='https://docs.example/page{n}'>Reference page {n}</a></li>" for n in range(60))
    doc = _page(f"<html><body><h1>API reference</h1><ul>{items}</ul></body></html>")
    assert doc.metadata["extraction"] == "full"
    assert doc.metadata["extraction_reason"]
    assert "- Reference page 0" in doc.content and "- Reference page 59" in doc.content


@pytest.mark.parametrize("shell", [
    "<html><head><title>App</title><script src='/static/main.js'></script></head>"
    "<body><div id='root'></div></body></html>",
    "<html><head><title>App</title></head><body><noscript>You need to enable JavaScript to run this app."
    "</noscript><div id='mount'></div><script src='/a.js'></script></body></html>",
    "<html><body><div class='x'>Loading</div><script>" + "var state = {};" * 1000 + "</script></body></html>",
])
def test_a_javascript_shell_is_recognised_with_a_hint(shell: str) -> None:
    for view in ("main", "full"):
        doc = _page(shell, view)
        assert doc.metadata["javascript_required"] is True
        assert "JavaScript" in doc.metadata["hint"]
        assert doc.metadata["extraction"] == "full"


def test_a_short_server_rendered_page_is_no_javascript_shell() -> None:
    doc = _page("<html><body><h1>Contact</h1><p>Write to us at the address below.</p></body></html>")
    assert "javascript_required" not in doc.metadata


def test_a_page_over_the_byte_cap_is_a_clear_error() -> None:
    with pytest.raises(ProcessingError, match="max_html_bytes"):
        _page("<html><body>" + "<p>words and words</p>" * 1000 + "</body></html>", max_html_bytes=4096)


def test_a_text_too_long_for_the_extractors_parser_is_read_whole_and_says_why() -> None:
    # libxml2 stops at a text node over 10 MB (a limit other than depth): the whole page still reads.
    doc = _page("<html><body><p>intro</p><pre>" + "word " * 2_100_000 + "</pre><p>end text</p></body></html>")
    assert "end text" in doc.content
    assert doc.metadata["extraction"] == "full" and "too long" in doc.metadata["extraction_reason"]


def _article_with_images(*images: str) -> str:
    paragraph = ("The committee walked the length of the new bridge before it opened to traffic and counted "
                 "every bolt on the eastern span twice over. ")
    menu = ("<div class='menu'><a href='/'><img src='/logo.png' alt='Daily News home page logo'></a>"
            "<a href='/sport'>Sport section of the paper</a></div>")
    related = "<div class='related'><h3>Related</h3><ul>" + "".join(
        f"<li><a href='/s{n}'><img src='/t{n}.jpg' alt='Teaser picture number {n}'>Other story number {n} you "
        "may like</a></li>" for n in range(8)) + "</ul></div><div class='footer'>Copyright Daily Ltd.</div>"
    return (f"<html><body>{menu}<article><h1>The bridge</h1><p>First part. {paragraph * 3}</p>{images[0]}"
            f"<p>Second part. {paragraph * 3}</p>" + "".join(images[1:]) +
            f"<p>Third part. {paragraph * 3}</p></article>{related}</body></html>")


def test_an_articles_images_keep_their_alt_text_where_they_stood() -> None:
    page = _article_with_images(
        "<figure><img src='a.jpg' alt='The eastern span at dusk'><figcaption>Photo: City archive</figcaption>"
        "</figure>",
        "<p><img src='b.jpg' alt='Bolts counted on the eastern span'></p>")
    doc = _page(page)
    assert doc.metadata["extraction"] == "main"
    first, image, second = doc.content.index("First part."), doc.content.index("[Image: The eastern span at dusk]"), \
        doc.content.index("Second part.")
    assert first < image < second
    assert doc.content.index("[Image: Bolts counted on the eastern span]") < doc.content.index("Third part.")
    for left_out in ("logo", "Teaser picture", "City archive"):  # the menu's and teasers' images; the caption
        assert left_out not in doc.content, left_out
    assert "[Image: The eastern span at dusk]" in _page(page, "full").content


def test_alt_text_that_is_a_file_name_a_caption_or_a_repeat_is_left_out() -> None:
    caption = "In this photo the mayor, left, and the chief engineer walk the bridge on Tuesday morning"
    page = _article_with_images(
        "<img src='a.jpg' alt='DSC_0042.jpg'>",
        f"<img src='b.jpg' alt='{caption}'>",
        "<img src='c.jpg' alt='The bridge'>",  # the headline again
        "<img src='d.jpg' alt='A map of the river'>",
        "<img src='e.jpg' alt='A map of the river'>")
    main = _page(page)
    assert main.metadata["extraction"] == "main"
    assert "[Image: The bridge]" not in main.content
    for content in (main.content, _page(page, "full").content):
        assert "DSC_0042" not in content and caption not in content
        assert content.count("[Image: A map of the river]") == 1


def test_an_image_that_links_to_another_page_is_left_out_and_one_linking_to_its_picture_kept() -> None:
    page = _article_with_images(
        "<p><a href='/writers/jane-doe/'><img src='j.jpg' alt='Jane Doe head shot'></a></p>",
        "<p><a href='https://social.example/share?u=x'><img src='s.png' alt='Icon share this'></a>"
        "<a href='/newsletter'><img src='n.png' alt='Subscribe to our newsletter'></a></p>",
        "<p><a href='/images/span-large.jpg'><img src='span.jpg' alt='The eastern span from below'></a></p>",
        "<p><a href='#gallery'><img src='g.jpg' alt='Bolts in a row on the deck'></a></p>")
    main = _page(page)
    assert main.metadata["extraction"] == "main"
    for link_label in ("Jane Doe head shot", "Icon share this", "Subscribe to our newsletter"):
        assert link_label not in main.content, link_label
    assert "[Image: The eastern span from below]" in main.content  # links to its own full-size file
    assert "[Image: Bolts in a row on the deck]" in main.content  # an anchor on the page (a gallery)
    assert "[Image: Jane Doe head shot]" in _page(page, "full").content  # the whole page keeps every label


def _article_with_teasers(canonical: str, *inserts: str) -> str:
    paragraph = ("The harbour authority voted on Tuesday to dredge the northern channel before the spring, "
                 "after two cargo ships ran aground in the silt within a month. ")
    with_link = ("<p>The vote followed <a href='/news/earlier-report'>our earlier report</a> on the silt and a "
                 f"study by the university's coastal group. {paragraph}</p>")
    head = f"<link rel='canonical' href='{canonical}'>" if canonical else ""
    menu = "<div class='menu'>" + "".join(f"<a href='/section{n}'>Section {n} of the paper</a> " for n in range(6))
    return (f"<html><head><title>Harbour</title>{head}</head><body>{menu}</div><article><h1>Harbour to be dredged</h1>"
            f"<p>First part. {paragraph * 3}</p>{inserts[0]}{with_link}<p>Second part. {paragraph * 3}</p>"
            + "".join(inserts[1:]) + f"<p>Third part. {paragraph * 3}</p></article>"
            "<div class='footer'>Copyright Port News Ltd. All rights reserved.</div></body></html>")


def test_blocks_that_only_link_to_the_sites_other_pages_are_cut_from_the_article() -> None:
    page = _article_with_teasers(
        "https://www.port-news.example/harbour",
        "<p><strong>READ MORE:</strong> <a href='/news/123/ships-aground'>Two ships run aground in the "
        "northern channel</a></p>",
        "<h3>Don't miss</h3><ul><li><a href='https://port-news.example/a'>Ferry timetable changes for the "
        "winter season</a></li><li><a href='https://m.port-news.example/b'>New crane arrives at the container "
        "terminal</a> [VIDEO]</li></ul>",
        "<p><a href='#comments'>Comments</a></p>",
        "<article><a href='/news/9/lighthouse'><h3>The harbour's new lighthouse opens to visitors</h3></a></article>")
    main, full = _page(page), _page(page, "full")
    assert main.metadata["extraction"] == "main"
    for teaser in ("READ MORE", "Two ships run aground", "Ferry timetable", "New crane arrives", "Comments",
                   "new lighthouse"):
        assert teaser not in main.content and teaser in full.content, teaser
    assert "The vote followed our earlier report on the silt" in main.content  # links inside a sentence
    assert "Third part." in main.content and "Don't miss" in main.content  # a heading that links nowhere stays


def test_blocks_that_link_to_other_sites_or_to_an_unknown_site_stay_in_the_article() -> None:
    sources = ("<p><a href='https://www.maritime-agency.example/report.pdf'>The agency's full report on "
               "channel depth</a></p>")
    absolute = "<p><a href='https://port-news.example/a'>Ferry timetable changes for the winter season</a></p>"
    main = _page(_article_with_teasers("https://port-news.example/harbour", sources))
    assert main.metadata["extraction"] == "main"
    assert "The agency's full report on channel depth" in main.content
    # without a canonical address, an absolute link is not known to be the site's own
    unknown = _page(_article_with_teasers("", absolute))
    assert unknown.metadata["extraction"] == "main" and "Ferry timetable changes" in unknown.content


def test_a_page_that_is_only_links_to_its_site_keeps_them() -> None:
    items = "".join(f"<p><a href='/guides/{n}'>Guide number {n} to the harbour and its ferries</a></p>"
                    for n in range(12))
    menu = "<div class='menu'>" + "".join(f"<a href='/section{n}'>Section {n}</a> " for n in range(6)) + "</div>"
    doc = _page(f"<html><body>{menu}<article><h1>Harbour guides</h1>{items}</article>"
                "<div class='footer'>Copyright Port News Ltd. All rights reserved.</div></body></html>")
    assert doc.metadata["extraction"] == "main"
    assert doc.content.count("Guide number") >= 10  # not cut down to the heading


def test_a_list_whose_every_item_opens_with_a_link_to_the_site_is_cut_and_other_lists_stay() -> None:
    teasers = "<ul>" + "".join(
        f"<li><a href='/news/{n}/story'>Harbour story number {n}</a><h4>A short blurb on what the story number "
        f"{n} says about the port</h4></li>" for n in range(3)) + "</ul>"
    steps = ("<ul><li>Boats over 20 metres need a <a href='/rules/pilot'>pilot on board</a> in the channel</li>"
             "<li>Smaller boats keep to the marked lane on the east side</li></ul>")
    sources = "<ul>" + "".join(
        f"<li><a href='https://agency{n}.example/report'>Agency report {n}</a>, the survey of the silt in "
        f"section {n} of the channel</li>" for n in range(3)) + "</ul>"
    page = _article_with_teasers("https://port-news.example/harbour", teasers, steps, sources)
    main = _page(page)
    assert main.metadata["extraction"] == "main"
    assert "Harbour story number" not in main.content and "A short blurb" not in main.content
    assert "Harbour story number 0" in _page(page, "full").content
    assert "- Boats over 20 metres need a pilot on board" in main.content  # opens with text
    assert "- Agency report 2, the survey of the silt" in main.content  # links to other sites
