"""What every tool module shares: the metadata-only ``tool`` decorator, the argument types and helpers.

A tool is a module-level async function marked with ``@tool(kind, title=..., summary=..., returns=...)``;
the mark is data only, and ``create_server`` registers the marked functions (``tools.TOOLS``), so no
tool module imports the server. Tools read the long-lived resources and the settings from ``ctx``.

Arguments are declared, not checked by hand: ``Annotated[..., Field(description=..., bounds)]`` and
``Literal`` enums, so ``tools/list`` shows every bound and the SDK's argument model enforces it
(the guard turns a violation into VALIDATION_ERROR naming the argument). What a schema cannot say
stays in code: limits that are settings (``max_text_length``), text that is only whitespace, and
the documented clamps (top_k, neighbors, before/after), which are no errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from mcp_server.core.concurrency import Progress, off_loop
from mcp_server.core.errors import ValidationError
from mcp_server.core.settings import Settings, TimeoutClass
from mcp_server.pipeline.research import pack_texts
from mcp_server.tools.context import AppContext
from mcp_server.tools.schemas import RetrieveItem

__all__ = [
    "DocumentUrl", "MaxTokens", "PageView", "Query", "ToolSpec", "app_of", "fit_budget", "progress_of", "require_text",
    "settings_of", "spec_of", "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

DocumentUrl = Annotated[str, Field(
    min_length=1, description="http(s) URL of the document; the server downloads it (private and local network "
                              "addresses are refused unless allowlisted). Or the upload:// URL POST /documents "
                              "answered for a file the user uploaded.")]
Query = Annotated[str, Field(
    min_length=1, description="The question or search text, in any language (at most max_text_length characters, "
                              f"a server setting: {Settings.model_fields['max_text_length'].default:,} by default).")]
MaxTokens = Annotated[int | None, Field(
    ge=1, description="Token budget: keep the best results whose texts fit it together (the first one is "
                      "shortened when even it does not fit). Omit for no budget.")]
PageView = Annotated[Literal["main", "full"] | None, Field(
    description="Web pages (HTML) only: 'main' reads the main content (the article without the site's menus, "
                "share bars, related links and footers; a page that is not an article is read whole, and "
                "metadata.extraction says which was used), 'full' the whole cleaned page. Omit for the server's "
                "default (html_view, 'main' unless configured).")]
_SPEC = "__rag_tool__"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """How the server registers a tool: its timeout class and its MCP annotations; and its rows in the
    tool tables of README.md (``summary``) and docs/tools.md (``returns``, Markdown), which
    ``scripts/config_docs.py docs`` writes from ``tools.TOOLS``."""

    kind: TimeoutClass
    title: str
    summary: str
    returns: str
    read_only: bool = True
    idempotent: bool = True
    open_world: bool = False
    destructive: bool = False
    # list parameters whose most items a setting decides: (parameter, settings field); the schema shows it
    max_items: tuple[tuple[str, str], ...] = ()

    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=self.title,
            readOnlyHint=self.read_only,
            idempotentHint=self.idempotent,
            openWorldHint=self.open_world,
            destructiveHint=self.destructive if not self.read_only else None,
        )


def tool(
    kind: TimeoutClass, *, title: str, summary: str, returns: str, read_only: bool = True, idempotent: bool = True,
    open_world: bool = False, destructive: bool = False, max_items: tuple[tuple[str, str], ...] = (),
) -> Callable[[F], F]:
    """Mark a function as a tool with its timeout class, annotations and documentation rows; nothing is registered."""
    spec = ToolSpec(kind=kind, title=title, summary=summary, returns=returns, read_only=read_only,
                    idempotent=idempotent, open_world=open_world, destructive=destructive, max_items=max_items)

    def mark(fn: F) -> F:
        setattr(fn, _SPEC, spec)
        return fn

    return mark


def spec_of(fn: Callable[..., Any]) -> ToolSpec:
    spec = getattr(fn, _SPEC, None)
    if not isinstance(spec, ToolSpec):
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not marked with @tool")
    return spec


def app_of(ctx: Context[Any, Any]) -> AppContext:
    app: AppContext = ctx.request_context.lifespan_context
    return app


def settings_of(ctx: Context) -> Settings:
    return app_of(ctx).settings


def progress_of(ctx: Context) -> Progress:
    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.report_progress(done, total, message)

    return report


def require_text(value: str, name: str, limit: int | None = None) -> str:
    """What a schema cannot say: not only whitespace, and at most ``limit`` (a setting) characters."""
    if not value.strip():
        raise ValidationError(f"argument '{name}' must not be empty", argument=name)
    if limit is not None and len(value) > limit:
        raise ValidationError(f"argument '{name}' is {len(value)} characters; the limit is {limit}", argument=name)
    return value


Item = TypeVar("Item", bound=RetrieveItem)


async def fit_budget(items: list[Item], app: AppContext, budget: int | None) -> tuple[list[Item], int | None, int]:
    """(the best items whose texts fit ``budget`` tokens, tokens used, items left out); unchanged without one."""
    if budget is None:
        return items, None, 0
    texts = [item.text for item in items]
    packed = await off_loop(pack_texts, texts, app.models.token_counter, budget)
    kept = items[: len(packed.texts)]
    if packed.truncated:
        kept[0] = kept[0].model_copy(update={"text": packed.texts[0], "truncated": True})
    return kept, packed.tokens, packed.omitted
