"""telemetry.otel with the OpenTelemetry SDK: imported only when it is enabled.

One server span per proxied call (``chat {configuration}``), one client span per upstream
attempt, the client's W3C ``traceparent`` continued and (``propagateUpstream``) sent on
upstream. docs/operations.md, "Traces", lists every attribute.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.domain.settings import OtelSettings
from gateway.tracing import AttemptSpan, CallSpan
from gateway.tracing.attributes import (
    answer_attributes,
    operation_name,
    provider_name,
    record_attributes,
    request_attributes,
    span_name,
)
from gateway.tracing.export import BoundedExport

if TYPE_CHECKING:
    from gateway.telemetry.records import TelemetryRecord

log = logging.getLogger(__name__)
DEFAULT_SERVICE_NAME = "llm-gateway"
_PROPAGATOR = TraceContextTextMapPropagator()
_ENCODER = msgspec.json.Encoder()
# Key-shaped strings in captured content, whatever their provider: the logs' rule.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}|AKIA[0-9A-Z]{16})")
REDACTED = "[redacted]"


def build_tracer(
    settings: OtelSettings,
    on_drop: Callable[[int], None],
    secrets: Callable[[], tuple[str, ...]],
) -> OtelTracer:
    # The exporters log every failed export; the processor counts them and logs once a
    # minute instead (docs/operations.md, "Traces").
    logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
    name = settings.service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(
        resource=Resource.create({"service.name": name}),
        sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
    )
    processor = BoundedExport(_exporter(settings), settings.max_queue_spans, on_drop)
    provider.add_span_processor(processor)
    return OtelTracer(provider, processor, settings, secrets)


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


def _exporter(settings: OtelSettings) -> Any:
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


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A fault in tracing never fails a call: it is logged (once per kind) and ignored."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            kind = type(exc).__name__
            if kind not in _LOGGED_FAULTS:
                _LOGGED_FAULTS.add(kind)
                log.error("tracing failed (%s); the call goes on untraced", kind, exc_info=exc)
            return None

    return guarded


_LOGGED_FAULTS: set[str] = set()


class OtelTracer:
    def __init__(
        self,
        provider: TracerProvider,
        processor: BoundedExport,
        settings: OtelSettings,
        secrets: Callable[[], tuple[str, ...]],
    ) -> None:
        self._provider = provider
        self._processor = processor
        self._tracer = provider.get_tracer("gateway")
        self._settings = settings
        self._secrets = secrets

    @_guarded
    def start_call(
        self, endpoint: str, configuration: str, body: Mapping[str, Any], carrier: Mapping[str, str]
    ) -> CallSpan | None:
        parent = _PROPAGATOR.extract(carrier) if "traceparent" in carrier else None
        span = self._tracer.start_span(
            span_name(endpoint, configuration),
            context=parent,
            kind=SpanKind.SERVER,
            attributes=request_attributes(endpoint, configuration, body),
        )
        if not span.is_recording():
            return None
        call = _Call(self, span, endpoint, body.get("stream") is True)
        if self._settings.capture_content:
            call.capture("gen_ai.input.messages", _input_messages(body))
        return call

    def dropped_spans(self) -> int:
        return self._processor.dropped

    def shutdown(self) -> None:
        self._provider.shutdown()

    # For _Call.
    @property
    def tracer(self) -> Any:
        return self._tracer

    @property
    def settings(self) -> OtelSettings:
        return self._settings

    def redact(self, text: str) -> str:
        for secret in self._secrets():
            if secret:
                text = text.replace(secret, REDACTED)
        return _KEY_SHAPES.sub(REDACTED, text)


class _Call:
    __slots__ = ("_endpoint", "_owner", "_span", "_started_ns", "_stream")

    def __init__(self, owner: OtelTracer, span: Span, endpoint: str, stream: bool) -> None:
        self._owner = owner
        self._stream = stream
        self._span = span
        self._endpoint = endpoint
        self._started_ns = time.time_ns()

    @property
    def trace_id(self) -> str:
        return format(self._span.get_span_context().trace_id, "032x")

    @_guarded
    def attempt(
        self, provider: str, adapter: str, host: str, model: str, retry: int
    ) -> AttemptSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation_name(self._endpoint),
            "gen_ai.provider.name": provider_name(adapter),
            "gen_ai.request.model": model,
            "gateway.provider": provider,
            "server.address": urlsplit(host).hostname or host,
            "gateway.retry": retry,
        }
        span = self._owner.tracer.start_span(
            f"{operation_name(self._endpoint)} {model}",
            context=set_span_in_context(self._span, Context()),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        return _Attempt(span, self._owner.settings.propagate_upstream)

    @_guarded
    def note_answer(self, body: Mapping[str, Any]) -> None:
        self._span.set_attributes(answer_attributes(body))
        if self._owner.settings.capture_content:
            choices = body.get("choices")
            if isinstance(choices, list):
                messages = [c.get("message") for c in choices if isinstance(c, dict)]
                self.capture("gen_ai.output.messages", messages)

    @_guarded
    def note_cached_tokens(self, tokens: int) -> None:
        self._span.set_attribute("gen_ai.usage.cache_read.input_tokens", tokens)

    @_guarded
    def capture(self, name: str, value: Any) -> None:
        text = self._owner.redact(_ENCODER.encode(value).decode())
        self._span.add_event("gen_ai.client.inference.operation.details", {name: text})

    @_guarded
    def finish(self, record: TelemetryRecord) -> None:
        span = self._span
        span.set_attributes(record_attributes(record))
        ttft = record.time_to_first_token_ms
        if ttft is not None and self._stream:
            at = self._started_ns + int(ttft * 1_000_000)
            span.add_event("gen_ai.first_token", {"gateway.time_to_first_token_ms": ttft}, at)
        if record.error_class is not None:
            span.set_status(Status(StatusCode.ERROR, str(record.error_class)))
        span.end()


class _Attempt:
    __slots__ = ("_propagate", "_span")

    def __init__(self, span: Span, propagate: bool) -> None:
        self._span = span
        self._propagate = propagate

    @_guarded
    def traceparent(self) -> str | None:
        if not self._propagate:
            return None
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=set_span_in_context(self._span, Context()))
        return carrier.get("traceparent")

    @_guarded
    def end(self, status: int | None, failure: str | None, not_retried: str | None) -> None:
        span = self._span
        if status is not None:
            span.set_attribute("http.response.status_code", status)
        if failure is not None:
            span.set_attribute("error.type", failure)
            span.set_attribute("gateway.retried", not_retried is None)
            if not_retried is not None:
                span.set_attribute("gateway.not_retried_because", not_retried)
            span.set_status(Status(StatusCode.ERROR, failure))
        span.end()


def _input_messages(body: Mapping[str, Any]) -> Any:
    for field in ("messages", "input", "prompt"):
        if field in body:
            return body[field]
    return None
