"""The exporter: a process of its own that turns finished spans into OTLP and sends them.

Encoding a span to OTLP costs ~100 µs of Python; in the serving process that time would hold
the interpreter lock the serving loop needs. The serving process only sends each finished
span as a plain tuple over a bounded multiprocessing queue; this process (started with
``spawn``, so it shares no state with the serving loop) batches them (512 spans, or every
second), builds the SDK's ``ReadableSpan``s and exports them with the official OTLP
exporter. Spans an export failed to deliver are counted in a shared value the serving
process reads for ``gateway_otel_spans_dropped``.
"""

from __future__ import annotations

import logging
import os
import queue as queues
import time
from typing import Any

from gateway.domain.settings import OtelSettings

BATCH_SPANS = 512
EXPORT_INTERVAL_SECONDS = 1.0
DEFAULT_SERVICE_NAME = "llm-gateway"

# One finished span, as the serving process sends it (gateway.tracing.live):
# (name, trace_id, span_id, parent_span_id (0: none), parent_is_remote, kind (2 server,
#  3 client), start_ns, end_ns, attributes, events [(name, attributes, time_ns)],
#  error description or None)
SpanTuple = tuple[str, int, int, int, bool, int, int, int, dict[str, Any], list[Any], str | None]


def protocol_of(settings: OtelSettings) -> str:
    return (
        settings.protocol
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )


def http_endpoint(endpoint: str) -> str:
    """The collector's base URL -> its traces URL (as the OTLP variables are read)."""
    trimmed = endpoint.rstrip("/")
    return trimmed if trimmed.endswith("/v1/traces") else f"{trimmed}/v1/traces"


def make_exporter(settings: OtelSettings) -> Any:
    headers = dict(settings.headers) if settings.headers is not None else None
    timeout = settings.export_timeout_seconds
    if protocol_of(settings) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        endpoint = settings.endpoint
        insecure = endpoint.startswith("http://") if endpoint is not None else None
        return GrpcExporter(endpoint=endpoint, insecure=insecure, headers=headers, timeout=timeout)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    endpoint = http_endpoint(settings.endpoint) if settings.endpoint is not None else None
    return OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)


class SpanBuilder:
    """Span tuples -> the SDK's ReadableSpans, under one resource and scope."""

    def __init__(self, settings: OtelSettings) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        name = settings.service_name or os.environ.get("OTEL_SERVICE_NAME")
        self._resource = Resource.create({"service.name": name or DEFAULT_SERVICE_NAME})
        self._scope = InstrumentationScope("gateway")

    def build(self, item: SpanTuple) -> Any:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        name, trace_id, span_id, parent_id, remote, kind, start, end, attributes, events, error = (
            item
        )
        sampled = TraceFlags(TraceFlags.SAMPLED)
        parent = SpanContext(trace_id, parent_id, remote, sampled) if parent_id else None
        return ReadableSpan(
            name=name,
            context=SpanContext(trace_id, span_id, False, sampled),
            parent=parent,
            resource=self._resource,
            attributes=attributes,
            events=[Event(e_name, e_attributes, at) for e_name, e_attributes, at in events],
            kind=SpanKind(kind - 1),  # OTLP's kinds count from UNSPECIFIED = 0, the API's not
            status=Status(StatusCode.ERROR, error) if error else Status(StatusCode.UNSET),
            start_time=start,
            end_time=end,
            instrumentation_scope=self._scope,
        )


def export_forever(spans: Any, settings: OtelSettings, undelivered: Any) -> None:
    """The exporter process's main: until a None arrives on ``spans``."""
    # The exporters log every failed export; the serving process logs the count once a
    # minute instead (docs/operations.md, "Traces").
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    exporter = make_exporter(settings)
    builder = SpanBuilder(settings)
    batch: list[Any] = []
    sent_at = time.monotonic()
    stopping = False
    while not stopping:
        try:
            item = spans.get(timeout=EXPORT_INTERVAL_SECONDS)
        except queues.Empty:
            item = False
        if item is None:
            stopping = True
        elif item is not False:
            batch.append(builder.build(item))
        due = time.monotonic() - sent_at >= EXPORT_INTERVAL_SECONDS
        if batch and (stopping or due or len(batch) >= BATCH_SPANS):
            export_batch(exporter, batch, undelivered)
            batch = []
            sent_at = time.monotonic()
    exporter.shutdown()


def export_batch(exporter: Any, batch: list[Any], undelivered: Any) -> None:
    try:
        delivered = exporter.export(batch).name == "SUCCESS"
    except Exception:  # an exporter that raises is an export that failed
        delivered = False
    if not delivered:
        with undelivered.get_lock():
            undelivered.value += len(batch)
