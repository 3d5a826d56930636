"""The spans of one traced call, kept as plain values until they are submitted to the
tracer's queue: the server span (``TracedCall``), one client span per upstream attempt
(``TracedAttempt``), and a call in a client's unsampled trace (``UnsampledCall``)."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from gateway.tracing import AttemptSpan
from gateway.tracing.attributes import (
    answer_attributes,
    operation_name,
    provider_name,
    record_attributes,
    span_name,
)
from gateway.tracing.content import StreamedContent
from gateway.tracing.guard import guarded

if TYPE_CHECKING:
    from gateway.telemetry.records import TelemetryRecord
    from gateway.tracing.otel import OtelTracer

SERVER, CLIENT = 2, 3  # OTLP span kinds
_ENCODER = msgspec.json.Encoder()


def new_id() -> int:
    return random.getrandbits(64) or 1


class TracedCall:
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
        self._span_id = new_id()
        self._endpoint = endpoint
        self._attributes = attributes
        self._events: list[tuple[str, dict[str, Any], int]] = []
        self._started_ns = time.time_ns()
        self._streamed: StreamedContent | None = None
        self.stream = False

    @property
    def trace_id(self) -> str:
        return format(self._trace_id, "032x")

    @guarded
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
        return TracedAttempt(self._owner, self, name, attributes)

    @guarded
    def note_answer(self, body: Mapping[str, Any]) -> None:
        self._attributes.update(answer_attributes(body))
        if self._owner.settings.capture_content:
            choices = body.get("choices")
            if isinstance(choices, list):
                messages = [c.get("message") for c in choices if isinstance(c, dict)]
                self.capture("gen_ai.output.messages", messages)

    @guarded
    def note_cached_tokens(self, tokens: int) -> None:
        self._attributes["gen_ai.usage.cache_read.input_tokens"] = tokens

    @property
    def captures_content(self) -> bool:
        return self._owner.settings.capture_content

    @guarded
    def note_stream_event(self, event: dict[str, Any]) -> None:
        if self._streamed is None:
            self._streamed = StreamedContent()
        self._streamed.add(event)

    def capture(self, name: str, value: Any) -> None:
        text = self._owner.redact(_ENCODER.encode(value).decode())
        event = ("gen_ai.client.inference.operation.details", {name: text}, time.time_ns())
        self._events.append(event)

    @guarded
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

    # For TracedAttempt.
    @property
    def ids(self) -> tuple[int, int]:
        return self._trace_id, self._span_id

    @property
    def tracestate(self) -> str | None:
        return self._tracestate


class TracedAttempt:
    __slots__ = ("_attributes", "_call", "_name", "_owner", "_span_id", "_started_ns")

    def __init__(
        self, owner: OtelTracer, call: TracedCall, name: str, attributes: dict[str, Any]
    ) -> None:
        self._owner = owner
        self._call = call
        self._name = name
        self._attributes = attributes
        self._span_id = new_id()
        self._started_ns = time.time_ns()

    @guarded
    def headers(self) -> dict[str, str]:
        if not self._owner.settings.propagate_upstream:
            return {}
        trace_id, _ = self._call.ids
        sent = {"traceparent": f"00-{trace_id:032x}-{self._span_id:016x}-01"}
        if self._call.tracestate:
            sent["tracestate"] = self._call.tracestate
        return sent

    @guarded
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


class UnsampledCall:
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


def input_messages(body: Mapping[str, Any]) -> Any:
    for field in ("messages", "input", "prompt"):
        if field in body:
            return body[field]
    return None
