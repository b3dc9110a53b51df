"""validate_url: the cheap check tools run on document_url before any work."""

from __future__ import annotations

import pytest

from mcp_server.core.errors import ValidationError
from mcp_server.fetch import validate_url

from .servers import make_settings


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a.pdf",
        "http://example.com:8080/x?y=1",
        "HTTPS://EXAMPLE.COM/",
        "file:///srv/docs/a.pdf",
        "/srv/docs/a.pdf",
        "  https://example.com/padded  ",
    ],
)
def test_well_formed_urls_and_absolute_paths_pass(url: str) -> None:
    assert validate_url(url, make_settings()) == url.strip()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "must not be empty"),
        ("   ", "must not be empty"),
        ("ftp://example.com/a", "scheme 'ftp'"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("example.com/a.pdf", "no scheme"),
        ("relative/path.pdf", "no scheme"),
        ("http:///nohost", "has no host"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://exa\nmple.com/", "control characters"),
        ("https://example.com/" + "a" * 3000, "the limit is 2048"),
    ],
)
def test_malformed_urls_are_refused_naming_the_argument_and_why(url: str, why: str) -> None:
    with pytest.raises(ValidationError) as refused:
        validate_url(url, make_settings())
    assert refused.value.message.startswith("document_url ")
    assert why in refused.value.message
    assert refused.value.details == {"argument": "document_url"}


def test_non_strings_are_refused() -> None:
    with pytest.raises(ValidationError, match="must be a string"):
        validate_url(None, make_settings())  # type: ignore[arg-type]
