"""Turns for the scripted fake model (client/fake_llm.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def call(name: str, **args: Any) -> dict[str, Any]:
    """A fake-model turn that calls one tool."""
    return {"tool_calls": [{"name": name, "args": args}]}


def say(text: str) -> dict[str, Any]:
    """A fake-model turn that answers."""
    return {"content": text}


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(turns), encoding="utf-8")
    return path
