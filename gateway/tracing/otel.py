"""telemetry.otel's serving side: imported only when it is enabled.

The serving process keeps each call's spans as plain values (ids, times, attribute dicts),
decides sampling, reads the client's W3C ``traceparent`` and writes the one it sends upstream,
and hands each finished span to the exporter process (gateway.tracing.exporter_process) over
a bounded queue: no SDK span, no OTLP encoding, no network on the serving loop. One server
span per proxied call (``chat {configuration}``), one client span per upstream attempt.
docs/operations.md, "Traces", lists every attribute.
The spans themselves are in gateway.tracing.spans; the fault guard in gateway.tracing.guard.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import queue as queues
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.trace import get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.domain.settings import OtelSettings
from gateway.tracing import CallSpan
from gateway.tracing.attributes import request_attributes
from gateway.tracing.exporter_process import SpanTuple, export_forever
from gateway.tracing.guard import guarded
from gateway.tracing.spans import TracedCall, UnsampledCall, input_messages

log = logging.getLogger(__name__)
LOG_INTERVAL_SECONDS = 60.0
_ID_LIMIT = 2**64
_PROPAGATOR = TraceContextTextMapPropagator()
# Key-shaped strings in captured content, whatever their provider.
_KEY_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}|AKIA[0-9A-Z]{16})")
REDACTED = "[redacted]"


def build_tracer(settings: OtelSettings, secrets: Callable[[], tuple[str, ...]]) -> OtelTracer:
    return OtelTracer(settings, secrets)


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

    @guarded
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
                    return UnsampledCall(
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
        call = TracedCall(self, trace_id, parent_id, remote, tracestate, endpoint, attributes)
        call.stream = body.get("stream") is True
        if self._settings.capture_content:
            call.capture("gen_ai.input.messages", input_messages(body))
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
