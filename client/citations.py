"""Every quote in an answer is checked against the documents with the server's verify_quote tool.

The model is told to quote only what the tools returned, but models paraphrase; the check is
deterministic and runs after the model has answered, in this process: each quoted passage of the
answer (text in double quotes, three words or more) is verified against every document the turn's
tool calls named, and the answer gets a short report: where each quote stands (exact), the
document's own wording (close), or that it was not found. Nothing here asks the model anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool

__all__ = ["QuoteCheck", "check_quotes", "documents_named", "quotes_in", "report"]

VERIFY_TOOL = "verify_quote"
MIN_WORDS = 3  # a shorter quoted phrase is a term or a title, not a quotation
MAX_QUOTES = 10  # checked per answer: each costs one call per document
_CURLY = re.compile(r"\u201c([^\u201c\u201d]{1,2000})\u201d")
_URL_ARGUMENTS = ("document_url", "image_url")
_RANK = {"exact": 2, "close": 1, "none": 0}


@dataclass(frozen=True, kw_only=True, slots=True)
class QuoteCheck:
    quote: str
    match: str  # exact | close | none | error
    document_url: str | None = None
    pages: tuple[int, ...] = ()
    similarity: float = 0.0
    wording: str | None = None  # the document's own words (close)
    error: str | None = None


def quotes_in(answer: str) -> list[str]:
    """The quoted passages of an answer, in order, each once."""
    spans = [(m.start(), m.group(1)) for m in _CURLY.finditer(answer)]
    straight = [i for i, ch in enumerate(answer) if ch == '"']  # paired in order: 1st with 2nd, 3rd with 4th
    spans += [(a, answer[a + 1 : b]) for a, b in zip(straight[::2], straight[1::2], strict=False)]
    found: list[str] = []
    for _, text in sorted(spans):
        quote = " ".join(text.split()).strip(" ,;:")
        if len(quote.split()) >= MIN_WORDS and quote not in found:
            found.append(quote)
    return found[:MAX_QUOTES]


def documents_named(messages: Iterable[BaseMessage]) -> list[str]:
    """The document URLs the model's tool calls used, in first-use order."""
    urls: list[str] = []
    for message in messages:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            args = call.get("args") or {}
            named = [args.get(key) for key in _URL_ARGUMENTS] + list(args.get("document_urls") or [])
            urls.extend(url for url in named if isinstance(url, str) and url and url not in urls)
    return urls


def _result(content: Any) -> dict[str, Any] | None:
    """The tool's JSON answer from what a LangChain MCP tool returns (text, or content blocks)."""
    if isinstance(content, tuple):  # (content, artifact)
        content = content[0]
    if isinstance(content, list):
        content = "\n".join(block.get("text", "") if isinstance(block, dict) else str(block) for block in content)
    try:
        parsed = json.loads(str(content))
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


async def _verify(tool: BaseTool, quote: str, urls: Sequence[str]) -> QuoteCheck:
    best: QuoteCheck | None = None
    problem: str | None = None
    for url in urls:
        body = _result(await tool.ainvoke({"document_url": url, "quote": quote}))
        if body is None or "match" not in body:
            problem = str((body or {}).get("error") or "no answer")
            continue
        location = body.get("location") or {}
        check = QuoteCheck(quote=quote, match=str(body["match"]), document_url=url,
                           pages=tuple(location.get("pages") or ()), similarity=float(body.get("similarity") or 0),
                           wording=body.get("document_text"))
        if best is None or (_RANK.get(check.match, 0), check.similarity) > (_RANK.get(best.match, 0),
                                                                            best.similarity):
            best = check
        if check.match == "exact":
            break
    if best is None:
        return QuoteCheck(quote=quote, match="error", error=problem or "no document to check against")
    return best


async def check_quotes(answer: str, urls: Sequence[str], tools: Sequence[BaseTool]) -> list[QuoteCheck]:
    """Each quote of the answer checked against the documents (empty: no quote, or nothing to check with)."""
    quotes = quotes_in(answer)
    tool = next((t for t in tools if t.name == VERIFY_TOOL), None)
    if not quotes or tool is None:
        return []
    if not urls:
        return [QuoteCheck(quote=q, match="error", error="no document was consulted") for q in quotes]
    return [await _verify(tool, quote, urls) for quote in quotes]


def _where(check: QuoteCheck) -> str:
    pages = ", ".join(str(p) for p in check.pages)
    parts = [f"page {pages}" if len(check.pages) == 1 else f"pages {pages}" if pages else "",
             (check.document_url or "").rsplit("/", 1)[-1]]
    return ", ".join(part for part in parts if part)


def report(checks: Sequence[QuoteCheck]) -> str:
    """The lines appended to the answer."""
    if not checks:
        return ""
    lines = ["Quotes checked against the documents (verify_quote):"]
    for check in checks:
        short = check.quote if len(check.quote) <= 80 else check.quote[:77] + "..."
        if check.match == "exact":
            lines.append(f'- "{short}": found exactly ({_where(check)})')
        elif check.match == "close":
            lines.append(f'- "{short}": NOT exact, similarity {check.similarity:.2f} ({_where(check)}); '
                         f'the document says: "{check.wording}"')
        elif check.match == "none":
            lines.append(f'- "{short}": NOT FOUND in the documents consulted')
        else:
            lines.append(f'- "{short}": could not be checked ({check.error})')
    return "\n".join(lines)
