"""House rules a reader relies on: the code states contracts and reasons, not its history (the story
of a change lives in git and bench/, never in mcp_server/); the benchmarks stand on their own
modules (bench/data.py, bench/servers.py), not on the tests' harness."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_server"
BENCH = PACKAGE.parent / "bench"
# Phrases that only tell how the code came to be: an issue number, the project it started from.
HISTORY_PHRASES = ("issue #", "the seed")


def history_mentions(root: Path) -> list[str]:
    """``path:line: phrase`` for every history phrase (case-insensitive) in the text files under ``root``."""
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary data files (model weights, fixtures) say nothing
            continue
        for number, line in enumerate(text.lower().splitlines(), start=1):
            found.extend(f"{path.relative_to(root)}:{number}: {phrase}" for phrase in HISTORY_PHRASES if phrase in line)
    return found


def test_no_file_under_mcp_server_tells_the_history_of_the_code() -> None:
    assert history_mentions(PACKAGE) == []


def test_the_history_check_finds_an_issue_number_and_the_seed_in_any_case(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text('"""Fixed in Issue #12."""\nx = 1  # as The Seed did\n', encoding="utf-8")
    (tmp_path / "clean.py").write_text("y = 2  # a fixed seed keeps runs reproducible\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe issue # \x00")

    assert history_mentions(tmp_path) == ["pkg/a.py:1: issue #", "pkg/a.py:2: the seed"]


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def test_no_benchmark_imports_the_tests() -> None:
    offenders = {path.name: sorted(name for name in imported_modules(path)
                                   if name.split(".")[0] in {"tests", "conftest", "mcp_harness"})
                 for path in sorted(BENCH.glob("*.py"))}
    assert {name: modules for name, modules in offenders.items() if modules} == {}


def thread_hops(root: Path) -> list[str]:
    """``path:line`` of every call of a function named ``run_sync`` (ours or anyio's) under ``root``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
                if name == "run_sync":
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_thread_hop_is_written_only_at_the_blocking_objects_seams() -> None:
    # each blocking object (model runner, index tiers, cache layers, fetcher, reports) exposes an
    # async API that hops once per operation; callers do not hop themselves (core/concurrency.py)
    hops = thread_hops(PACKAGE)
    assert len(hops) <= 12, hops


def test_the_hop_count_sees_both_spellings_of_the_call(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("async def f():\n    await run_sync(g)\n    await anyio.to_thread.run_sync(g)\n"
                                   "def run_sync(fn): ...\n", encoding="utf-8")

    assert thread_hops(tmp_path) == ["a.py:2", "a.py:3"]


def class_lengths(root: Path) -> dict[str, int]:
    """``path:Class`` -> lines, for every class under ``root``."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                found[f"{path.relative_to(root)}:{node.name}"] = node.end_lineno - node.lineno + 1
    return found


def test_no_class_but_the_settings_is_longer_than_220_lines() -> None:
    # a longer class holds several jobs: split it by job (the settings are one list of fields)
    lengths = class_lengths(PACKAGE)
    assert {name: n for name, n in lengths.items() if n > 220 and name != "core/settings.py:Settings"} == {}


def test_a_class_is_measured_from_its_line_to_its_last(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class A:\n    x = 1\n\n    def f(self) -> None:\n        pass\n", encoding="utf-8")

    assert class_lengths(tmp_path) == {"a.py:A": 5}
