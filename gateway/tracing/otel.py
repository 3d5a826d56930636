"""telemetry.otel's serving side: imported only when it is enabled.

The serving process keeps each call's spans as plain values (ids, times, attribute dicts),
decides sampling, reads the client's W3C ``traceparent`` and writes the one it sends upstream,
and hands each finished span to the exporter process (gateway.tracing.exporter_process) over
a bounded queue: no SDK span, no OTLP encoding, no network on the serving loop. One server
span per proxied call (``chat {configuration}``), one client span per upstream attempt.
docs/operations.md, "Traces", lists every attribute.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import queue as queues
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec
from opentelemetry.trace import get_current_span
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
from gateway.tracing.content import StreamedContent
from gateway.tracing.exporter_process import SpanTuple, export_forever

if TYPE_CHECKING:
    from gateway.telemetry.records import TelemetryRecord

log = logging.getLogger(__name__)
SERVER, CLIENT = 2, 3  # OTLP span kinds
LOG_INTERVAL_SECONDS = 60.0
_ID_LIMIT = 2**64
_PROPAGATOR = TraceContextTextMapPropagator()
_ENCODER = msgspec.json.Encoder()
# Key-shaped strings in captured content, whatever their provider.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}|AKIA[0-9A-Z]{16})")
REDACTED = "[redacted]"
_LOGGED_FAULTS: set[str] = set()


def build_tracer(settings: OtelSettings, secrets: Callable[[], tuple[str, ...]]) -> OtelTracer:
    return OtelTracer(settings, secrets)


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


def _new_id() -> int:
    return random.getrandbits(64) or 1


class OtelTracer:
    def __init__(
        self,
        settings: OtelSettings,
        secrets: Callable[[], tuple[str, ...]],
    ) -> None:
        self._settings = settings
        self._secrets = secrets
        # TraceIdRatioBased's rule: the trace id's low 64 bits below ratio * 2**64.
        self._bound = round(settings.sample_ratio * _ID_LIMIT)
        self._context = multiprocessing.get_context("spawn")
        self._undelivered = self._context.Value("q", 0)
        self._full = 0  # spans the queue had no room for
        self._reported = 0
        self._logged_at = time.monotonic()
        self._lock = threading.Lock()
        self._queue: Any = None
        self._process: Any = None
        self._start_exporter()

    def _start_exporter(self) -> None:
        self._queue = self._context.Queue(self._settings.max_queue_spans)
        self._process = self._context.Process(
            target=export_forever,
            args=(self._queue, self._settings, self._undelivered),
            name="gateway-otel-exporter",
            daemon=True,
        )
        self._process.start()

    @property
    def settings(self) -> OtelSettings:
        return self._settings

    @property
    def exporter_pid(self) -> int | None:
        """The exporter process's id (bench/otel_cost.py reads its CPU time)."""
        pid: int | None = self._process.pid
        return pid

    @_guarded
    def start_call(
        self, endpoint: str, configuration: str, body: Mapping[str, Any], carrier: Mapping[str, str]
    ) -> CallSpan | None:
        self._check()
        parent_id, remote, tracestate = 0, False, None
        trace_id = 0
        if "traceparent" in carrier:
            parent = get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
            if parent.is_valid:
                if not parent.trace_flags.sampled:
                    # The client's trace is not sampled: neither is this call, but its
                    # traceparent still goes upstream, unchanged, so the services behind
                    # the gateway keep the client's decision (W3C Trace Context, 3.2).
                    return _Unsampled(
                        self._settings.propagate_upstream,
                        carrier["traceparent"].strip(),
                        carrier.get("tracestate"),
                    )
                trace_id, parent_id, remote = parent.trace_id, parent.span_id, True
                tracestate = carrier.get("tracestate")
        if not trace_id:
            trace_id = random.getrandbits(128) or 1
            if (trace_id & (_ID_LIMIT - 1)) >= self._bound:
                return None
        attributes = request_attributes(endpoint, configuration, body)
        call = _Call(self, trace_id, parent_id, remote, tracestate, endpoint, attributes)
        call.stream = body.get("stream") is True
        if self._settings.capture_content:
            call.capture("gen_ai.input.messages", _input_messages(body))
        return call

    def submit(self, span: SpanTuple) -> None:
        """On the serving loop: one put, or one count when the queue is full."""
        try:
            self._queue.put_nowait(span)
        except queues.Full:
            with self._lock:
                self._full += 1

    def dropped_spans(self) -> int:
        return self._full + int(self._undelivered.value)

    def _check(self) -> None:
        """At most once a minute, on a call: the drops logged, a dead exporter restarted."""
        now = time.monotonic()
        if now - self._logged_at < LOG_INTERVAL_SECONDS:
            return
        self._logged_at = now
        undelivered = int(self._undelivered.value)
        dropped = self._full + undelivered
        if dropped > self._reported:
            log.warning(
                "traces: %d spans not delivered in the last minute (queue full or the "
                "collector unreachable); see gateway_otel_spans_dropped",
                dropped - self._reported,
            )
            self._reported = dropped
        if not self._process.is_alive():
            log.warning(
                "traces: the exporter process ended (exit %s); restarting it",
                self._process.exitcode,
            )
            self._start_exporter()

    def shutdown(self) -> None:
        """The spans queued are exported (10 s at most), then the exporter ends."""
        with contextlib.suppress(queues.Full):
            self._queue.put(None, timeout=1.0)
        self._process.join(timeout=10.0)
        if self._process.is_alive():
            self._process.terminate()
        self._queue.close()

    def redact(self, text: str) -> str:
        for secret in self._secrets():
            if secret:
                text = text.replace(secret, REDACTED)
        return _KEY_SHAPES.sub(REDACTED, text)


class _Call:
    __slots__ = (
        "_attributes",
        "_endpoint",
        "_events",
        "_owner",
        "_parent_id",
        "_remote",
        "_span_id",
        "_started_ns",
        "_streamed",
        "_trace_id",
        "_tracestate",
        "stream",
    )

    def __init__(
        self,
        owner: OtelTracer,
        trace_id: int,
        parent_id: int,
        remote: bool,
        tracestate: str | None,
        endpoint: str,
        attributes: dict[str, Any],
    ) -> None:
        self._owner = owner
        self._trace_id = trace_id
        self._parent_id = parent_id
        self._remote = remote
        self._tracestate = tracestate
        self._span_id = _new_id()
        self._endpoint = endpoint
        self._attributes = attributes
        self._events: list[tuple[str, dict[str, Any], int]] = []
        self._started_ns = time.time_ns()
        self._streamed: StreamedContent | None = None
        self.stream = False

    @property
    def trace_id(self) -> str:
        return format(self._trace_id, "032x")

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
        name = f"{operation_name(self._endpoint)} {model}"
        return _Attempt(self._owner, self, name, attributes)

    @_guarded
    def note_answer(self, body: Mapping[str, Any]) -> None:
        self._attributes.update(answer_attributes(body))
        if self._owner.settings.capture_content:
            choices = body.get("choices")
            if isinstance(choices, list):
                messages = [c.get("message") for c in choices if isinstance(c, dict)]
                self.capture("gen_ai.output.messages", messages)

    @_guarded
    def note_cached_tokens(self, tokens: int) -> None:
        self._attributes["gen_ai.usage.cache_read.input_tokens"] = tokens

    @property
    def captures_content(self) -> bool:
        return self._owner.settings.capture_content

    @_guarded
    def note_stream_event(self, event: dict[str, Any]) -> None:
        if self._streamed is None:
            self._streamed = StreamedContent()
        self._streamed.add(event)

    def capture(self, name: str, value: Any) -> None:
        text = self._owner.redact(_ENCODER.encode(value).decode())
        event = ("gen_ai.client.inference.operation.details", {name: text}, time.time_ns())
        self._events.append(event)

    @_guarded
    def finish(self, record: TelemetryRecord) -> None:
        if self._streamed is not None:
            self.capture("gen_ai.output.messages", self._streamed.messages())
        self._attributes.update(record_attributes(record))
        ttft = record.time_to_first_token_ms
        if ttft is not None and self.stream:
            at = self._started_ns + int(ttft * 1_000_000)
            self._events.append(
                ("gen_ai.first_token", {"gateway.time_to_first_token_ms": ttft}, at)
            )
        error = str(record.error_class) if record.error_class is not None else None
        self._owner.submit(
            (
                span_name(self._endpoint, str(self._attributes["gen_ai.request.model"])),
                self._trace_id,
                self._span_id,
                self._parent_id,
                self._remote,
                SERVER,
                self._started_ns,
                time.time_ns(),
                self._attributes,
                self._events,
                error,
            )
        )

    # For _Attempt.
    @property
    def ids(self) -> tuple[int, int]:
        return self._trace_id, self._span_id

    @property
    def tracestate(self) -> str | None:
        return self._tracestate


class _Attempt:
    __slots__ = ("_attributes", "_call", "_name", "_owner", "_span_id", "_started_ns")

    def __init__(
        self, owner: OtelTracer, call: _Call, name: str, attributes: dict[str, Any]
    ) -> None:
        self._owner = owner
        self._call = call
        self._name = name
        self._attributes = attributes
        self._span_id = _new_id()
        self._started_ns = time.time_ns()

    @_guarded
    def headers(self) -> dict[str, str]:
        if not self._owner.settings.propagate_upstream:
            return {}
        trace_id, _ = self._call.ids
        sent = {"traceparent": f"00-{trace_id:032x}-{self._span_id:016x}-01"}
        if self._call.tracestate:
            sent["tracestate"] = self._call.tracestate
        return sent

    @_guarded
    def end(self, status: int | None, failure: str | None, not_retried: str | None) -> None:
        attributes = self._attributes
        if status is not None:
            attributes["http.response.status_code"] = status
        if failure is not None:
            attributes["error.type"] = failure
            attributes["gateway.retried"] = not_retried is None
            if not_retried is not None:
                attributes["gateway.not_retried_because"] = not_retried
        trace_id, parent_id = self._call.ids
        self._owner.submit(
            (
                self._name,
                trace_id,
                self._span_id,
                parent_id,
                False,
                CLIENT,
                self._started_ns,
                time.time_ns(),
                attributes,
                [],
                failure,
            )
        )


class _Unsampled:
    """A call in a client's unsampled trace: no span, no trace id on the row or the answer;
    each attempt passes the client's ``traceparent`` and ``tracestate`` on as they came."""

    __slots__ = ("_headers",)

    def __init__(self, propagate: bool, traceparent: str, tracestate: str | None) -> None:
        self._headers: dict[str, str] = {}
        if propagate:
            self._headers["traceparent"] = traceparent
            if tracestate:
                self._headers["tracestate"] = tracestate

    @property
    def trace_id(self) -> str | None:
        return None

    def attempt(
        self, provider: str, adapter: str, host: str, model: str, retry: int
    ) -> AttemptSpan:
        return self

    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    def end(self, status: int | None, failure: str | None, not_retried: str | None) -> None:
        return None

    def note_answer(self, body: Mapping[str, Any]) -> None:
        return None

    def note_cached_tokens(self, tokens: int) -> None:
        return None

    @property
    def captures_content(self) -> bool:
        return False

    def note_stream_event(self, event: dict[str, Any]) -> None:
        return None

    def finish(self, record: TelemetryRecord) -> None:
        return None


def _input_messages(body: Mapping[str, Any]) -> Any:
    for field in ("messages", "input", "prompt"):
        if field in body:
            return body[field]
    return None
