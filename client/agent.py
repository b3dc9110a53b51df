"""A LangChain ReAct agent that answers questions about documents with the RAG Document Server's tools.

The server is a plain tool provider (no LLM); this process owns the model and all reasoning.

    python client/agent.py                                   # interactive REPL ("quit" to exit)
    python client/agent.py "Summarise http://host/report.pdf"  # one shot

Exit codes: 0 answered, 1 the server or the model failed, 2 the configuration is incomplete.
"""

# ruff: noqa: E402  (the path fix below must run before the client package is importable)
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # `python client/agent.py`: import the client package from the repo root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import asyncio
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, TextIO

import httpx
from dotenv import load_dotenv
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.sessions import StreamableHttpConnection
from langgraph.errors import GraphRecursionError

from client.citations import check_quotes, documents_named, report
from client.config import CLIENT_DIR, ClientConfig, ConfigError, TracingConfig
from client.llm import build_llm, describe

__all__ = ["SYSTEM_PROMPT", "AgentSession", "ServerError", "connect", "load_tools", "main"]

SERVER_NAME = "rag"
PREVIEW_CHARS = 300
QUIT_WORDS = {"quit", "exit", "q"}

SYSTEM_PROMPT = """\
You answer questions about documents (PDF, DOCX, PPTX, XLSX, CSV, HTML, text, images) that the user
names by URL. You cannot open URLs yourself: use the tools of the RAG Document Server, and answer
only from what they return.

Choosing a tool:
- A question about a document's content: retrieve_chunks(document_url, query). Put the user's
  question, in their words, in query; raise top_k (up to 20) for broad questions and use
  neighbors=1 when a passage looks cut off.
- A question about several documents, or one where you do not know which document holds the
  answer: search_documents(document_urls=[...], query) searches them all at once and ranks every
  passage on one scale (its scores compare across documents). To compare documents ("how did
  revenue change between the Q1 and Q3 reports", "which of these contracts allows early
  termination") set per_document (e.g. 2) so each document contributes its best passages; each
  result names its document_url. pages="3-7,12" narrows to pages; queries=[...] adds other
  phrasings of the question (e.g. a synonym or the formal term); documents[] says which ones
  failed (answer from the others and say which could not be read).
- Quoting or reading around a passage: every result has a passage_id; get_passage(passage_id,
  before=1, after=1) returns that exact chunk and up to 5 neighbours each way with their locations,
  without downloading again. Quote from it rather than from memory.
- Long answers: max_tokens on retrieve_chunks or search_documents keeps the best results that fit;
  `omitted` says how many were left out.
- Reading a document through (or pages of it): read_document(document_url, pages="3-7",
  max_tokens=4000) returns its text in reading order and next_cursor; call it again with
  cursor=next_cursor to read on (null: the end).
- Quoting: put every quotation in double quotes, copied word for word from a tool result, and
  check it first with verify_quote(document_url, quote): "exact" gives its page; "close" shows the
  document's own wording (quote that instead); "none" means do not quote it. This client checks
  every quote of your answer again and shows the user the result.
- Looking at a PDF page (a table, a chart): get_page_image(document_url, page, passage_id=...)
  returns it as an image, cropped to the passage when passage_id is given.
- Looking up rows in a spreadsheet (XLSX or CSV), e.g. "the phone number of John Doe" or "the
  1994 winner": query_spreadsheet(document_url, search_value) with the name or value to find,
  optionally column=<header> to search one column. Answer from the matching rows' cells.
- A summary or an overview of a whole document: process_document(document_url) and summarise
  its content (check `truncated`: say so when the document was cut).
- Raw text or tables without analysis: extract_pdf_text, extract_docx_text, extract_pptx_text,
  extract_xlsx_tables, extract_csv_tables; text in a picture: extract_image_text(image_url).
- The chunks of a document: chunk_document; the language of some text: detect_language.

Citing: every result of retrieve_chunks and search_documents has a location (page or pages, slide,
sheet and rows, heading_path). Cite it after the facts you use, e.g. "(page 3)", "(slide 2)", "(sheet
Sales, rows 4-6)"; with several documents name the document too, e.g. "(Q3 report, page 5)"; for
query_spreadsheet cite the sheet and row_number.

When a tool returns {"error", "code"}: DOWNLOAD_ERROR or a bad URL means tell the user the document
could not be fetched; RATE_LIMITED means wait retry_after seconds before trying again; otherwise
explain the error briefly. Never invent document content. If the results do not answer the
question, say so.
"""


class ServerError(Exception):
    """The MCP server cannot be reached or refused us; the message names the URL."""


# --- the MCP side ---------------------------------------------------------------------------

def connection(config: ClientConfig) -> StreamableHttpConnection:
    headers = {"Authorization": f"Bearer {config.mcp_api_key}"} if config.mcp_api_key else None
    # Document tools may run for up to 300 s on the server; the stream must outlast them.
    return StreamableHttpConnection(transport="streamable_http", url=config.server_url, headers=headers,
                                    timeout=timedelta(seconds=30), sse_read_timeout=timedelta(seconds=330))


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exception, the members of exception groups, and their causes, depth first."""
    yield exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    if exc.__cause__ is not None:
        yield from _leaves(exc.__cause__)


def server_problem(exc: BaseException, url: str) -> str | None:
    """A sentence for a transport failure talking to the server, or None if ``exc`` is something else."""
    for leaf in _leaves(exc):
        if isinstance(leaf, httpx.HTTPStatusError):
            status = leaf.response.status_code
            if status in (401, 403):
                return (f"The MCP server at {url} refused the request (HTTP {status}): set MCP_API_KEY to "
                        "one of the keys in the server's MCP_API_KEYS.")
            if status == 404:
                return f"No MCP endpoint at {url} (HTTP 404): check MCP_SERVER_URL (it usually ends in /mcp)."
            return f"The MCP server at {url} answered HTTP {status}."
        if isinstance(leaf, httpx.TimeoutException):
            return f"The MCP server at {url} did not answer in time ({type(leaf).__name__})."
        if isinstance(leaf, httpx.TransportError):
            return (f"Cannot reach the MCP server at {url} ({leaf or type(leaf).__name__}): start it with "
                    "`python -m mcp_server` or set MCP_SERVER_URL.")
    return None


async def load_tools(config: ClientConfig) -> list[BaseTool]:
    """The server's tools as LangChain tools; an ``isError`` result reaches the model as error text."""
    client = MultiServerMCPClient({SERVER_NAME: connection(config)}, handle_tool_errors=True)
    try:
        return await client.get_tools(server_name=SERVER_NAME)
    except Exception as exc:
        problem = server_problem(exc, config.server_url)
        raise ServerError(problem or f"Cannot use the MCP server at {config.server_url}: {exc!r}") from exc


def tracing_callbacks(tracing: TracingConfig | None) -> list[BaseCallbackHandler]:
    """A LangSmith tracer configured from the client's variables (nothing is traced without them)."""
    if tracing is None:
        return []
    from langchain_core.tracers.langchain import LangChainTracer
    from langsmith import Client

    return [LangChainTracer(project_name=tracing.project,
                            client=Client(api_url=tracing.endpoint, api_key=tracing.api_key))]


# --- the transcript -------------------------------------------------------------------------

def content_text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            parts.append(block.get("text", f"[{block.get('type', 'block')}]"))
    return "\n".join(parts)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


class Transcript:
    """Prints tool calls, tool results and answers as the agent produces them."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, line: str = "") -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def message(self, message: BaseMessage) -> None:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                args = ", ".join(f"{key}={value!r}" for key, value in call["args"].items())
                self.write(f"  [TOOL CALL] {call['name']}({args})")
        elif isinstance(message, ToolMessage):
            failed = " (error)" if message.status == "error" else ""
            self.write(f"  [TOOL RESULT] {message.name}{failed} -> {preview(content_text(message.content))}")

    def answer(self, text: str) -> None:
        self.write()
        self.write(text.strip() or "(the model gave no answer)")
        self.write()


# --- the agent ------------------------------------------------------------------------------

class AgentSession:
    """One conversation: the agent graph plus the history of earlier turns."""

    def __init__(self, config: ClientConfig, llm: BaseChatModel, tools: Sequence[BaseTool],
                 transcript: Transcript) -> None:
        self.config = config
        self.tools = list(tools)
        self.transcript = transcript
        self.history: list[BaseMessage] = []
        self.graph = create_agent(llm, self.tools, system_prompt=SYSTEM_PROMPT)
        self.run_config = RunnableConfig(
            recursion_limit=2 * config.max_steps + 1,  # a model step and a tool step per round
            callbacks=tracing_callbacks(config.tracing),
        )

    async def ask(self, question: str) -> str:
        """Run one turn, printing as it goes; history grows only when the turn completes."""
        messages: list[BaseMessage] = [*self.history, HumanMessage(question)]
        seen = len(messages)
        final = messages
        try:
            graph_input: Any = {"messages": messages}
            async for state in self.graph.astream(graph_input, config=self.run_config, stream_mode="values"):
                final = state["messages"]
                for message in final[seen:]:
                    self.transcript.message(message)
                seen = len(final)
        except GraphRecursionError:
            answer = (f"(stopped after {self.config.max_steps} tool rounds without an answer; "
                      "see AGENT_MAX_STEPS)")
            self.transcript.answer(answer)
            return answer
        answer = final[-1].text if isinstance(final[-1], AIMessage) else ""
        self.history = list(final)
        # every document of the conversation: a follow-up may quote one an earlier turn read
        checks = await check_quotes(answer, documents_named(final), self.tools)
        if checks:  # the model's message stays as it was in the history; the user sees the check
            answer = f"{answer.rstrip()}\n\n{report(checks)}"
        self.transcript.answer(answer)
        return answer


async def connect(config: ClientConfig, transcript: Transcript,
                  llm: BaseChatModel | None = None) -> AgentSession:
    tools = await load_tools(config)
    return AgentSession(config, llm if llm is not None else build_llm(config), tools, transcript)


def failure_message(exc: Exception, config: ClientConfig) -> str:
    if isinstance(exc, ServerError):
        return str(exc)
    problem = server_problem(exc, config.server_url)
    return problem or f"The agent failed: {type(exc).__name__}: {exc}"


async def read_line(stdin: TextIO, out: TextIO) -> str | None:
    """The next question, or None at end of input."""
    if stdin is sys.stdin and out is sys.stdout and stdin.isatty():
        try:
            return await asyncio.to_thread(input, "> ")  # input() gives line editing
        except EOFError:
            return None
    out.write("> ")
    out.flush()
    line = await asyncio.to_thread(stdin.readline)
    return line if line else None


async def repl(session: AgentSession, stdin: TextIO, err: TextIO) -> int:
    out = session.transcript
    out.write("LangChain MCP Agent")
    out.write(f"Connected to {session.config.server_url} ({len(session.tools)} tools), "
              f"model {describe(session.config)}")
    out.write("Type 'quit' to exit")
    out.write()
    while (line := await read_line(stdin, out.out)) is not None:
        question = line.strip()
        if question.lower() in QUIT_WORDS:
            break
        if not question:
            continue
        try:
            await session.ask(question)
        except Exception as exc:  # report and keep the session: the next question may work
            err.write(failure_message(exc, session.config) + "\n")
    return 0


async def amain(question: str | None, config: ClientConfig, llm: BaseChatModel | None,
                stdin: TextIO, out: TextIO, err: TextIO) -> int:
    try:
        session = await connect(config, Transcript(out), llm)
    except (ServerError, ConfigError) as exc:
        err.write(f"{exc}\n")
        return 1 if isinstance(exc, ServerError) else 2
    if question is None:
        return await repl(session, stdin, err)
    try:
        await session.ask(question)
    except Exception as exc:
        err.write(failure_message(exc, config) + "\n")
        return 1
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="agent.py", description="Ask questions about documents through the RAG Document Server's tools.",
        epilog="Configured by environment variables or client/.env; see client/README.md.",
    )
    parser.add_argument("question", nargs="*",
                        help="ask one question and exit (no question: interactive REPL)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None,
         stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None,
         llm: BaseChatModel | None = None) -> int:
    """The CLI. ``env`` defaults to the process environment plus client/.env; ``llm`` replaces the
    configured model (tests inject a scripted one)."""
    args = parse_args(argv)
    err = stderr or sys.stderr
    if env is None:
        load_dotenv(CLIENT_DIR / ".env", override=False)
        env = os.environ
    try:
        config = ClientConfig.from_env(env, require_llm=llm is None)
    except ConfigError as exc:
        err.write(f"{exc}\n")
        return 2
    question = " ".join(args.question).strip() or None
    try:
        return asyncio.run(amain(question, config, llm, stdin or sys.stdin, stdout or sys.stdout, err))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
