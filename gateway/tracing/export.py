"""A span processor that never makes a call wait for the collector: spans are queued (bounded,
the overflow counted) and exported in batches by a thread of their own.

The SDK's BatchSpanProcessor drops silently when its queue is full; the operator must see how
many spans a slow or absent collector cost, so this one counts every span it could not deliver
(queue full, or an export that failed) and logs the count at most once a minute.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

log = logging.getLogger(__name__)

BATCH_SPANS = 512
EXPORT_INTERVAL_SECONDS = 1.0
LOG_INTERVAL_SECONDS = 60.0


class BoundedExport(SpanProcessor):
    """The SDK's SpanProcessor, with its queue bounded and its losses counted."""

    def __init__(
        self,
        exporter: Any,  # an SDK SpanExporter
        max_spans: int,
        on_drop: Callable[[int], None],
        *,
        interval: float = EXPORT_INTERVAL_SECONDS,
    ) -> None:
        self._exporter = exporter
        self._max = max_spans
        self._on_drop = on_drop
        self._interval = interval
        self._queue: collections.deque[Any] = collections.deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self.dropped = 0
        self._unlogged = 0
        self._logged_at = 0.0
        self._thread = threading.Thread(target=self._run, name="otel-export", daemon=True)
        self._thread.start()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        return None

    def on_end(self, span: Any) -> None:
        """On the serving loop: one append, or one count when the queue is full."""
        if not span.context.trace_flags.sampled:
            return
        with self._lock:
            if len(self._queue) >= self._max:
                full = True
            else:
                full = False
                self._queue.append(span)
                if len(self._queue) >= BATCH_SPANS:
                    self._wake.set()
        if full:
            self._lost(1)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self._drain(time.monotonic() + timeout_millis / 1000.0)
        return True

    def shutdown(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=10.0)
        self._drain(time.monotonic() + 5.0)
        self._exporter.shutdown()

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._interval)
            self._wake.clear()
            self._drain(None)

    def _drain(self, deadline: float | None) -> None:
        while deadline is None or time.monotonic() < deadline:
            with self._lock:
                count = min(len(self._queue), BATCH_SPANS)
                batch = [self._queue.popleft() for _ in range(count)]
            if not batch:
                return
            try:
                delivered = self._exporter.export(batch).name == "SUCCESS"
            except Exception:  # an exporter that raises is an export that failed
                delivered = False
            if not delivered:
                self._lost(len(batch))
            if self._stopping and deadline is None:
                return

    def _lost(self, count: int) -> None:
        with self._lock:
            self.dropped += count
            self._unlogged += count
            now = time.monotonic()
            due = now - self._logged_at >= LOG_INTERVAL_SECONDS
            unlogged = self._unlogged
            if due:
                self._logged_at = now
                self._unlogged = 0
        self._on_drop(count)
        if due:
            log.warning(
                "traces: %d spans not delivered (queue full or the collector unreachable); "
                "see gateway_otel_spans_dropped_total",
                unlogged,
            )
