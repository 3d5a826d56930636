"""Prometheus metrics, one registry per app (no module globals), names prefixed ``gateway_``.

With several workers (``server.workers > 1``) ``gateway serve`` sets
``PROMETHEUS_MULTIPROC_DIR`` before any worker starts: prometheus_client then keeps each
worker's values in files there, and ``/metrics`` answers with the sum over every worker
(its MultiProcessCollector), whichever worker takes the scrape. The gauges say how they
add up: ``livesum`` for what is current (a dead worker's share drops out), ``sum`` for
counts since start.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from gateway.domain.failures import ErrorClass, FailureKind

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess() -> bool:
    """Do this process's metrics live in files shared with the other workers?"""
    return bool(os.environ.get(MULTIPROCESS_ENV))


_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "gateway_requests",
            "Proxied calls, by operation and HTTP status.",
            ["operation", "status"],
            registry=self.registry,
        )
        self.otel_dropped = Gauge(
            "gateway_otel_spans_dropped",
            "Spans not delivered to the OpenTelemetry collector since start: its queue was "
            "full or the export failed (telemetry.otel).",
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.errors = Counter(
            "gateway_errors",
            "Calls that failed, by the row's error_class.",
            ["error_class"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gateway_request_latency_seconds",
            "Whole call inside the gateway (a stream: until its end).",
            ["operation"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.upstream_latency = Histogram(
            "gateway_upstream_latency_seconds",
            "One upstream attempt, until its answer (a stream: until its first byte).",
            ["provider"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            "gateway_upstream_errors",
            "Failed upstream attempts, by provider and kind.",
            ["provider", "kind"],
            registry=self.registry,
        )
        self.capability_warnings = Counter(
            "gateway_routing_capability_warnings",
            "Observe mode: candidates that lack a capability the call needs.",
            ["configuration"],
            registry=self.registry,
        )
        self.history_read_failures = Gauge(
            "gateway_call_history_read_failures",
            "Failed call-history reads since start (the decision ran without history).",
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.signal_reads = Gauge(
            "gateway_signal_reads",
            "Signal snapshots taken since start, by signal and source (database: read here;"
            " shared: another process's read, taken from Redis).",
            ["signal", "source"],
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.budget_unchecked = Gauge(
            "gateway_budget_unchecked_calls",
            "Calls admitted without a budget check while the database was unreachable.",
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.budget_pending = Gauge(
            "gateway_budget_pending_calls",
            "Calls whose budget use is kept in memory until the database takes it"
            " (admitted during an outage, or their settlement failed).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.queue_depth = Gauge(
            "gateway_telemetry_queue_depth",
            "Telemetry rows waiting to be written (queued, or sent to the writer process"
            " and not yet acknowledged).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.dropped_rows = Gauge(
            "gateway_telemetry_dropped_rows",
            "Telemetry rows dropped since start (queue full or database down too long).",
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.upstream_pool_size = Gauge(
            "gateway_upstream_pool_connections",
            "Connections the upstream pool may open (server.maxUpstreamConnections).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.upstream_pool_waiting = Gauge(
            "gateway_upstream_pool_waiting_calls",
            "Calls waiting now for a free upstream connection (the pool is full).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.upstream_pool_waits = Gauge(
            "gateway_upstream_pool_waits",
            "Calls that had to wait for a free upstream connection, since start.",
            registry=self.registry,
            multiprocess_mode="sum",
        )
        self.circuit_state = Gauge(
            "gateway_circuit_state",
            "Each provider's circuit as routing treats it now: 0 closed, 1 half-open (a trial"
            " call allowed or running), 2 open (calls refused). Workers: the highest.",
            ["provider"],
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.task_restarts = Counter(
            "gateway_background_task_restarts",
            "Background tasks restarted after they crashed, by task (gateway.tasks).",
            ["task"],
            registry=self.registry,
        )
        self.redis_skipped = Counter(
            "gateway_redis_values_skipped",
            "Values read from Redis skipped as undecodable or out of bounds, by source.",
            ["source"],
            registry=self.registry,
        )

        # Labelled children, looked up once: .labels() costs more than the update itself.
        self._children: dict[tuple[object, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_upstream(
        self, provider: str, seconds: float, error_kind: FailureKind | None
    ) -> None:
        self._child(self.upstream_latency, provider).observe(seconds)
        if error_kind is not None:
            self._child(self.upstream_errors, provider, error_kind).inc()

    def observe_call(
        self, operation: str, status: int, seconds: float, error_class: ErrorClass | None
    ) -> None:
        self._child(self.requests, operation, str(status)).inc()
        self._child(self.latency, operation).observe(seconds)
        if error_class is not None:
            self._child(self.errors, error_class).inc()

    def observe_capability_warning(self, configuration: str) -> None:
        self._child(self.capability_warnings, configuration).inc()

    def observe_task_restart(self, task: str) -> None:
        self._child(self.task_restarts, task).inc()

    def observe_redis_skipped(self, source: str) -> None:
        self._child(self.redis_skipped, source).inc()

    def set_gauge(self, metric: Any, value: float, *labels: str) -> None:
        (self._child(metric, *labels) if labels else metric).set(value)

    def set_circuit_states(self, values: dict[str, int]) -> None:
        """``gateway_circuit_state`` for exactly these providers (one a reload removed
        leaves the gauge)."""
        for provider, value in values.items():
            self.set_gauge(self.circuit_state, value, provider)
        for key in [k for k in self._children if k[0] == id(self.circuit_state)]:
            if key[1] not in values:
                del self._children[key]
                self.circuit_state.remove(*key[1:])

    def render(self, refresh: Callable[[Metrics], None] | None = None) -> bytes:
        if refresh is not None:
            refresh(self)
        if multiprocess():
            every_worker = CollectorRegistry()
            MultiProcessCollector(every_worker)  # type: ignore[no-untyped-call]
            return generate_latest(every_worker)
        return generate_latest(self.registry)

    @staticmethod
    def process_ended() -> None:
        """A worker stops: its current (``livesum``) gauges leave the sum."""
        if multiprocess():
            mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
