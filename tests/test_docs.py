"""The README stays a short front door, and every link in the project's Markdown leads somewhere.

Relative links must name a file of the repository and, with ``#anchor``, a heading of that file
(GitHub's anchors: the heading's text lower-cased, punctuation other than ``-`` and ``_`` dropped,
spaces turned into ``-``, ``-1``, ``-2`` ... for repeats). External links are not fetched (the
tests never leave 127.0.0.1); they only have to be well-formed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from mcp_server.tools import TOOLS

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
DOCS = sorted([*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("bench/*.md"),
               ROOT / "client" / "README.md", ROOT / "tests" / "corpus" / "README.md"])

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _prose(text: str) -> str:
    """The text without code blocks, where a `# comment` is no heading and `[x](y)` no link."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").replace("*", "")
    kept = "".join(ch for ch in text.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(_prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    prose = INLINE_CODE.sub("", _prose(path.read_text(encoding="utf-8")))
    return LINK.findall(prose)


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        parsed = urlparse(target)
        if parsed.scheme in ("http", "https"):
            if not parsed.netloc or " " in target:
                broken.append(f"{target}: not a well-formed URL")
            continue
        if parsed.scheme == "mailto":
            continue
        if parsed.scheme or parsed.netloc:
            broken.append(f"{target}: unknown scheme")
            continue
        file = (path.parent / unquote(parsed.path)).resolve() if parsed.path else path
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif parsed.fragment:
            if file.suffix != ".md":
                broken.append(f"{target}: an anchor into a file that is not Markdown")
            elif parsed.fragment not in anchors(file):
                broken.append(f"{target}: no heading with this anchor in {os.path.relpath(file, path.parent)}")
    return broken


def test_the_readme_fits_in_250_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; reference material goes to docs/"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_readme_links_to_every_reference_page() -> None:
    readme_links = {urlparse(target).path for target in links(ROOT / "README.md")}
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")} | {"bench/README.md", "SECURITY.md"}
    assert pages - readme_links == set()


def tools_in_table(path: Path, section: str) -> set[str]:
    """The tool names a Markdown table under ``## section`` starts its rows with (one row may name
    several, as the README's row of the ``extract_*`` tools does)."""
    text = _prose(path.read_text(encoding="utf-8"))
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in body.splitlines() if line.startswith("| `")]
    return {name for cell in rows for name in re.findall(r"`([a-z_]+)`", cell)}


@pytest.mark.parametrize(("page", "section"),
                         [("README.md", "Tools"), ("docs/tools.md", "Arguments, results, timeouts")])
def test_the_tool_tables_name_every_tool_the_server_lists(page: str, section: str) -> None:
    assert tools_in_table(ROOT / page, section) == {fn.__name__ for fn in TOOLS}


def test_no_page_writes_the_number_of_tools_by_hand() -> None:
    counted = re.compile(r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                         r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)[- ]+(?:MCP )?tools\b", re.I)
    written = [f"{path.relative_to(ROOT)}: {hit}" for path in DOCS  # code blocks too: a diagram, a transcript
               for hit in counted.findall(path.read_text(encoding="utf-8"))]
    assert written == []


def test_anchors_follow_githubs_rules() -> None:
    assert slug("load.py --hosts 2") == "loadpy---hosts-2"
    assert slug("Metrics (Prometheus)") == "metrics-prometheus"
    assert slug("financebench.py, 2026-11-23: ranking long reports") == "financebenchpy-2026-11-23-ranking-long-reports"
    assert slug("`metrics_overhead.py` **now**") == "metrics_overheadpy-now"
    assert slug("Ελληνικά και 中文") == "ελληνικά-και-中文"


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## Part one\n\n## Part one\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[ok](other.md#part-one) [repeat](other.md#part-one-1) [self](#page) [web](https://example.org/x)\n"
        "[gone](missing.md) [no anchor](other.md#part-two) [bad](https://) `[code](ignored.md)`\n\n"
        "```\n[in a block](ignored.md)\n# not a heading\n```\n",
        encoding="utf-8",
    )

    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#part-two: no heading with this anchor in other.md",
        "https://: not a well-formed URL",
    ]
