"""Traces of calls (OpenTelemetry, on the GenAI semantic conventions): what the pipeline
sees of them. The SDK is imported only when ``telemetry.otel.enabled`` (gateway.tracing.otel);
otherwise every call gets ``None`` for its span and tracing costs one comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from gateway.telemetry.records import TelemetryRecord

TRACE_HEADER = "x-gateway-trace-id"


class AttemptSpan(Protocol):
    def headers(self) -> dict[str, str]:
        """The W3C headers (traceparent, tracestate) that continue the trace upstream."""
        ...

    def end(self, status: int | None, failure: str | None, not_retried: str | None) -> None:
        """The attempt ended: its HTTP status, its failure kind, why it was not retried."""
        ...


class CallSpan(Protocol):
    @property
    def trace_id(self) -> str | None:
        """The 32 hex digits of the call's trace; ``None`` when the call records no span
        (it only passes a client's unsampled ``traceparent`` on)."""
        ...

    def attempt(
        self, provider: str, adapter: str, host: str, model: str, retry: int
    ) -> AttemptSpan:
        """A client span for one upstream attempt, a child of the call's."""
        ...

    def note_answer(self, body: Mapping[str, Any]) -> None:
        """A whole answer's id, finish reasons, reasoning tokens and (captured) output."""
        ...

    def note_cached_tokens(self, tokens: int) -> None: ...

    @property
    def captures_content(self) -> bool:
        """Whether the call's content goes on its span (``captureContent``): only then does
        a stream hand its events to ``note_stream_event``."""
        ...

    def note_stream_event(self, event: dict[str, Any]) -> None:
        """One decoded event of a streamed answer, kept for the captured output."""
        ...

    def finish(self, record: TelemetryRecord) -> None:
        """The call ended: its row's figures on the span, and the span ended."""
        ...


class CallTracer(Protocol):
    def start_call(
        self, endpoint: str, configuration: str, body: Mapping[str, Any], carrier: Mapping[str, str]
    ) -> CallSpan | None:
        """The call's server span, continuing the client's ``traceparent`` in ``carrier``."""
        ...

    def dropped_spans(self) -> int: ...

    def shutdown(self) -> None: ...


class NoTracing:
    """telemetry.otel off: no span, nothing imported."""

    def start_call(
        self, endpoint: str, configuration: str, body: Mapping[str, Any], carrier: Mapping[str, str]
    ) -> CallSpan | None:
        return None

    def dropped_spans(self) -> int:
        return 0

    def shutdown(self) -> None:
        return None
