"""The process's log formats: JSON lines with the access fields, and Alembic's chatter."""

from __future__ import annotations

import io
import json
import logging
import sys
import time

import pytest

from gateway import logs
from gateway.logs import AlembicChatter, JsonFormatter, StderrHandler, logging_config
from gateway.telemetry import access
from tests.unit.telemetry.factory import make_record


def _record(message: str, level: int = logging.INFO, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("gateway.access", level, __file__, 1, message, (), None)
    record.__dict__.update(extra)
    return record


def test_json_lines_carry_the_access_fields_at_the_top_level() -> None:
    fields = {"method": "POST", "status": 200, "servedModel": "m", "latencyMs": 1.5}
    line = json.loads(JsonFormatter().format(_record("POST /v1/x 200", http=fields)))
    assert line["logger"] == "gateway.access" and line["level"] == "INFO"
    assert line["message"] == "POST /v1/x 200"
    assert {k: line[k] for k in fields} == fields
    assert line["time"].endswith("+00:00")


def test_json_lines_keep_an_exception_on_the_same_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = _record("failed", logging.ERROR)
        record.exc_info = sys.exc_info()
    text = JsonFormatter().format(record)
    assert "\n" not in text and "RuntimeError: boom" in json.loads(text)["exception"]


def test_alembic_chatter_is_dropped_and_its_upgrades_kept() -> None:
    chatter = AlembicChatter()
    assert not chatter.filter(_record("Context impl SQLiteImpl."))
    assert not chatter.filter(_record("Will assume non-transactional DDL."))
    assert not chatter.filter(_record("setup plugin alembic.autogenerate.schemas"))
    assert chatter.filter(_record("Running upgrade 0002 -> 0003, eval_results"))


def test_the_config_names_one_format_for_every_logger() -> None:
    config = logging_config("json")
    assert config["formatters"]["gateway"] == {"()": "gateway.logs.JsonFormatter"}
    assert config["root"]["handlers"] == ["stderr"]
    assert config["loggers"]["uvicorn.error"] == {"handlers": [], "propagate": True}
    assert "format" in logging_config("text")["formatters"]["gateway"]


def test_the_handler_writes_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = StderrHandler()  # made before stderr is replaced, as at configuration time
    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    handler.emit(_record("after the switch"))
    assert later.getvalue() == "after the switch\n"


@pytest.mark.real_logging
def test_configure_writes_json_lines_to_stderr_from_a_thread_of_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    logs.configure("json")
    try:
        logging.getLogger("gateway.access").info("a call", extra={"http": {"status": 200}})
        logging.getLogger("alembic.runtime.migration").info("Context impl SQLiteImpl.")
        logs.drain()
        (line,) = capsys.readouterr().err.splitlines()
        assert json.loads(line)["status"] == 200
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


class _CountingStream(io.StringIO):
    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_lines_reach_stderr_whole_in_order_and_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = _CountingStream()
    monkeypatch.setattr(sys, "stderr", stream)
    handler = logs.BatchedStderr()
    handler.setFormatter(logging.Formatter("%(message)s"))
    for index in range(2000):
        handler.handle(_record(f"line {index}"))
    handler.stop()
    assert stream.getvalue().splitlines() == [f"line {index}" for index in range(2000)]
    assert stream.writes < 100  # one write per batch, not per line


def test_the_text_time_stamp_is_the_standard_one_and_follows_each_second() -> None:
    """TextFormatter formats the time once per second: a line of the next second (or of an
    earlier one, from another thread) gets its own stamp, the same as logging's."""
    ours, standard = logs.TextFormatter(logs.TEXT_FORMAT), logging.Formatter(logs.TEXT_FORMAT)
    base = 1_700_000_000.0
    for created in (base + 0.25, base + 0.75, base + 1.5, base + 0.9, base + 3600.001):
        record = _record("a line")
        record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
        assert ours.format(record) == standard.format(record)
    assert logging_config("text")["formatters"]["gateway"]["class"] == "gateway.logs.TextFormatter"


def test_chatter_is_recognised_by_alembics_format_strings() -> None:
    chatter = AlembicChatter()
    record = _record("Context impl %s.")
    record.args = ("SQLiteImpl",)
    assert not chatter.filter(record)
    warning = _record("Context impl %s.", logging.WARNING)
    assert chatter.filter(warning)  # a warning always shows


@pytest.mark.real_logging
def test_access_log_off_then_on_again_logs_access_lines_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    access = logging.getLogger("gateway.access")
    try:
        logs.configure("text", access_log=False)
        access.info("silenced")
        logging.getLogger("gateway.pipeline").warning("still printed")
        logs.configure("text")  # access lines on again, in the same process
        access.info("printed again")
        logs.drain()
        lines = capsys.readouterr().err.splitlines()
        assert [line.split(": ", 1)[1] for line in lines] == ["still printed", "printed again"]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        access.setLevel(logging.NOTSET)


def _capture_both_paths(log_format: logs.LogFormat, capsys: pytest.CaptureFixture[str]) -> None:
    """Logs each access line twice, first written directly (no LogRecord), then, with
    a second handler on the root, through logging; each pair must be the same text."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    calls = [
        lambda: access.log_call(make_record(), "/v1/chat/completions"),
        lambda: access.log_call(
            make_record(error_class="upstream_5xx", served_model=None, latency_ms=12.349),
            "/v1/messages",
        ),
        lambda: access.log_refused("/v1/chat/completions", 401, 0.05, "req-2"),
        lambda: access.log_refused("/v1/x", 400, 3.0, "req-3", "caf\u00e9\n", method="GE\tT"),
    ]
    try:
        logs.configure(log_format)
        extra = logging.NullHandler()
        for log in calls:
            assert logs.direct_writer(access.ACCESS) is not None
            log()
            root.addHandler(extra)
            assert logs.direct_writer(access.ACCESS) is None
            log()
            root.removeHandler(extra)
        logs.drain()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 * len(calls)
    assert lines[0::2] == lines[1::2]


@pytest.mark.real_logging
@pytest.mark.parametrize("log_format", ["text", "json"])
def test_an_access_line_written_directly_is_the_line_logging_writes(
    log_format: logs.LogFormat, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0625)  # both paths, one instant
    _capture_both_paths(log_format, capsys)


@pytest.mark.real_logging
def test_access_lines_go_through_logging_when_anything_else_would_see_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    access_logger = access.ACCESS
    try:
        assert logs.direct_writer(access_logger) is None  # pytest's handlers, no writer
        logs.configure("text")
        writer = logs.direct_writer(access_logger)
        assert writer is not None
        writer.addFilter(logging.Filter("gateway"))
        assert logs.direct_writer(access_logger) is None
        writer.filters.pop()
        access_logger.addFilter(logging.Filter("gateway"))
        assert logs.direct_writer(access_logger) is None
        access_logger.filters.clear()
        access_logger.addHandler(logging.NullHandler())
        assert logs.direct_writer(access_logger) is None
        access_logger.handlers.clear()
        writer.setFormatter(logging.Formatter("%(message)s"))
        assert writer.line_kind() == "other"  # not a format it writes itself
        access.log_refused("/v1/x", 401, 1.0, "req-4")  # through logging: this format
        logs.drain()
        line = "POST /v1/x 401 configuration=- model=- latency_ms=1.0 request_id=req-4\n"
        assert capsys.readouterr().err == line
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        access_logger.filters.clear()
        access_logger.handlers.clear()


@pytest.mark.real_logging
def test_an_access_line_whose_values_cannot_be_formatted_is_logging_s_to_handle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A status that is no integer fails the line as logging's own formatting fails it
    (its error report on stderr), never the call."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        logs.configure("text")
        access.log_call(make_record(http_status="200"), "/v1/chat/completions")
        logs.drain()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    assert "--- Logging error ---" in capsys.readouterr().err
