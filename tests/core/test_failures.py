"""FailedParse: a failed parse replayed with its code and message, saying when it is retried."""

from __future__ import annotations

from mcp_server.core.errors import ProcessingError, UnsupportedFormatError
from mcp_server.core.failures import FailedParse, FailureCodec


def test_a_cached_failure_keeps_the_code_and_message_and_says_when_it_is_retried() -> None:
    failed = FailedParse.of(ProcessingError("parsing took longer than 120 s", reason="timeout", limit=120.0), ttl=300,
                            now=1000.0)
    error = failed.error(now=1100.0)
    assert type(error) is ProcessingError and error.code == "PROCESSING_ERROR"
    assert error.message.startswith("parsing took longer than 120 s (a cached failure from 100 s ago")
    assert "in 200 s" in error.message
    assert error.details == {"reason": "timeout", "limit": 120.0, "cached_failure": True, "retry_after": 200.0}


def test_a_failure_survives_the_shared_store_codec_with_its_class() -> None:
    codec = FailureCodec()
    failed = FailedParse.of(UnsupportedFormatError("unsupported format 'zip'", doc_type="zip"), ttl=60, now=5.0)
    again = codec.decode(codec.encode(failed))
    assert again == failed and type(again.error(now=6.0)) is UnsupportedFormatError
