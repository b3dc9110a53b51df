"""The chat model behind the agent: one small factory per provider, picked by ``ClientConfig``.

Provider packages are imported only when chosen, so a missing one names its install and an
unused one costs nothing at start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from langchain_core.language_models import BaseChatModel

from client.config import ClientConfig, ConfigError

__all__ = ["build_llm", "describe"]


def _module(name: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(f"The {package} package is missing: "
                          "client/.venv/bin/pip install -e ./client (make setup does)") from exc


def _google(config: ClientConfig) -> BaseChatModel:
    genai = _module("langchain_google_genai", "langchain-google-genai")
    model: BaseChatModel = genai.ChatGoogleGenerativeAI(
        model=config.model, google_api_key=config.google_api_key, temperature=0,
    )
    return model


def _openai(config: ClientConfig) -> BaseChatModel:
    openai = _module("langchain_openai", "langchain-openai")
    model: BaseChatModel = openai.ChatOpenAI(
        model=config.model, api_key=config.openai_api_key, base_url=config.base_url, temperature=0,
    )
    return model


def _local(config: ClientConfig) -> BaseChatModel:
    openai = _module("langchain_openai", "langchain-openai")
    # Local OpenAI-compatible servers (llama.cpp, vLLM, LM Studio) ignore the key but the SDK wants one.
    model: BaseChatModel = openai.ChatOpenAI(
        model=config.model, api_key=config.openai_api_key or "not-needed", base_url=config.base_url,
        temperature=0,
    )
    return model


def _ollama(config: ClientConfig) -> BaseChatModel:
    ollama = _module("langchain_ollama", "langchain-ollama")
    model: BaseChatModel = ollama.ChatOllama(model=config.model, base_url=config.base_url, temperature=0)
    return model


def _fake(config: ClientConfig) -> BaseChatModel:
    from client.fake_llm import ScriptedChatModel

    assert config.fake_script is not None  # ClientConfig.from_env guarantees it
    return ScriptedChatModel.from_file(config.fake_script)


FACTORIES: dict[str, Callable[[ClientConfig], BaseChatModel]] = {
    "google": _google,
    "openai": _openai,
    "local": _local,
    "ollama": _ollama,
    "fake": _fake,
}


def build_llm(config: ClientConfig) -> BaseChatModel:
    """The chat model for ``config.provider``; builds the client object only, no network call."""
    return FACTORIES[config.provider](config)


def describe(config: ClientConfig) -> str:
    where = f" at {config.base_url}" if config.base_url else ""
    return f"{config.provider}:{config.model}{where}"
