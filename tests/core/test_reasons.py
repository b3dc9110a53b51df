"""Every refusal names its reason: one of ``REASONS``, each documented in docs/formats.md."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

from mcp_server.core.errors import REASONS, ProcessingError, UnsupportedFormatError

ROOT = Path(__file__).resolve().parents[2]


def test_every_reason_the_server_raises_is_one_of_the_stable_reasons() -> None:
    raised = {match for path in (ROOT / "mcp_server").rglob("*.py")
              for match in re.findall(r'\breason="(\w+)"', path.read_text(encoding="utf-8"))}
    assert raised and raised - {"no_pages"} <= set(REASONS), raised - set(REASONS)


def test_every_reason_is_documented_in_the_formats_page() -> None:
    documented = set(re.findall(r"^\| `(\w+)` \|", (ROOT / "docs" / "formats.md").read_text(encoding="utf-8"), re.M))
    assert set(REASONS) <= documented, set(REASONS) - documented


def test_an_error_raised_without_a_reason_gets_the_nearest_one_and_keeps_it_across_processes() -> None:
    assert ProcessingError("the file is damaged").details["reason"] == "corrupt"
    assert ProcessingError("too many pages", limit=2000).details["reason"] == "too_large"
    assert UnsupportedFormatError("binary data").details["reason"] == "unsupported_format"
    assert ProcessingError("zip bomb", reason="bomb", limit="zip_max_ratio").to_dict()["reason"] == "bomb"
    error = pickle.loads(pickle.dumps(ProcessingError("password required", reason="encrypted")))
    assert error.to_dict() == {"error": "password required", "code": "PROCESSING_ERROR", "reason": "encrypted"}
