"""The access log: one line per proxied call, from the fields its telemetry row has already.

Logger ``gateway.access`` at INFO. Plain text reads
``POST /v1/chat/completions 200 configuration=smart-chat model=gpt-4o-mini latency_ms=12.3
request_id=...``; the fields also travel as ``extra["http"]`` for the JSON format. No key,
no body, no header: only what the row holds.
"""

from __future__ import annotations

import logging

from gateway.logs import direct_writer
from gateway.telemetry.records import TelemetryRecord

ACCESS = logging.getLogger("gateway.access")
_LINE = "%s %s %d configuration=%s model=%s latency_ms=%.1f request_id=%s%s"


def log_call(record: TelemetryRecord, path: str) -> None:
    """The line for a call that has a row (its latency and status are final)."""
    if ACCESS.isEnabledFor(logging.INFO):
        _emit(
            "POST",
            path,
            record.http_status,
            record.configuration,
            record.served_model,
            record.latency_ms,
            record.request_id,
            record.error_class,
        )


def log_refused(
    path: str,
    status: int,
    latency_ms: float,
    request_id: str,
    configuration: str | None = None,
    method: str = "POST",
) -> None:
    """The line for a call refused before it had a row (bad key, bad body, unknown model)."""
    if ACCESS.isEnabledFor(logging.INFO):
        shown = _printable(configuration) if configuration is not None else None
        _emit(_printable(method, 16), path, status, shown, None, latency_ms, request_id, None)


def _emit(
    method: str,
    path: str,
    status: int,
    configuration: str | None,
    served_model: str | None,
    latency_ms: float,
    request_id: str,
    error_class: str | None,
) -> None:
    writer = direct_writer(ACCESS)
    kind = writer.line_kind() if writer is not None else "other"
    if writer is not None and kind != "other":
        # The record's message (_LINE % args) as one f-string, handed to the writer
        # without a LogRecord when no other handler or filter would see the record.
        try:
            message = (
                f"{method} {path} {status:d} configuration={configuration or '-'} "
                f"model={served_model or '-'} latency_ms={latency_ms:.1f} request_id={request_id}"
                + (f" error={error_class}" if error_class else "")
            )
        except (TypeError, ValueError):  # a value %d or %.1f refuses: logging's handling
            kind = "other"
        if kind == "text":  # the fields are the JSON format's alone
            writer.text_info(ACCESS.name, message)
            return
    fields = {
        "method": method,
        "path": path,
        "status": status,
        "configuration": configuration,
        "servedModel": served_model,
        "latencyMs": round(latency_ms, 3),
        "requestId": request_id,
        "errorClass": error_class,
    }
    if writer is not None and kind == "json":
        writer.json_info(ACCESS.name, message, fields)
        return
    args = (
        method,
        path,
        status,
        configuration or "-",
        served_model or "-",
        latency_ms,
        request_id,
        f" error={error_class}" if error_class else "",
    )
    # What ACCESS.info() does, less its walk up the stack for the caller's file and line
    # (no format prints them): one line per call, so that walk was a tenth of its cost.
    record = ACCESS.makeRecord(
        ACCESS.name, logging.INFO, __file__, 0, _LINE, args, None, "log_call", {"http": fields}
    )
    ACCESS.handle(record)


def _printable(text: str, limit: int = 128) -> str:
    """A client's text as one safe line: controls escaped, length bounded."""
    cut = text[:limit]
    return cut if cut.isprintable() else cut.encode("unicode_escape").decode("ascii")
