"""The guard every tool call passes through: request id, rate limit, argument validation,
timeout, structured log events and error conversion. A tool never raises to the client.

Known errors become ``isError`` results whose text content is the JSON
``{"error", "code", "request_id", ...details}``; anything else becomes INTERNAL_ERROR with the
request id only — the traceback goes to the log, never to the client. An unknown tool name is
not a tool result but a JSON-RPC error (-32602), as the MCP specification asks.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import pydantic
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent

from mcp_server import metrics
from mcp_server.caches.budget import Activity
from mcp_server.core.concurrency import answering
from mcp_server.core.errors import MCPServerError, ToolTimeoutError, ValidationError
from mcp_server.core.logging import new_request_id, request_id_var, tool_var
from mcp_server.core.settings import Settings, TimeoutClass
from mcp_server.middleware.ratelimit import RateLimiter

__all__ = ["ToolGuard", "error_result", "format_validation_error", "unknown_tool_error"]

logger = logging.getLogger("mcp_server.tools")

Parsed = TypeVar("Parsed")


def error_result(error: MCPServerError, request_id: str) -> CallToolResult:
    """The error as JSON text, without ``structuredContent``: structured content must match the
    tool's output schema, and TypeScript clients (the Inspector, hosts behind mcp-remote) validate
    it whenever it is present, error or not, so an error dict there made every error unreadable."""
    payload = {**error.to_dict(), "request_id": request_id}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload))], is_error=True)


def unknown_tool_error(name: str) -> MCPError:
    """The JSON-RPC error for a tool name the server does not have, logged with a request id that
    the error's data repeats (the call never reaches the guard, so it is not rate limited)."""
    request_id = new_request_id()
    token = request_id_var.set(request_id)
    try:
        logger.info("tool.unknown", extra={"requested_tool": name[:200]})
    finally:
        request_id_var.reset(token)
    return MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name[:200]}", data={"request_id": request_id})


def format_validation_error(exc: pydantic.ValidationError) -> ValidationError:
    """Name the argument and the reason, in words a model can act on. The bounds and enums are the
    tools' declared schema (``tools/list``); an error naming one argument also carries it as
    ``argument``, as the tools' own checks do."""
    problems: list[str] = []
    arguments: list[str] = []
    for err in exc.errors(include_url=False):
        name = ".".join(str(part) for part in err["loc"]) or "arguments"
        arguments.append(name)
        problems.append(_problem(name, err))
    named = list(dict.fromkeys(arguments))
    extra = {"argument": named[0]} if len(named) == 1 else {}
    return ValidationError("Invalid arguments: " + "; ".join(problems), arguments=arguments, **extra)


def _problem(name: str, err: Any) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return f"argument '{name}' is required"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return f"argument '{name}' must not be empty"
    if kind == "literal_error":
        return f"argument '{name}' must be {ctx.get('expected')}, not {value!r}"[:300]
    if kind == "greater_than_equal":
        return f"argument '{name}' must be at least {ctx.get('ge')}, not {value!r}"[:300]
    if kind == "less_than_equal":
        return f"argument '{name}' must be at most {ctx.get('le')}, not {value!r}"[:300]
    return f"argument '{name}': {err['msg']}"


class ToolGuard:
    def __init__(self, settings: Settings, limiter: RateLimiter, activity: Activity | None = None) -> None:
        self.settings = settings
        self.limiter = limiter
        self.activity = activity or Activity()  # the calls running: an idle trim waits for none (caches/budget.py)

    @metrics.tool_calls
    async def run(
        self,
        *,
        tool: str,
        kind: TimeoutClass,
        client: str,
        parse: Callable[[], Parsed],
        invoke: Callable[[Parsed], Awaitable[Any]],
    ) -> Any:
        """``parse()`` validates the arguments (after the rate limit, before the timeout starts);
        ``invoke(parsed)`` runs the tool within its timeout."""
        request_id = new_request_id()
        rid_token = request_id_var.set(request_id)
        tool_token = tool_var.set(tool)
        started = time.perf_counter()
        timeout = self.settings.timeout_for(kind)
        logger.info("tool.start", extra={"client": client})
        # answering(): work the call leaves behind (a big document's complete build) waits for its result
        with self.activity.call(), answering():
            try:
                await self.limiter.check(client)
                parsed = parse()
                with anyio.move_on_after(timeout) as scope:
                    result = await invoke(parsed)
                if scope.cancelled_caught:
                    raise ToolTimeoutError(f"'{tool}' did not finish within {timeout:g} s", timeout=timeout)
                logger.info("tool.success", extra={"elapsed": round(time.perf_counter() - started, 4)})
                return result
            except ToolTimeoutError as exc:
                logger.warning("tool.timeout", extra={"elapsed": round(time.perf_counter() - started, 4),
                                                      "code": exc.code})
                return error_result(exc, request_id)
            except pydantic.ValidationError as exc:
                known = format_validation_error(exc)
                logger.info("tool.known_error", extra={"code": known.code, "error": known.message})
                return error_result(known, request_id)
            except MCPServerError as exc:
                logger.info("tool.known_error", extra={"code": exc.code, "error": exc.message,
                                                       "elapsed": round(time.perf_counter() - started, 4)})
                return error_result(exc, request_id)
            except Exception:
                logger.exception("tool.unhandled_error", extra={"elapsed": round(time.perf_counter() - started, 4)})
                return error_result(
                    MCPServerError(f"Internal error; quote request id {request_id} when reporting it"), request_id
                )
            finally:
                tool_var.reset(tool_token)
                request_id_var.reset(rid_token)
