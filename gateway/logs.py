"""How the process logs: one handler on stderr, plain text or JSON lines (``server.logFormat``).

The same ``dictConfig`` is handed to uvicorn, which applies it in every worker process, so
the gateway's lines, uvicorn's and the libraries' all share one format. Lines are
formatted where they are logged and written to stderr by a thread of their own. Access lines
(logger ``gateway.access``) carry their fields in ``extra={"http": {...}}``; the JSON
format puts them at the top level of the object. When nothing but the process's writer would
see an access record (no other handler, no other filter: the running server), the line is
formatted to the same text without a ``LogRecord`` and handed to the writer directly
(``direct_writer``, ``BatchedStderr.text_info``): a third of its cost on the event loop.
"""

from __future__ import annotations

import atexit
import json
import logging
import logging.config
import logging.handlers
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Alembic's INFO lines on every start that say nothing an operator acts on.
_CHATTER = ("Context impl ", "Will assume ", "setup plugin ")


class AlembicChatter(logging.Filter):
    """Drops Alembic's start-up chatter; "Running upgrade ..." lines still show.

    It reads the line's format string (Alembic's start with the chatter's words), not the
    formatted message: every line passes here, and the handler formats it once anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        message = record.msg
        return not (isinstance(message, str) and message.startswith(_CHATTER))


class TextFormatter(logging.Formatter):
    """``logging.Formatter`` whose time stamp (local time, to the second) is formatted once
    per second rather than once per line (``time.strftime`` on every access line): the
    same text."""

    # (second, its stamp), replaced as one tuple: a line formatted on another thread
    # meanwhile reads a matching pair.
    _last: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        msec_format = self.default_msec_format
        if datefmt is not None or self.datefmt is not None or msec_format is None:
            return super().formatTime(record, datefmt)
        return msec_format % (self.stamp(int(record.created)), record.msecs)

    def stamp(self, second: int) -> str:
        """The time stamp of ``second`` to the second (``default_time_format``)."""
        last_second, stamp = self._last
        if second != last_second:
            stamp = time.strftime(self.default_time_format, self.converter(second))
            self._last = (second, stamp)
        return stamp


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is emitted (a redirect, a test's
    capture), not to the stream that was current when logging was configured."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        return None


class BatchedStderr(logging.Handler):
    """Formats a line on the caller's thread and leaves the writing to a thread of its own,
    which wakes when the first line of a batch arrives, gathers for ``LINGER_SECONDS`` and
    writes the batch in one call. One wake-up per batch rather than per line: under load the
    access log costs the event loop a format and an append per call, not a thread switch
    (docs/performance.md)."""

    LINGER_SECONDS = 0.02

    def __init__(self) -> None:
        super().__init__()
        self._out = StderrHandler()
        self._lines: list[str] = []
        self._guard = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        # line_kind() of the formatter of the moment (judged again when it is replaced).
        self._kind_of: logging.Formatter | None = None
        self._kind = _kind(None)
        self._thread = threading.Thread(target=self._run, name="gateway-log-writer", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.put(line)

    def put(self, line: str) -> None:
        """Hands one formatted line (no newline) to the writer thread."""
        with self._guard:
            self._lines.append(line)
            first = len(self._lines) == 1
        if first:
            self._wake.set()

    def line_kind(self) -> str:
        """How ``text_info``/``json_info`` format a line for the formatter of the moment:
        "text" (a ``TextFormatter`` of ``TEXT_FORMAT``), "json" (``JsonFormatter``), or
        "other" (neither: such a line must go through ``logging``)."""
        formatter = self.formatter
        if formatter is not self._kind_of:
            self._kind_of, self._kind = formatter, _kind(formatter)
        return self._kind

    def text_info(self, logger: str, message: str) -> None:
        """Hands over the INFO line of ``logger`` (a message without arguments) as
        ``TextFormatter`` formats that record, without building the record (kind "text")."""
        formatter = self.formatter
        assert isinstance(formatter, TextFormatter)
        created = time.time()
        msecs = int((created - int(created)) * 1000)  # as LogRecord's, then "%03d"
        self.put(f"{formatter.stamp(int(created))},{msecs:03d} INFO {logger}: {message}")

    def json_info(self, logger: str, message: str, fields: dict[str, Any]) -> None:
        """The same for ``JsonFormatter`` (kind "json"), ``fields`` as ``extra["http"]``."""
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds"),
            "level": "INFO",
            "logger": logger,
            "message": message,
        }
        line.update(fields)
        self.put(json.dumps(line, ensure_ascii=False, default=str))

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._stopping:
                time.sleep(self.LINGER_SECONDS)
            with self._guard:
                self._wake.clear()
                lines, self._lines = self._lines, []
                stopping = self._stopping
            if lines:
                self._write("\n".join(lines) + "\n")
            if stopping:
                return

    def _write(self, text: str) -> None:
        try:
            stream = self._out.stream
            stream.write(text)
            stream.flush()
        except Exception:  # a closed or broken stderr loses lines, never the process
            pass

    def stop(self) -> None:
        """Write every line handed over so far, then end the writer thread."""
        with self._guard:
            self._stopping = True
        self._wake.set()
        self._thread.join(timeout=5)

    def close(self) -> None:
        self.stop()
        super().close()


def _kind(formatter: logging.Formatter | None) -> str:
    """ "text" for a TextFormatter of TEXT_FORMAT with the standard time stamp, "json" for a
    JsonFormatter, "other" for anything else (its lines are formatted by ``logging``)."""
    if type(formatter) is JsonFormatter:
        return "json"
    if (
        type(formatter) is TextFormatter
        and formatter._fmt == TEXT_FORMAT
        and type(formatter._style) is logging.PercentStyle
        and formatter.datefmt is None
        and formatter.default_msec_format == "%s,%03d"
        and formatter.default_time_format == logging.Formatter.default_time_format
        and formatter.converter is time.localtime
        and type(formatter).format is logging.Formatter.format
    ):
        return "text"
    return "other"


_writer: BatchedStderr | None = None


def direct_writer(logger: logging.Logger) -> BatchedStderr | None:
    """The process's writer when an INFO record of ``logger`` would reach it alone and pass
    its filters unchanged: ``logger`` enabled and without filters, no handler but the
    writer from it up to the root, the writer's level at most INFO and its filters only
    ``AlembicChatter`` (which passes a line that is not Alembic's chatter). Then the line
    may be handed to ``BatchedStderr.text_info`` or ``json_info`` without a ``LogRecord``:
    the same text in the same place. None otherwise (a test's capture handler, another
    handler or filter): the caller logs through ``logging``."""
    writer = _writer
    if writer is None or logger.disabled or logger.filters or writer.level > logging.INFO:
        return None
    seen = False
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if handler is not writer or seen:
                return None
            seen = True
        if not current.propagate:
            break
        current = current.parent
    if not seen:
        return None
    for kept in writer.filters:
        if type(kept) is not AlembicChatter:
            return None
    return writer


def queued_stderr() -> logging.Handler:
    """A handler that formats on the caller's thread and writes to stderr on another, so a
    slow reader of stderr never stalls the event loop. One writer per process: a new
    configuration stops (and drains) the previous one."""
    global _writer
    drain()
    _writer = BatchedStderr()
    return _writer


@atexit.register
def drain() -> None:
    """Write out every line logged so far and stop the writer thread (at exit)."""
    global _writer
    if _writer is not None:
        _writer.stop()
        _writer = None


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO-8601), level, logger, message, then any
    access fields, and the exception's text when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "http", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def logging_config(
    log_format: LogFormat = "text", level: str = "INFO", *, access_log: bool = True
) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dictionary for the whole process; ``access_log``
    off (``server.accessLog: false``) silences logger ``gateway.access`` alone."""
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"}
        if log_format == "json"
        else {"class": f"{__name__}.TextFormatter", "format": TEXT_FORMAT}
    )
    quiet = {"level": "WARNING"}
    loggers: dict[str, Any] = {
        # uvicorn's own handlers would print a second format: its lines go to the root.
        "uvicorn": {"handlers": [], "propagate": True},
        "uvicorn.error": {"handlers": [], "propagate": True},
        "uvicorn.access": {"handlers": [], "propagate": True},
        # httpx logs every request at INFO: noise on the hot path, and it names URLs.
        "httpx": quiet,
        "httpcore": quiet,
    }
    # Named either way: a later configuration (a test's, say) sets it back as well.
    loggers["gateway.access"] = {"level": "NOTSET"} if access_log else quiet
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gateway": formatter},
        "filters": {"alembic_chatter": {"()": f"{__name__}.AlembicChatter"}},
        "handlers": {
            "stderr": {
                "()": f"{__name__}.queued_stderr",
                "formatter": "gateway",
                "filters": ["alembic_chatter"],
            }
        },
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": loggers,
    }


def configure(log_format: LogFormat = "text", *, access_log: bool = True) -> dict[str, Any]:
    """Apply the configuration now; returns it (``uvicorn.run(log_config=...)`` takes it)."""
    config = logging_config(log_format, access_log=access_log)
    logging.config.dictConfig(config)
    return config
