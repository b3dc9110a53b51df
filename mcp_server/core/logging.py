"""Structured JSON logging on stderr (stdout belongs to the stdio transport) and daily files.

Every record carries ``rid`` (the request id from a contextvar, "system" outside requests) and,
where set, ``tool``. The message is an event name (``tool.start``, ``fetch.retry``,
``models.fallback``) and everything else is a field passed with ``extra={...}``, never formatted
into the message, so log readers filter on fields.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

from pythonjsonlogger.json import JsonFormatter

__all__ = [
    "configure_logging",
    "new_request_id",
    "request_id_var",
    "tool_var",
]

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="system")
tool_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("tool", default=None)

QUIET_LOGGERS = ("httpx", "httpcore", "urllib3", "sentence_transformers", "filelock", "transformers",
                 "huggingface_hub", "faiss", "PIL", "pdfminer", "asyncio")
_HANDLER_TAG = "_rag_document_server"


def new_request_id() -> str:
    return uuid.uuid4().hex[:12]


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.rid = request_id_var.get()
        tool = tool_var.get()
        if tool is not None and not hasattr(record, "tool"):
            record.tool = tool
        return True


class _Formatter(JsonFormatter):
    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s %(rid)s",
            rename_fields={"asctime": "ts", "levelname": "level", "name": "logger", "message": "msg"},
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        stamp = dt.datetime.fromtimestamp(record.created, tz=dt.UTC)
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_record, record, message_dict)
        log_record.pop("color_message", None)  # uvicorn's duplicate of msg


class DailyFileHandler(logging.Handler):
    """Writes to ``<dir>/server_YYYY-MM-DD.log`` (UTC date).

    Hand-written because TimedRotatingFileHandler renames to ``name.log.DATE`` after the fact,
    not the dated names the log readers expect.
    """

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        self._date: str | None = None
        self._stream: Any = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            date = dt.datetime.fromtimestamp(record.created, tz=dt.UTC).strftime("%Y-%m-%d")
            if date != self._date:
                if self._stream is not None:
                    self._stream.close()
                self.directory.mkdir(parents=True, exist_ok=True)
                self._stream = open(self.directory / f"server_{date}.log", "a", encoding="utf-8")  # noqa: SIM115
                self._date = date
            self._stream.write(self.format(record) + "\n")
            self._stream.flush()
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        super().close()


def configure_logging(level: str = "INFO", log_dir: Path | None = None) -> None:
    """Route every log record to stderr (JSON) and optionally to daily files. Idempotent."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_TAG, False) or isinstance(handler, logging.StreamHandler):
            root.removeHandler(handler)
            handler.close()
    formatter = _Formatter()
    context = _ContextFilter()
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_dir is not None:
        handlers.append(DailyFileHandler(log_dir))
    for handler in handlers:
        handler.setFormatter(formatter)
        handler.addFilter(context)
        setattr(handler, _HANDLER_TAG, True)
        root.addHandler(handler)
    root.setLevel(level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.captureWarnings(True)
