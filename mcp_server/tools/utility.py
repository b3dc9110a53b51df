"""Utility tools: detect_language, get_system_health, manage_cache."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from mcp_server.core.concurrency import off_loop
from mcp_server.core.errors import ValidationError
from mcp_server.fetch import validate_url
from mcp_server.text.language import detect_language as _detect
from mcp_server.text.language import language_name
from mcp_server.tools.common import app_of, require_text, tool
from mcp_server.tools.health import cache_stats, reported, system_health

__all__ = ["CacheResult", "LanguageResult", "detect_language", "get_system_health", "manage_cache"]


class LanguageResult(BaseModel):
    language_code: str = Field(description="ISO 639-1 code (zh-cn/zh-tw for Chinese); 'en' when unsure.")
    language_name: str = Field(description="English name for the 18 common languages, else the code.")


class CacheResult(BaseModel):
    action: str
    layers: dict[str, Any] = Field(description="Per layer (download, document, index, failure, "
                                               "quote_index, page_image, page_pdf, upload): statistics, or what was "
                                               "removed (clear leaves uploads: they expire).")
    document_url: str | None = Field(None, description="With \"drop\": the URL dropped.")


@tool("utility", title="Detect language",
      summary="the language of a text",
      returns="`{language_code, language_name}`")
async def detect_language(
    text: Annotated[str, Field(min_length=1, description="The text (its first 5,000 characters are read).")],
    ctx: Context,
) -> LanguageResult:
    """Detect the language of a text (first 5,000 characters, seeded majority vote of 3 runs).

    Text shorter than 10 characters, or any failure, answers "en".
    """
    require_text(text, "text", app_of(ctx).settings.max_text_length)
    code = await off_loop(_detect, text)
    return LanguageResult(language_code=code, language_name=language_name(code))


@tool("utility", title="System health",
      summary="status, models, formats, device, caches",
      returns="status, version, features, model roles and the weights serving them, formats, device, "
              "caches")
async def get_system_health(ctx: Context) -> dict[str, Any]:
    """Status, version, feature flags (RERANK_AVAILABLE, OCR_AVAILABLE, LANG_DETECT_AVAILABLE,
    OFFICE_CONVERTER_AVAILABLE: LibreOffice for .doc/.xls/.ppt, OpenDocument, RTF),
    the weights serving each model role, supported formats, device, cache statistics."""
    return await reported(system_health, app_of(ctx))


@tool("utility", title="Manage cache", read_only=False, destructive=True,
      summary="cache statistics, clear them, or drop one URL",
      returns="per-layer statistics, or what was removed")
async def manage_cache(
    action: Annotated[Literal["stats", "clear", "drop"], Field(
        description='"stats" reports the caches; "clear" empties them all; "drop" forgets one document_url.')],
    ctx: Context,
    document_url: Annotated[str | None, Field(description='With "drop": the URL whose download is forgotten, so '
                                                          'the next call downloads it again.')] = None,
) -> CacheResult:
    """"stats": hit/miss counts and sizes of the download, document and index caches (and the
    failure, quote_index, page_image and page_pdf layers); "clear": empty them all (memory and the on-disk indexes);
    "drop": forget one document_url's download (and a remembered failed parse of it), so the next call
    downloads it again; its index stays, found again when the bytes are the same."""
    app = app_of(ctx)
    service = app.service
    if action == "stats":
        return CacheResult(action=action, layers=await reported(cache_stats, app))
    if action == "drop":
        if document_url is None:
            raise ValidationError('action "drop" needs document_url', argument="document_url")
        url = validate_url(document_url, app.settings)
        return CacheResult(action=action, layers=await service.drop(url), document_url=url)
    return CacheResult(action=action, layers=await service.clear())
