"""LibreOffice headless as a converter: a legacy or OpenDocument file in, OOXML bytes out (or, for
``get_page_image``, any word-processing or presentation file in, its pages as PDF out).

The formats LibreOffice reads best (.doc/.xls/.ppt, .odt/.ods/.odp, .rtf) are converted to the
OOXML our own processors already read (headings, tables, sheets and slides with locations), so
each of those formats is one small module instead of a second parser.

Why a subprocess and not a library: no maintained Python library reads Word/PowerPoint 97
binaries with structure (antiword/catdoc give plain text and fail on small files; measured in
docs/formats.md). The child runs in the parser worker, so it inherits the worker's address-space
cap; it gets its own session (killed as a group on timeout, so ``oosplash`` and ``soffice.bin``
both go), its own profile folder per worker (LibreOffice refuses two instances on one profile),
no network when the kernel lets an unprivileged process unshare it (linked images and OLE objects
are never fetched), and runs under coreutils' ``timeout``, which kills its process group even if the
worker itself was killed first (a whole-document parse timeout).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import shutil
import tempfile
import threading
from pathlib import Path

import msoffcrypto

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions, Processor
from mcp_server.processors.ooxml import ENCRYPTED_MESSAGE
from mcp_server.subprocesses import processes

__all__ = ["PDF_FILTERS", "OfficeConverter", "convert", "converter_available", "read_converted", "refuse_encrypted_ole"]

_INSTALL = "apt-get install libreoffice-core-nogui libreoffice-writer-nogui libreoffice-calc-nogui " \
           "libreoffice-impress-nogui (or run `make`)"
_GUARD_SLACK = 5.0  # seconds the outer guard waits past the converter's limit
_OUTPUT_FILTERS = {"docx": "docx:MS Word 2007 XML", "xlsx": "xlsx:Calc Office Open XML",
                   "pptx": "pptx:Impress Office Open XML"}
# PDF export of a text document, and of a deck: hidden slides too, so that page N is slide N as the
# PPTX reader numbers them (it reads hidden slides)
PDF_FILTERS = {"writer": "pdf:writer_pdf_Export",
               "impress": 'pdf:impress_pdf_Export:{"ExportHiddenSlides":{"type":"boolean","value":"true"}}'}


class OfficeConverter:
    """``soffice`` (or a stand-in: tests use a script that hangs or crashes) with a time limit."""

    def __init__(self, command: str = "soffice", *, timeout: float = 60.0) -> None:
        self.command = command
        self.timeout = timeout

    def convert(self, data: bytes, *, suffix: str, target: str, output_filter: str | None = None) -> bytes:
        """The document (``suffix``: its extension, e.g. ".doc") converted to ``target`` ("docx",
        "xlsx" or "pptx"; "pdf" with one of ``PDF_FILTERS``). Raises ``ProcessingError`` on a missing
        converter, a timeout, a crash or a file LibreOffice cannot load."""
        binary = shutil.which(self.command)
        if binary is None:
            raise ProcessingError(f"reading this format needs LibreOffice, which is not installed: {_INSTALL}",
                                  reason="converter_missing")
        with tempfile.TemporaryDirectory(prefix="rag-soffice-") as work:
            source = Path(work) / f"document{suffix}"
            source.write_bytes(data)
            out = Path(work) / "out"
            argv = [binary, "--headless", "--norestore", "--nolockcheck", "--nodefault", "--nologo",
                    f"-env:UserInstallation={_profile().as_uri()}",
                    "--convert-to", output_filter or _OUTPUT_FILTERS[target], "--outdir", str(out), str(source)]
            self._run(self._guarded(_isolated(argv)), work)
            result = out / f"document.{target}"
            if not result.is_file() or result.stat().st_size == 0:
                raise ProcessingError(f"LibreOffice could not read this {suffix} file (corrupt or not that format)",
                                      reason="corrupt")
            return result.read_bytes()

    def _guarded(self, argv: list[str]) -> list[str]:
        """Under coreutils' ``timeout``, which kills the whole group a little after our own limit even
        when this worker is gone (a parse timeout kills the worker, not the converter's own session)."""
        guard = shutil.which("timeout")
        return [guard, "--signal=KILL", f"{self.timeout + _GUARD_SLACK:g}", *argv] if guard else argv

    def _run(self, argv: list[str], work: str) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8",
               "SAL_USE_VCLPLUGIN": "svp", "TMPDIR": work}
        try:
            process = processes.start(argv, env=env, cwd=work, own_session=True)
        except OSError as exc:
            raise ProcessingError(f"LibreOffice could not be started ({exc.strerror})",
                                  reason="converter_missing") from exc
        try:
            code = process.wait(timeout=self.timeout)
        except processes.TimeoutExpired:
            processes.kill_group(process)
            raise ProcessingError(f"the document converter took longer than {self.timeout:g} s",
                                  reason="converter_timeout", limit=self.timeout) from None
        finally:
            processes.kill_group(process)  # children left behind by a converter that exited
        if code < 0 or code > 1:
            raise ProcessingError("the document converter crashed on this document", reason="converter_crashed",
                                  exitcode=code)


def converter_available(command: str) -> bool:
    """True when LibreOffice (``command``) is installed: .doc/.xls/.ppt, OpenDocument and RTF read."""
    return shutil.which(command) is not None


def convert(data: bytes, *, suffix: str, target: str, command: str, timeout: float,
            output_filter: str | None = None) -> bytes:
    return OfficeConverter(command, timeout=timeout).convert(data, suffix=suffix, target=target,
                                                             output_filter=output_filter)


def _profile() -> Path:
    """The profile folder of this process and thread: a worker converts one document at a time, and
    a warm profile saves LibreOffice's first-start setup on every later conversion. Profiles of
    processes that are gone (recycled workers) are removed when a new one is made."""
    prefix = f"rag-soffice-profile-{os.getuid()}-"
    path = Path(tempfile.gettempdir()) / f"{prefix}{os.getpid()}-{threading.get_ident()}"
    if not path.is_dir():
        for stale in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
            if not _running(int(stale.name[len(prefix):].split("-", 1)[0] or 0)):
                shutil.rmtree(stale, ignore_errors=True)
        path.mkdir(mode=0o700, exist_ok=True)
    return path


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return pid > 0


def _isolated(argv: list[str]) -> list[str]:
    return ["unshare", "--user", "--map-root-user", "--net", *argv] if _can_unshare() else argv


@functools.cache
def _can_unshare() -> bool:
    """True when this kernel lets the process drop its network (unprivileged user namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        return processes.run([unshare, "--user", "--map-root-user", "--net", "true"], timeout=5).returncode == 0
    except (OSError, processes.TimeoutExpired):
        return False


def read_converted(doc: DocumentInput, options: ProcessOptions, *, doc_type: str, suffix: str,
                   reader: Processor) -> ProcessedDocument:
    """``doc`` converted by LibreOffice to the format ``reader`` reads, then read by it; the result
    keeps ``doc_type`` and says it was converted."""
    target = reader.format.doc_type
    data = convert(doc.data, suffix=suffix, target=target, command=options.office_command,
                   timeout=options.office_timeout)
    converted = reader.process(DocumentInput(data=data, doc_type=target, filename=f"document.{target}"), options)
    metadata = {**converted.metadata, "converted_by": "LibreOffice", "converted_to": target}
    return dataclasses.replace(converted, doc_type=doc_type, metadata=metadata)


def refuse_encrypted_ole(data: bytes) -> None:
    """A password-protected Word/Excel/PowerPoint 97-2003 file is refused before LibreOffice
    would stop at its password prompt. msoffcrypto-tool reads each format's encryption flag."""
    try:
        encrypted = msoffcrypto.OfficeFile(io.BytesIO(data)).is_encrypted()
    except Exception:  # noqa: BLE001 - not a file it knows: LibreOffice decides
        return
    if encrypted:
        raise ProcessingError(ENCRYPTED_MESSAGE, reason="encrypted")
