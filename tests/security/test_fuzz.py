"""SECURITY.md L4: every processor fuzzed from the corpus; only typed errors may come out.

One hypothesis target per registered processor, seeded with the corpus files of its format and
mutated (bit flips, overwrites, inserted and deleted runs, truncation, splices; for OOXML also
mutations of one XML part inside an intact zip, so the parsers themselves are reached). Each
input goes to ``processor.process`` in this process, as a parser worker would run it: a
result or an ``MCPServerError`` passes, anything else fails the test (a segfault would end the
run). ``make test`` runs a few examples per processor; ``make fuzz`` (profile "long") thousands.
Inputs that once failed are kept in tests/security/regressions/ and replayed on every run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import zipfile
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from PIL import Image

from mcp_server.core.errors import MCPServerError
from mcp_server.processors import ProcessOptions, get_processor, supported_formats
from mcp_server.processors.base import DocumentInput
from tests.conftest import DOCS

pytestmark = pytest.mark.fuzz

REGRESSIONS = Path(__file__).parent / "regressions"
# processor -> corpus folders and extensions seeding it
SEEDS: dict[str, tuple[str, ...]] = {
    "pdf": ("pdf",), "docx": ("docx",), "pptx": ("pptx",), "xlsx": ("xlsx",), "csv": ("csv",),
    "ole": ("docx", "pptx", "xlsx"), "image": ("png", "jpg"), "html": ("html",), "txt": ("txt",),
    "doc": ("doc",), "xls": ("xls",), "ppt": ("ppt",), "odt": ("odt",), "ods": ("ods",), "odp": ("odp",),
    "rtf": ("rtf",), "eml": ("eml",), "msg": ("msg",), "epub": ("epub",), "zip": ("zip",), "json": ("json",),
    "xml": ("xml",), "yaml": ("yaml",), "rst": ("rst",), "org": ("org",),
}
OLE_KINDS = {"doc", "xls", "ppt", "msg"}  # formats that live in an OLE container themselves
PACKAGES = {"docx", "pptx", "xlsx", "odt", "ods", "odp", "epub", "zip"}  # zips: also mutate one member
# LibreOffice takes seconds a start: the short run checks everything before it (sniffing, the
# encryption check, the zip guard) with a stand-in that converts nothing; make fuzz runs the real one.
CONVERTED = {"doc", "xls", "ppt", "odt", "ods", "odp", "rtf"}
MAX_SEED_BYTES = 300_000  # keeps each example fast; the big files add little but time
OPTIONS = ProcessOptions(ocr_timeout=5, detect_language=False)

_profile = settings()
# The short run unless a profile asks for more (make fuzz loads "long").
EXAMPLES = _profile.max_examples if _profile.max_examples > 100 else 12
CONVERTER_OPTIONS = OPTIONS if EXAMPLES > 100 else dataclasses.replace(OPTIONS, office_command="true")
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


class Blob(bytes):
    """Bytes with a short repr: hypothesis prints a falsifying example, and a 300 kB one is noise."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes, sha256 {hashlib.sha256(self).hexdigest()[:16]}>"


@cache
def seeds(kind: str) -> tuple[bytes, ...]:
    if kind == "image":
        return image_seeds()
    found = []
    for folder in SEEDS[kind]:
        for path in sorted((DOCS / folder).iterdir()):
            data = path.read_bytes()
            is_ole = data[:4] == b"\xd0\xcf\x11\xe0"
            if is_ole if kind == "ole" else not is_ole or kind in OLE_KINDS:
                found.append(data)
    assert found, f"no corpus seeds for {kind}"
    small = tuple(data for data in found if len(data) <= MAX_SEED_BYTES)
    return small or (min(found, key=len),)  # a format whose files are all big: its smallest


def image_seeds() -> tuple[bytes, ...]:
    """The small corpus images, plus the smallest transcoded to every other format Pillow may open
    (OCR of big images would make each example slow)."""
    small = [p.read_bytes() for folder in ("jpg", "png") for p in sorted((DOCS / folder).iterdir())
             if p.stat().st_size <= 40_000]
    with Image.open(DOCS / "jpg" / "testOCR.jpg") as image:
        for fmt in ("PNG", "GIF", "BMP", "TIFF", "WEBP"):
            out = io.BytesIO()
            image.convert("RGB" if fmt != "GIF" else "P").save(out, format=fmt)
            small.append(out.getvalue())
    return tuple(small)


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        if not buf:
            break
        at = draw(st.integers(0, len(buf) - 1))
        op = draw(st.sampled_from(["flip", "overwrite", "insert", "delete", "truncate", "repeat"]))
        if op == "flip":
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=16))
            buf[at:at + len(chunk)] = chunk
        elif op == "insert":
            buf[at:at] = draw(st.sampled_from([b"\x00", b"\xff" * 8, b"<", b">", b"&", b"\"", b"%", b"/", b"obj",
                                               b"<<", b"]]>", b"\r\n", b"\xef\xbb\xbf", b"9" * 12]))
        elif op == "delete":
            del buf[at:at + draw(st.integers(1, 64))]
        elif op == "truncate":
            del buf[at:]
        else:
            end = min(len(buf), at + draw(st.integers(1, 256)))
            buf[at:at] = buf[at:end] * draw(st.integers(1, 50))
    return bytes(buf)


@st.composite
def mutated_ooxml(draw: st.DrawFn, data: bytes) -> bytes:
    """The package with one member mutated, rezipped so the parser gets past the zip layer."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        infos = package.infolist()
        target = draw(st.sampled_from([i.filename for i in infos]))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as rezipped:
            for info in infos:
                member = package.read(info)
                if info.filename == target:
                    member = draw(mutated_bytes(member))
                rezipped.writestr(info.filename, member)
    return out.getvalue()


def _intact_zip(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            return package.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def inputs(kind: str) -> st.SearchStrategy[bytes]:
    seed = st.sampled_from(seeds(kind))
    strategies = [seed, seed.flatmap(mutated_bytes)]
    packages = [data for data in seeds(kind) if _intact_zip(data)]
    if kind in PACKAGES and packages:
        strategies.append(st.sampled_from(packages).flatmap(mutated_ooxml))
    return st.one_of(strategies).map(Blob)


def only_typed_errors(kind: str, data: bytes) -> None:
    processor = get_processor(kind)
    assert processor is not None
    try:
        options = CONVERTER_OPTIONS if kind in CONVERTED else OPTIONS
        processor.process(DocumentInput(data=data, doc_type=kind, filename=f"fuzz.{kind}"), options)
    except MCPServerError as exc:
        assert exc.code != "INTERNAL_ERROR", exc
        assert "Traceback" not in exc.message
    except Exception:
        keep_regression(kind, data)
        raise


def keep_regression(kind: str, data: bytes) -> None:
    """Save the shrunk input hypothesis replays last, so it is replayed on every later run."""
    with contextlib.suppress(Exception):  # outside hypothesis (the replay test) there is no context
        if not current_build_context().is_final:
            return
        folder = REGRESSIONS / kind
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{hashlib.sha256(data).hexdigest()[:16]}.bin").write_bytes(data)


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_a_processor_fed_mutated_corpus_files_raises_only_typed_errors(kind: str) -> None:
    @FUZZ
    @given(data=inputs(kind))
    def fuzz(data: bytes) -> None:
        assume(len(data) > 0)
        only_typed_errors(kind, data)

    fuzz()


def _regressions() -> list[Path]:
    return sorted(p for p in REGRESSIONS.rglob("*") if p.is_file() and p.parent.name in SEEDS)


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_input_that_once_escaped_a_processor_now_gives_a_typed_error(path: Path) -> None:
    only_typed_errors(path.parent.name, path.read_bytes())


def test_every_registered_format_is_fuzzed() -> None:
    assert set(SEEDS) == {fmt.doc_type for fmt in supported_formats()}
