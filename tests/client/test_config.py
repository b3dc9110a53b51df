"""Provider choice, variables and model construction (no network: models are built, never called)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from langchain_core.tracers.langchain import LangChainTracer
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from client.agent import Transcript, connection, main, preview, tracing_callbacks
from client.config import DEFAULT_SERVER_URL, NO_LLM_MESSAGE, ClientConfig, ConfigError
from client.llm import build_llm

# (environment, provider, model, base_url)
PROVIDER_VECTORS = [
    ({"GOOGLE_API_KEY": "g"}, "google", "gemini-2.5-flash", None),
    ({"GOOGLE_API_KEY": "g", "OPENAI_API_KEY": "o"}, "google", "gemini-2.5-flash", None),
    ({"OPENAI_API_KEY": "o"}, "openai", "gpt-4o-mini", None),
    ({"GOOGLE_API_KEY": "g", "OPENAI_API_KEY": "o", "LLM_PROVIDER": "openai", "LLM_MODEL": "gpt-4.1"},
     "openai", "gpt-4.1", None),
    ({"LLM_BASE_URL": "http://127.0.0.1:8080/v1"}, "local", "local-model", "http://127.0.0.1:8080/v1"),
    ({"OLLAMA_HOST": "127.0.0.1:11434", "LLM_MODEL": "qwen2.5"}, "ollama", "qwen2.5", "http://127.0.0.1:11434"),
    ({"LLM_PROVIDER": "ollama"}, "ollama", "llama3.1", "http://127.0.0.1:11434"),
    ({"LLM_PROVIDER": "Gemini", "GOOGLE_API_KEY": "g"}, "google", "gemini-2.5-flash", None),
    ({"LLM_PROVIDER": "fake", "LLM_FAKE_SCRIPT": "/tmp/script.json"}, "fake", "scripted", None),
]

# (environment, the one-sentence message)
ERROR_VECTORS = [
    ({}, NO_LLM_MESSAGE),
    ({"GOOGLE_API_KEY": "  "}, NO_LLM_MESSAGE),
    ({"LLM_PROVIDER": "google", "OPENAI_API_KEY": "o"}, "LLM_PROVIDER=google needs GOOGLE_API_KEY."),
    ({"LLM_PROVIDER": "openai"}, "LLM_PROVIDER=openai needs OPENAI_API_KEY."),
    ({"LLM_PROVIDER": "local"}, "LLM_PROVIDER=local needs LLM_BASE_URL (for example http://127.0.0.1:8080/v1)."),
    ({"LLM_PROVIDER": "claude"}, "LLM_PROVIDER=claude is not one of google, openai, local, ollama, fake."),
    ({"LLM_PROVIDER": "fake"}, "LLM_PROVIDER=fake needs LLM_FAKE_SCRIPT, the path of a JSON script (a testing aid)."),
    ({"GOOGLE_API_KEY": "g", "AGENT_MAX_STEPS": "0"}, "AGENT_MAX_STEPS=0 must be a positive whole number."),
    ({"GOOGLE_API_KEY": "g", "LANGSMITH_TRACING": "true"},
     "LANGSMITH_TRACING is on but LANGCHAIN_API_KEY is not set."),
]


@pytest.mark.parametrize(("env", "provider", "model", "base_url"), PROVIDER_VECTORS)
def test_the_provider_follows_the_documented_order_and_overrides(
    env: dict[str, str], provider: str, model: str, base_url: str | None,
) -> None:
    config = ClientConfig.from_env(env)

    assert (config.provider, config.model, config.base_url) == (provider, model, base_url)


@pytest.mark.parametrize(("env", "message"), ERROR_VECTORS)
def test_an_incomplete_configuration_is_one_sentence(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ClientConfig.from_env(env)

    assert str(raised.value) == message


def test_main_without_an_llm_prints_the_sentence_and_returns_2() -> None:
    out, err = io.StringIO(), io.StringIO()

    assert main(["hi"], env={}, stdout=out, stderr=err) == 2
    assert (out.getvalue(), err.getvalue()) == ("", NO_LLM_MESSAGE + "\n")


@pytest.mark.parametrize(("env", "model_class", "model_name"), [
    ({"GOOGLE_API_KEY": "g"}, ChatGoogleGenerativeAI, "gemini-2.5-flash"),
    ({"OPENAI_API_KEY": "o", "LLM_MODEL": "gpt-4.1-mini"}, ChatOpenAI, "gpt-4.1-mini"),
    ({"LLM_BASE_URL": "http://127.0.0.1:8080/v1"}, ChatOpenAI, "local-model"),
    ({"OLLAMA_HOST": "http://127.0.0.1:11434"}, ChatOllama, "llama3.1"),
])
def test_build_llm_makes_the_configured_chat_model(
    env: dict[str, str], model_class: type, model_name: str,
) -> None:
    llm = build_llm(ClientConfig.from_env(env))

    assert isinstance(llm, model_class)
    assert getattr(llm, "model", None) in (model_name, f"models/{model_name}")


def test_the_local_endpoint_gets_its_base_url() -> None:
    llm = build_llm(ClientConfig.from_env({"LLM_BASE_URL": "http://127.0.0.1:8080/v1"}))

    assert isinstance(llm, ChatOpenAI) and llm.openai_api_base == "http://127.0.0.1:8080/v1"


def test_the_server_url_defaults_and_the_api_key_becomes_a_bearer_header() -> None:
    default = ClientConfig.from_env({"GOOGLE_API_KEY": "g"})
    keyed = ClientConfig.from_env({"GOOGLE_API_KEY": "g", "MCP_SERVER_URL": "http://10.0.0.5:9000/mcp",
                                   "MCP_API_KEY": "k1"})

    assert default.server_url == DEFAULT_SERVER_URL == "http://127.0.0.1:8000/mcp"
    assert connection(default).get("headers") is None
    assert connection(keyed)["url"] == "http://10.0.0.5:9000/mcp"
    assert connection(keyed).get("headers") == {"Authorization": "Bearer k1"}


def test_langsmith_variables_configure_a_tracer_and_are_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import langsmith

    made: list[dict[str, Any]] = []
    # The real client probes the endpoint in a background thread; record its arguments instead.
    monkeypatch.setattr(langsmith, "Client", lambda **kwargs: made.append(kwargs) or object())
    env = {"GOOGLE_API_KEY": "g", "LANGSMITH_TRACING": "true", "LANGCHAIN_API_KEY": "ls-key",
           "LANGSMITH_ENDPOINT": "http://127.0.0.1:1984", "LANGCHAIN_PROJECT": "rag-client"}

    [tracer] = tracing_callbacks(ClientConfig.from_env(env).tracing)

    assert tracing_callbacks(ClientConfig.from_env({"GOOGLE_API_KEY": "g"}).tracing) == []
    assert isinstance(tracer, LangChainTracer) and tracer.project_name == "rag-client"
    assert made == [{"api_url": "http://127.0.0.1:1984", "api_key": "ls-key"}]


def test_a_tool_result_preview_is_one_line_of_at_most_300_characters() -> None:
    long = "word\n" * 200

    assert preview("a\n  b") == "a b"
    assert len(preview(long)) == 303 and preview(long).endswith("...")


def test_the_transcript_prints_tool_calls_with_their_arguments() -> None:
    from langchain_core.messages import AIMessage

    out = io.StringIO()
    Transcript(out).message(AIMessage("", tool_calls=[
        {"name": "query_spreadsheet", "args": {"search_value": "John Doe", "document_url": "http://h/s.xlsx"},
         "id": "1", "type": "tool_call"},
    ]))

    assert out.getvalue() == ("  [TOOL CALL] query_spreadsheet(search_value='John Doe', "
                              "document_url='http://h/s.xlsx')\n")
