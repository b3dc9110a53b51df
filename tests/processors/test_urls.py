"""URL extraction: forms, trimming, context, kinds, de-duplication."""

from __future__ import annotations

import pytest

from mcp_server.processors.urls import extract_urls, url_type


def test_http_and_www_urls_are_found_with_trailing_punctuation_trimmed() -> None:
    text = "See https://example.com/docs. Or www.example.org/page, and (https://x.io/a_(b))."
    assert [u.url for u in extract_urls(text)] == [
        "https://example.com/docs",
        "www.example.org/page",
        "https://x.io/a_(b)",
    ]


def test_each_url_carries_100_characters_of_context_each_side() -> None:
    text = "a" * 150 + " https://example.com/x " + "b" * 150
    (found,) = extract_urls(text)
    assert found.context == "a" * 99 + " https://example.com/x " + "b" * 99
    assert found.confidence == 0.9


def test_urls_are_deduplicated_in_order_of_first_appearance() -> None:
    text = "https://b.com/1 https://a.com/2 https://b.com/1"
    assert [u.url for u in extract_urls(text)] == ["https://b.com/1", "https://a.com/2"]


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://example.com/api/users", "api_endpoint"),
        ("https://example.com/v1/items?x=1", "api_endpoint"),
        ("https://example.com/data.json", "api_endpoint"),
        ("https://example.com/graphql", "api_endpoint"),
        ("https://example.com/logo.PNG", "image"),
        ("https://example.com/pic.webp", "image"),
        ("https://example.com/#section", "navigation"),
        ("https://example.com/about", "general"),
    ],
)
def test_urls_are_classified(url: str, kind: str) -> None:
    assert url_type(url) == kind


def test_same_site_links_are_navigation_when_the_base_is_known() -> None:
    (found,) = extract_urls("go to https://docs.example.com/guide", base_url="https://docs.example.com/")
    assert found.url_type == "navigation"


def test_text_without_urls_gives_none() -> None:
    assert extract_urls("no links here, just http and www words") == ()


def test_a_url_with_an_unbalanced_bracket_in_its_host_is_found_and_general_not_an_error() -> None:
    # markdown's "[http://a.example](a.example)" reaches the pattern as one URL with "](" in its host
    text = "Verify your account at [http://sketchy.example](sketchy.example) today."
    (found,) = extract_urls(text, base_url="http://[broken")
    assert found.url.startswith("http://sketchy.example](") and found.url_type == "general"
