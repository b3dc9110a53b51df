"""Utility tools: detect_language, get_system_health, manage_cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from mcp_server.core.concurrency import run_sync
from mcp_server.core.errors import ValidationError
from mcp_server.processors.language import detect_language as _detect, language_name

if TYPE_CHECKING:
    from mcp_server.server import RagMCP

__all__ = ["LanguageResult", "register"]


class LanguageResult(BaseModel):
    language_code: str = Field(description="ISO 639-1 code (zh-cn/zh-tw for Chinese); 'en' when unsure.")
    language_name: str = Field(description="English name for the 18 common languages, else the code.")


def register(server: RagMCP) -> None:
    settings = server.rag_settings

    @server.guarded_tool("utility", title="Detect language")
    async def detect_language(text: str) -> LanguageResult:
        """Detect the language of a text (first 5,000 characters, seeded majority vote of 3 runs).

        Text shorter than 10 characters, or any failure, answers "en".
        """
        if not text.strip():
            raise ValidationError("argument 'text' must not be empty", argument="text")
        if len(text) > settings.max_text_length:
            raise ValidationError(
                f"argument 'text' is {len(text)} characters; the limit is {settings.max_text_length}",
                argument="text",
            )
        code = await run_sync(_detect, text)
        return LanguageResult(language_code=code, language_name=language_name(code))
