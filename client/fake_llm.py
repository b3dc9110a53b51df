"""A scripted chat model: a testing aid that plays back fixed turns and records what it was sent.

Selected with ``LLM_PROVIDER=fake`` and ``LLM_FAKE_SCRIPT=<path>``. The script is a JSON list,
one entry per model turn::

    [
      {"tool_calls": [{"name": "retrieve_chunks", "args": {"document_url": "...", "query": "..."}}]},
      {"content": "The report says ..."}
    ]

Its tool calls are real: the agent runs them against the MCP server like any model's.
LangChain's own fake chat models do not implement ``bind_tools``, which the agent needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

__all__ = ["ScriptedChatModel", "scripted_turn"]

EXHAUSTED = "(the fake model's script has no more turns)"


def scripted_turn(entry: dict[str, Any], turn: int) -> AIMessage:
    """One script entry as the AI message a real model would return."""
    calls = [
        {"name": call["name"], "args": call.get("args", {}), "id": call.get("id", f"call_{turn}_{i}"),
         "type": "tool_call"}
        for i, call in enumerate(entry.get("tool_calls", []))
    ]
    return AIMessage(content=entry.get("content", ""), tool_calls=calls)


class ScriptedChatModel(BaseChatModel):
    """Returns ``script`` entries in order; ``received`` holds the messages of every call."""

    script: list[dict[str, Any]]
    received: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[str] = Field(default_factory=list)

    @classmethod
    def from_file(cls, path: Path) -> ScriptedChatModel:
        script = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(script, list):
            raise ValueError(f"{path}: a fake-model script is a JSON list of turns")
        return cls(script=script)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = [getattr(tool, "name", str(tool)) for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = len(self.received)
        self.received.append(list(messages))
        message = scripted_turn(self.script[turn], turn) if turn < len(self.script) else AIMessage(EXHAUSTED)
        return ChatResult(generations=[ChatGeneration(message=message)])
