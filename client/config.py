"""The client's settings, read once from an environment mapping (the only place that reads it).

Provider choice, in order: LLM_PROVIDER if set; else GOOGLE_API_KEY -> Gemini (the default),
OPENAI_API_KEY -> OpenAI, LLM_BASE_URL -> a local OpenAI-compatible server, OLLAMA_HOST -> Ollama.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CLIENT_DIR",
    "DEFAULT_MODELS",
    "DEFAULT_SERVER_URL",
    "PROVIDERS",
    "ClientConfig",
    "ConfigError",
    "TracingConfig",
]

CLIENT_DIR = Path(__file__).resolve().parent
DEFAULT_SERVER_URL = "http://127.0.0.1:8000/mcp"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_MAX_STEPS = 25
DEFAULT_MODELS = {
    "google": "gemini-2.5-flash",
    "openai": "gpt-4o-mini",
    "local": "local-model",
    "ollama": "llama3.1",
    "fake": "scripted",
}
PROVIDERS = tuple(DEFAULT_MODELS)
ALIASES = {"gemini": "google", "openai-compatible": "local", "openai_compatible": "local"}

NO_LLM_MESSAGE = (
    "No LLM configured: set GOOGLE_API_KEY (Gemini) or OPENAI_API_KEY (OpenAI), or LLM_BASE_URL "
    "(a local OpenAI-compatible server) or OLLAMA_HOST (Ollama), in the environment or client/.env."
)
TRUE_WORDS = {"1", "true", "yes", "on"}

_Getter = Callable[[str], str | None]


class ConfigError(Exception):
    """The environment does not describe a usable client; the message is one sentence for the user."""


@dataclass(frozen=True, kw_only=True)
class TracingConfig:
    """LangSmith tracing, enabled by LANGSMITH_TRACING (or LANGCHAIN_TRACING_V2)."""

    api_key: str
    endpoint: str | None
    project: str | None


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    provider: str
    model: str
    server_url: str = DEFAULT_SERVER_URL
    mcp_api_key: str | None = None
    google_api_key: str | None = None
    openai_api_key: str | None = None
    base_url: str | None = None
    fake_script: Path | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    tracing: TracingConfig | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, require_llm: bool = True) -> ClientConfig:
        """Raises ConfigError unless a model is configured; ``require_llm=False`` when one is injected."""

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        try:
            provider = _resolve_provider(get)
        except ConfigError:
            if require_llm:
                raise
            provider = "injected"
        base_url = _base_url(provider, get)
        script = get("LLM_FAKE_SCRIPT")
        if provider == "fake" and script is None:
            raise ConfigError("LLM_PROVIDER=fake needs LLM_FAKE_SCRIPT, the path of a JSON script "
                              "(a testing aid).")
        return cls(
            provider=provider,
            model=get("LLM_MODEL") or DEFAULT_MODELS.get(provider, provider),
            server_url=get("MCP_SERVER_URL") or DEFAULT_SERVER_URL,
            mcp_api_key=get("MCP_API_KEY"),
            google_api_key=get("GOOGLE_API_KEY"),
            openai_api_key=get("OPENAI_API_KEY") or get("LLM_API_KEY"),
            base_url=base_url,
            fake_script=Path(script) if script else None,
            max_steps=_positive_int(get("AGENT_MAX_STEPS"), "AGENT_MAX_STEPS", DEFAULT_MAX_STEPS),
            tracing=_tracing(get),
        )


def _resolve_provider(get: _Getter) -> str:
    chosen = get("LLM_PROVIDER")
    if chosen is not None:
        provider = ALIASES.get(chosen.lower(), chosen.lower())
        if provider not in PROVIDERS:
            raise ConfigError(f"LLM_PROVIDER={chosen} is not one of {', '.join(PROVIDERS)}.")
        if provider == "google" and get("GOOGLE_API_KEY") is None:
            raise ConfigError("LLM_PROVIDER=google needs GOOGLE_API_KEY.")
        if provider == "openai" and get("OPENAI_API_KEY") is None:
            raise ConfigError("LLM_PROVIDER=openai needs OPENAI_API_KEY.")
        return provider
    for variable, provider in (("GOOGLE_API_KEY", "google"), ("OPENAI_API_KEY", "openai"),
                               ("LLM_BASE_URL", "local"), ("OLLAMA_HOST", "ollama")):
        if get(variable) is not None:
            return provider
    raise ConfigError(NO_LLM_MESSAGE)


def _base_url(provider: str, get: _Getter) -> str | None:
    if provider == "ollama":
        host = get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        # Ollama's own CLI accepts "host:port" without a scheme; the HTTP client does not.
        return host if "://" in host else f"http://{host}"
    if provider == "local" and get("LLM_BASE_URL") is None:
        raise ConfigError("LLM_PROVIDER=local needs LLM_BASE_URL (for example http://127.0.0.1:8080/v1).")
    if provider in ("local", "openai"):
        return get("LLM_BASE_URL")
    return None


def _tracing(get: _Getter) -> TracingConfig | None:
    enabled = (get("LANGSMITH_TRACING") or get("LANGCHAIN_TRACING_V2") or "").lower() in TRUE_WORDS
    if not enabled:
        return None
    key = get("LANGCHAIN_API_KEY") or get("LANGSMITH_API_KEY")
    if key is None:
        raise ConfigError("LANGSMITH_TRACING is on but LANGCHAIN_API_KEY is not set.")
    return TracingConfig(
        api_key=key,
        endpoint=get("LANGSMITH_ENDPOINT") or get("LANGCHAIN_ENDPOINT"),
        project=get("LANGCHAIN_PROJECT") or get("LANGSMITH_PROJECT"),
    )


def _positive_int(raw: str | None, name: str, default: int) -> int:
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{name}={raw} must be a positive whole number.")
    return int(raw)
