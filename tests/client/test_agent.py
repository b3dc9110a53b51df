"""The agent end to end: a scripted model's tool calls go through MultiServerMCPClient to a real server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from client.agent import SYSTEM_PROMPT, content_text, main
from client.config import CLIENT_DIR, NO_LLM_MESSAGE
from client.fake_llm import ScriptedChatModel
from tests.client._rag import ROOT, FileServer, free_port, http_client, payload, rag_server_process
from tests.client.helpers import call, say, write_script

PDF = "docs/pdf/multi_page.pdf"
XLSX = "docs/xlsx/stanley-cups.xlsx"
ALL_TOOLS = {
    "process_document", "chunk_document", "retrieve_chunks", "query_spreadsheet", "extract_pdf_text",
    "extract_docx_text", "extract_pptx_text", "extract_xlsx_tables", "extract_csv_tables", "extract_image_text",
    "detect_language", "get_system_health", "manage_cache", "search_documents", "get_passage",
    "read_document", "verify_quote", "get_page_image",
}


def run_agent(argv: list[str], server_url: str, model: ScriptedChatModel, stdin: str = "",
              **env: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, env={"MCP_SERVER_URL": server_url, **env}, stdin=io.StringIO(stdin), stdout=out,
                stderr=err, llm=model)
    return code, out.getvalue(), err.getvalue()


def tool_result(messages: list[BaseMessage], name: str) -> ToolMessage:
    """The last result of tool ``name`` among the messages the model was sent."""
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == name][-1]


def result_json(message: ToolMessage) -> dict[str, Any]:
    return json.loads(content_text(message.content))


def test_one_shot_tool_results_from_a_pdf_and_a_spreadsheet_reach_the_model_and_the_transcript(
    rag_server: str, corpus_server: FileServer,
) -> None:
    pdf, xlsx = corpus_server.url(PDF), corpus_server.url(XLSX)
    model = ScriptedChatModel(script=[
        call("retrieve_chunks", document_url=pdf, query="Who patented the typewriter, and when?"),
        call("query_spreadsheet", document_url=xlsx, search_value="Maple Leafs"),
        say("Sholes patented the typewriter in 1868 (page 1); the Maple Leafs won 13 Stanley Cups."),
    ])

    code, out, err = run_agent([f"Who patented the typewriter in {pdf}?"], rag_server, model)

    assert (code, err) == (0, "")
    assert set(model.bound_tools) == ALL_TOOLS
    first, after_pdf, after_xlsx = model.received
    assert isinstance(first[0], SystemMessage) and first[0].content == SYSTEM_PROMPT
    assert isinstance(first[-1], HumanMessage) and pdf in str(first[-1].content)
    passages = result_json(tool_result(after_pdf, "retrieve_chunks"))["results"]
    assert any("Sholes" in passage["text"] for passage in passages)
    rows = result_json(tool_result(after_xlsx, "query_spreadsheet"))["matches"]
    assert rows and all({"Maple Leafs", "TOR"} <= {str(v) for v in row.values()} for row in rows)
    assert f"  [TOOL CALL] retrieve_chunks(document_url='{pdf}', query='Who patented the typewriter, and when?')" \
        in out
    assert "  [TOOL RESULT] retrieve_chunks -> " in out
    assert f"  [TOOL CALL] query_spreadsheet(document_url='{xlsx}', search_value='Maple Leafs')" in out
    assert "  [TOOL RESULT] query_spreadsheet -> " in out and "Maple Leafs" in out.split("query_spreadsheet -> ")[1]
    assert out.rstrip().endswith("the Maple Leafs won 13 Stanley Cups.")


def test_the_prompt_teaches_comparing_with_search_documents_and_quoting_with_get_passage() -> None:
    for name in ("search_documents(document_urls", "per_document", "get_passage(passage_id", "max_tokens"):
        assert name in SYSTEM_PROMPT, name


def test_a_comparison_across_documents_then_a_quote_reach_the_model(rag_server: str,
                                                                    corpus_server: FileServer) -> None:
    urls = [corpus_server.url(PDF), corpus_server.url("docs/docx/testWORD.docx")]
    search = {"document_urls": urls, "query": "word processors", "per_document": 1}

    async def first_passage_id() -> str:
        async with http_client(rag_server) as session:
            return str(payload(await session.call_tool("search_documents", search))["results"][0]["passage_id"])

    pid = anyio.run(first_passage_id)
    model = ScriptedChatModel(script=[
        call("search_documents", **search),
        call("get_passage", passage_id=pid, before=1, after=1),
        say("Both documents are about word processing (page 1)."),
    ])

    code, out, err = run_agent([f"Compare {urls[0]} and {urls[1]}"], rag_server, model)

    assert (code, err) == (0, "")
    found = result_json(tool_result(model.received[1], "search_documents"))
    assert [r["document_url"] for r in found["results"]] in (urls, urls[::-1])  # one from each
    passage = result_json(tool_result(model.received[2], "get_passage"))
    assert passage["passage_id"] == pid and any(c["target"] for c in passage["chunks"])
    assert "  [TOOL CALL] get_passage(" in out


def test_the_repl_keeps_history_within_the_session_and_stops_at_quit(
    rag_server: str, corpus_server: FileServer,
) -> None:
    xlsx = corpus_server.url(XLSX)
    model = ScriptedChatModel(script=[
        call("query_spreadsheet", document_url=xlsx, search_value="Flyers"),
        say("The Flyers (PHI) have 2 Stanley Cups."),
        say("You asked about the Flyers."),
        say("never reached"),
    ])
    stdin = f"How many cups have the Flyers won? {xlsx}\n\nWhich team did I ask about?\nquit\nignored\n"

    code, out, err = run_agent([], rag_server, model, stdin=stdin)

    assert (code, err) == (0, "")
    assert len(model.received) == 3
    second_question = model.received[2]
    assert [type(m) for m in second_question[1:]] == [HumanMessage, AIMessage, ToolMessage, AIMessage, HumanMessage]
    assert second_question[4].content == "The Flyers (PHI) have 2 Stanley Cups."
    assert "PHI" in content_text(second_question[3].content)
    assert out.startswith("LangChain MCP Agent\n")
    assert "Type 'quit' to exit" in out
    assert f"[TOOL CALL] query_spreadsheet(document_url='{xlsx}', search_value='Flyers')" in out
    assert "The Flyers (PHI) have 2 Stanley Cups." in out and "You asked about the Flyers." in out
    assert "never reached" not in out


def test_a_tool_error_from_the_server_reaches_the_model_as_text_and_the_turn_completes(
    rag_server: str, corpus_server: FileServer,
) -> None:
    missing = corpus_server.url("docs/pdf/no-such-file.pdf")
    model = ScriptedChatModel(script=[
        call("retrieve_chunks", document_url=missing, query="anything"),
        say("That document could not be downloaded."),
    ])

    code, out, err = run_agent(["What does it say?"], rag_server, model)

    assert (code, err) == (0, "")
    error = tool_result(model.received[1], "retrieve_chunks")
    assert error.status == "error"
    assert result_json(error)["code"] == "DOWNLOAD_ERROR"
    assert "  [TOOL RESULT] retrieve_chunks (error) -> " in out and "DOWNLOAD_ERROR" in out
    assert out.rstrip().endswith("That document could not be downloaded.")


def test_every_kind_of_tool_error_reaches_the_model_with_its_code_and_message(corpus_server: FileServer,
                                                                             tmp_path: Path) -> None:
    model = ScriptedChatModel(script=[
        call("retrieve_chunks", document_url="http://169.254.169.254/latest", query="credentials"),
        call("extract_pdf_text", document_url=corpus_server.url("docs/pdf/password.pdf")),
        call("manage_cache", action="explode"),
        call("detect_language", text="one call more than a limit of three a minute allows"),
        say("Four errors."),
    ])

    with rag_server_process(tmp_path, MCP_RATE_LIMIT_RPM="3", MCP_LOAD_MODELS="false") as url:
        code, out, err = run_agent(["Try them all."], url, model)

    assert (code, err) == (0, "")
    results = [m for m in model.received[-1] if isinstance(m, ToolMessage)]
    assert [m.status for m in results] == ["error"] * 4
    blocked, encrypted, bad_action, limited = (result_json(m) for m in results)
    assert blocked["code"] == "DOWNLOAD_ERROR" and "169.254.169.254" in blocked["error"]
    assert encrypted["code"] == "PROCESSING_ERROR" and "password required" in encrypted["error"]
    assert bad_action["code"] == "VALIDATION_ERROR" and "action" in bad_action["error"]
    assert limited["code"] == "RATE_LIMITED" and limited["retry_after"] > 0
    assert all(len(body["request_id"]) == 12 for body in (blocked, encrypted, bad_action, limited))


def test_a_model_that_never_stops_calling_tools_is_cut_off_after_agent_max_steps(rag_server: str) -> None:
    model = ScriptedChatModel(script=[call("get_system_health")] * 5)

    code, out, err = run_agent(["Loop forever"], rag_server, model, AGENT_MAX_STEPS="2")

    assert (code, err) == (0, "")
    assert out.count("[TOOL RESULT] get_system_health -> ") == 2
    assert "(stopped after 2 tool rounds without an answer; see AGENT_MAX_STEPS)" in out


def test_an_unreachable_server_is_named_in_one_clear_message() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"

    code, out, err = run_agent(["hello"], url, ScriptedChatModel(script=[]))

    assert code == 1 and out == ""
    assert err == (f"Cannot reach the MCP server at {url} (All connection attempts failed): start it with "
                   "`python -m mcp_server` or set MCP_SERVER_URL.\n")


def test_mcp_api_key_is_sent_as_a_bearer_token_and_a_missing_one_is_explained(tmp_path: Path) -> None:
    with rag_server_process(tmp_path, MCP_API_KEYS="client-test-key", MCP_LOAD_MODELS="false") as url:
        code, _, refused = run_agent(["hello"], url, ScriptedChatModel(script=[]))
        model = ScriptedChatModel(script=[call("get_system_health"), say("healthy")])
        accepted = run_agent(["hello"], url, model, MCP_API_KEY="client-test-key")

    assert code == 1
    assert refused == (f"The MCP server at {url} refused the request (HTTP 401): set MCP_API_KEY to "
                       "one of the keys in the server's MCP_API_KEYS.\n")
    assert accepted[0] == 0 and accepted[2] == ""
    assert '"status"' in content_text(tool_result(model.received[1], "get_system_health").content)


def script_env(**extra: str) -> dict[str, str]:
    """The process environment without any LLM or server settings, plus ``extra``."""
    drop = {"GOOGLE_API_KEY", "OPENAI_API_KEY", "LLM_PROVIDER", "LLM_MODEL", "LLM_BASE_URL", "OLLAMA_HOST",
            "LLM_API_KEY", "MCP_SERVER_URL", "MCP_API_KEY", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def run_script(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "client" / "agent.py"), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.skipif((CLIENT_DIR / ".env").exists(), reason="a local client/.env configures an LLM")
def test_without_an_llm_configured_the_script_says_which_variables_to_set_and_exits_2(tmp_path: Path) -> None:
    done = run_script(["hello"], script_env(), cwd=tmp_path)

    assert done.returncode == 2
    assert (done.stdout, done.stderr) == ("", NO_LLM_MESSAGE + "\n")


def test_the_script_answers_one_shot_with_the_fake_provider(
    rag_server: str, corpus_server: FileServer, tmp_path: Path,
) -> None:
    xlsx = corpus_server.url(XLSX)
    script = write_script(tmp_path / "script.json", [
        call("query_spreadsheet", document_url=xlsx, search_value="Blues", column="Team"),
        say("The Blues (STL) have won 1 Stanley Cup."),
    ])
    env = script_env(LLM_PROVIDER="fake", LLM_FAKE_SCRIPT=str(script), MCP_SERVER_URL=rag_server)

    done = run_script([f"How many cups have the Blues won? {xlsx}"], env, cwd=tmp_path)

    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == f"  [TOOL CALL] query_spreadsheet(document_url='{xlsx}', search_value='Blues', column='Team')"
    assert lines[1].startswith("  [TOOL RESULT] query_spreadsheet -> ") and "STL" in lines[1]
    assert len(lines[1]) <= len("  [TOOL RESULT] query_spreadsheet -> ") + 303
    assert lines[2:] == ["", "The Blues (STL) have won 1 Stanley Cup.", ""]
