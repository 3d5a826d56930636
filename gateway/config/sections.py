"""Phase 2 for the sections that reference nothing: a field-for-field copy."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.config.schema import (
    BudgetSchema,
    FileSchema,
    LimitsSchema,
    OtelSchema,
    RateLimitSchema,
)
from gateway.domain.limits import RateLimit
from gateway.domain.model import BudgetLimits, BudgetSpec, ExplorationSettings, RoutingSettings
from gateway.domain.settings import (
    BudgetSettings,
    CircuitBreakerSettings,
    DatabaseSettings,
    HealthSettings,
    OtelSettings,
    RateLimitSettings,
    ServerSettings,
    TelemetrySettings,
)


@dataclass(frozen=True, slots=True)
class Sections:
    server: ServerSettings
    database: DatabaseSettings
    telemetry: TelemetrySettings
    budgets: BudgetSettings
    rate_limits: RateLimitSettings
    routing: RoutingSettings
    health: HealthSettings
    circuit_breaker: CircuitBreakerSettings


def resolve_sections(file: FileSchema) -> Sections:
    server, routing, health = file.server, file.routing, file.health
    return Sections(
        server=ServerSettings(
            host=server.host,
            port=server.port,
            workers=server.workers,
            max_body_bytes=server.max_body_bytes,
            request_timeout_seconds=server.request_timeout_seconds,
            max_upstream_body_bytes=server.max_upstream_body_bytes,
            max_upstream_event_bytes=server.max_upstream_event_bytes,
            log_format=server.log_format.value,
            access_log=server.access_log,
            max_header_bytes=server.max_header_bytes,
            header_timeout_seconds=server.header_timeout_seconds,
            idle_timeout_seconds=server.idle_timeout_seconds,
            max_connections=server.max_connections,
            max_upstream_connections=server.max_upstream_connections or server.max_connections,
            shutdown_drain_seconds=server.shutdown_drain_seconds,
            shutdown_grace_seconds=server.shutdown_grace_seconds,
        ),
        database=DatabaseSettings(url=file.database.url),
        telemetry=TelemetrySettings(
            enabled=file.telemetry.enabled,
            retention_days=file.telemetry.retention_days,
            writer=file.telemetry.writer.value,
            otel=_otel(file.telemetry.otel),
        ),
        budgets=BudgetSettings(on_database_outage=file.budgets.on_database_outage.value),
        rate_limits=RateLimitSettings(on_redis_outage=file.rate_limits.on_redis_outage.value),
        routing=RoutingSettings(
            policy_mode=routing.policy_mode,
            call_history=routing.call_history,
            call_history_days=routing.call_history_days,
            call_history_min_calls=routing.call_history_min_calls,
            call_history_cache_seconds=routing.call_history_cache_seconds,
            call_history_statistic=routing.call_history_statistic.value,
            stream_latency=routing.stream_latency.value,
            operation_capability_enforcement=routing.operation_capability_enforcement,
            list_price_ceiling=routing.list_price_ceiling,
            exploration=(
                ExplorationSettings(routing.exploration.share, routing.exploration.min_calls)
                if routing.exploration is not None
                else None
            ),
        ),
        health=HealthSettings(
            window_seconds=health.window_seconds,
            cache_seconds=health.cache_seconds,
            reorder_fallback=health.reorder_fallback,
        ),
        circuit_breaker=CircuitBreakerSettings(
            failure_threshold=file.circuit_breaker.failure_threshold,
            cooldown_seconds=file.circuit_breaker.cooldown_seconds,
        ),
    )


def to_budget(entry: BudgetSchema | None) -> BudgetSpec | None:
    if entry is None:
        return None
    return BudgetSpec(daily=_limits(entry.daily), monthly=_limits(entry.monthly))


def _limits(entry: LimitsSchema | None) -> BudgetLimits | None:
    if entry is None:
        return None
    return BudgetLimits(requests=entry.requests, tokens=entry.tokens, cost=entry.cost)


def to_rate_limit(entry: RateLimitSchema | None) -> RateLimit | None:
    """A ``rateLimit`` block -> the domain's RateLimit; an empty block is no limit."""
    if entry is None:
        return None
    limit = RateLimit(
        requests_per_minute=entry.requests_per_minute,
        tokens_per_minute=entry.tokens_per_minute,
        concurrent=entry.concurrent,
    )
    return None if limit.is_empty else limit


def _otel(entry: OtelSchema | None) -> OtelSettings:
    if entry is None:
        return OtelSettings()
    headers = tuple(sorted(entry.headers.items())) if entry.headers is not None else None
    return OtelSettings(
        enabled=entry.enabled,
        endpoint=entry.endpoint,
        protocol=entry.protocol.value if entry.protocol is not None else None,
        headers=headers,
        service_name=entry.service_name,
        sample_ratio=entry.sample_ratio,
        capture_content=entry.capture_content,
        propagate_upstream=entry.propagate_upstream,
        trace_url=entry.trace_url,
        max_queue_spans=entry.max_queue_spans,
        export_timeout_seconds=entry.export_timeout_seconds,
    )
