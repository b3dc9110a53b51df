"""Real files from parsers' own test suites: read, empty or refused (and why), per format.

    .venv/bin/python bench/wild.py [--files DIR] [--baseline CHECKOUT] [--markitdown PYTHON] [--show]

Every file of ``../shared/corpus/wild-dev/files`` (or ``--files``: a folder with a ``manifest.json``
beside it, as the held-out thirds are laid out) goes through ``process_document`` over MCP on one
real server (``python -m mcp_server``, models off: reading needs none), the files served on
127.0.0.1 under their own names, one call at a time, as a new user would send them. Each answer is:

- ``read``: the content holds words (page, slide and sheet markers alone do not count);
- ``empty``: an answer with no words; its ``metadata.empty_reason`` says why (``none`` when the
  server did not say);
- ``refused``: a tool error, counted by its ``reason`` (else its code), e.g. ``encrypted``,
  ``corrupt``, ``bomb``;
- ``hang``: no answer within ``--timeout`` seconds (the client gives up; the server must not).

A thread asks GET /health every 0.5 s through the run: ``/health missed`` counts answers slower than
1 s or failing. ``--baseline`` runs another checkout (main's) in the same run, one server after the
other, on the same files. ``--markitdown`` names a Python that has ``markitdown[all]`` (its own
virtualenv: its pins are not the server's); each file is converted in that interpreter (60 s limit
per file) and counted read or not by the same word test. Evaluation only: the files are never
copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.data import load_average, table  # noqa: E402

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "wild-dev" / "files"
# Lines that are structure, not text: "## Page 3", "## Slide 2", "## Sheet: Sheet1", "---".
_MARKER = re.compile(r"^\s*(#+\s*)?((page|slide|sheet)\b[^\n]{0,40}|-{3,}|\|[\s|:-]*\|)\s*$",
                     re.IGNORECASE | re.MULTILINE)
_WORD = re.compile(r"[^\W\d_]{2,}")


def has_words(text: str) -> bool:
    return bool(_WORD.search(_MARKER.sub("", text)))


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    file: str
    group: str
    status: str  # read / empty / refused / hang
    why: str  # the refusal's reason or code, the empty answer's reason, "" when read
    message: str
    chars: int
    seconds: float


def manifest(folder: Path) -> list[dict[str, object]]:
    entries = json.loads((folder.parent / "manifest.json").read_text())
    return [entry for entry in entries if (folder / str(entry["file"])).is_file()]


def _outcome(entry: dict[str, object], body: dict[str, object], is_error: bool, seconds: float) -> Outcome:
    name, group = str(entry["file"]), str(entry["group"])
    if is_error:
        why = str(body.get("reason") or body.get("code") or "?")
        return Outcome(file=name, group=group, status="refused", why=why, message=str(body.get("error", ""))[:160],
                       chars=0, seconds=seconds)
    content = str(body.get("content", ""))
    metadata = body.get("metadata") or {}
    if has_words(content):
        return Outcome(file=name, group=group, status="read", why="", message="", chars=len(content), seconds=seconds)
    why = str(metadata.get("empty_reason", "none")) if isinstance(metadata, dict) else "none"
    return Outcome(file=name, group=group, status="empty", why=why, message=content[:80], chars=len(content),
                   seconds=seconds)


class HealthWatch:
    """GET /health every 0.5 s in a thread; counts answers slower than 1 s or failing."""

    def __init__(self, base: str) -> None:
        self.base, self.missed, self.asked, self.slowest = base, 0, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.wait(0.5):
                started = time.perf_counter()
                try:
                    ok = client.get(f"{self.base}/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.perf_counter() - started
                self.asked += 1
                self.slowest = max(self.slowest, took)
                self.missed += (not ok) or took > 1.0

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def over_mcp(folder: Path, entries: list[dict[str, object]], timeout: float,
             code: Path | None) -> tuple[list[Outcome], HealthWatch]:
    from bench.servers import FileServer, mcp_session, payload, server_env, server_process

    async def read_all(mcp_url: str, files: FileServer) -> list[Outcome]:
        outcomes = []
        async with mcp_session(mcp_url, read_timeout=timeout + 30) as session:
            for entry in entries:
                started = time.perf_counter()
                try:
                    result = await asyncio.wait_for(session.call_tool(
                        "process_document", {"document_url": files.url(str(entry["file"]))}), timeout)
                except TimeoutError:
                    outcomes.append(Outcome(file=str(entry["file"]), group=str(entry["group"]), status="hang",
                                            why="timeout", message="", chars=0, seconds=timeout))
                    continue
                outcomes.append(_outcome(entry, payload(result), bool(result.is_error),
                                         time.perf_counter() - started))
        return outcomes

    env = server_env(MCP_LOAD_MODELS="false")
    with FileServer(folder) as files, server_process(env=env, code=code) as server, HealthWatch(server.base) as watch:
        return asyncio.run(read_all(server.mcp_url, files)), watch


_MARKITDOWN = r"""
import json, signal, sys
from markitdown import MarkItDown
def alarm(*_): raise TimeoutError("markitdown took over 60 s")
signal.signal(signal.SIGALRM, alarm)
md = MarkItDown()
for path in sys.argv[1:]:
    signal.alarm(60)
    try:
        text, error = md.convert(path).text_content or "", ""
    except BaseException as exc:
        text, error = "", type(exc).__name__
    signal.alarm(0)
    print(json.dumps({"path": path, "text": text[:20000], "error": error}), flush=True)
"""


def markitdown(python: str, folder: Path, entries: list[dict[str, object]]) -> list[Outcome]:
    """Each file converted by markitdown in ``python``; a crash of the interpreter costs only the file it
    was on (the rest go on in a new one)."""
    todo = [str(folder / str(entry["file"])) for entry in entries]
    groups = {str(folder / str(entry["file"])): str(entry["group"]) for entry in entries}
    done: dict[str, tuple[str, str]] = {}
    while todo:
        proc = subprocess.run([python, "-c", _MARKITDOWN, *todo], capture_output=True, text=True, check=False)
        for line in proc.stdout.splitlines():
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                done[row["path"]] = (row["text"], row["error"])
        remaining = [path for path in todo if path not in done]
        if remaining:  # the interpreter died on the first of them
            done[remaining[0]] = ("", f"crash ({proc.returncode})")
            remaining = remaining[1:]
        todo = remaining
    outcomes = []
    for path, (text, error) in done.items():
        status = "refused" if error else "read" if has_words(text) else "empty"
        outcomes.append(Outcome(file=Path(path).name, group=groups[path], status=status, why=error,
                                message="", chars=len(text), seconds=0.0))
    return outcomes


def summary(name: str, outcomes: list[Outcome], watch: HealthWatch | None) -> list[object]:
    counts = Counter(o.status for o in outcomes)
    total = len(outcomes)
    refused = Counter(o.why for o in outcomes if o.status == "refused")
    empty = Counter(o.why for o in outcomes if o.status == "empty")
    health = f"{watch.missed} of {watch.asked} (slowest {watch.slowest:.2f} s)" if watch else "-"
    return [name, f"{counts['read']} ({counts['read'] / max(total, 1):.2f})", counts["empty"],
            counts["refused"], counts["hang"], _listing(empty), _listing(refused), health]


def _listing(counter: Counter[str]) -> str:
    return ", ".join(f"{why} {n}" for why, n in counter.most_common()) or "-"


def per_format(runs: dict[str, list[Outcome]]) -> str:
    groups = sorted({o.group for outcomes in runs.values() for o in outcomes})
    rows = []
    for group in groups:
        row: list[object] = [group, sum(o.group == group for o in next(iter(runs.values())))]
        for outcomes in runs.values():
            mine = [o for o in outcomes if o.group == group]
            counts = Counter(o.status for o in mine)
            row.append(f"{counts['read']} / {counts['empty']} / {counts['refused'] + counts['hang']}")
        rows.append(row)
    header = ["format", "files", *(f"{name}: read / empty / refused" for name in runs)]
    return table(header, rows, "lr" + "r" * len(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=Path, default=DEV, help="the files (manifest.json beside the folder)")
    parser.add_argument("--baseline", type=Path, help="another checkout (main's) measured in the same run")
    parser.add_argument("--markitdown", help="a Python interpreter with markitdown[all] installed")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a call counts as a hang")
    parser.add_argument("--show", action="store_true", help="every file that is not read, with its message")
    args = parser.parse_args()
    entries = manifest(args.files)
    print(f"{len(entries)} files of {args.files}; load average before: {load_average()}")
    runs: dict[str, list[Outcome]] = {}
    watches: dict[str, HealthWatch | None] = {}
    checkouts = ([("baseline", args.baseline)] if args.baseline else []) + [("this checkout", None)]
    for name, code in checkouts:
        started = time.perf_counter()
        runs[name], watches[name] = over_mcp(args.files, entries, args.timeout, code)
        print(f"{name}: {time.perf_counter() - started:.0f} s, load average {load_average()}")
    if args.markitdown:
        runs["markitdown"], watches["markitdown"] = markitdown(args.markitdown, args.files, entries), None
    print(table(["reader", "read", "empty", "refused", "hang", "empty: why", "refused: reason", "/health missed"],
                [summary(name, outcomes, watches[name]) for name, outcomes in runs.items()], "lrrrr"))
    print()
    print(per_format(runs))
    if args.show:
        for name, outcomes in runs.items():
            print(f"\n{name}:")
            for o in sorted(outcomes, key=lambda o: (o.status, o.why, o.file)):
                if o.status != "read":
                    print(f"  {o.status:8} {o.why:24} {o.file}  {o.message}")


if __name__ == "__main__":
    main()
