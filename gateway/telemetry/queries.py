"""Read-side queries over telemetry for the admin API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import telemetry
from gateway.domain.signals import Signal

_SIGNALS = tuple((signal.value, signal.flag_column) for signal in Signal)


async def recent_routed_calls(
    engine: AsyncEngine, days: int, limit: int, now: datetime
) -> list[dict[str, Any]]:
    """Calls that took a decision (``routing_policy_mode <> ''``), newest first."""
    t = telemetry.c
    query = (
        select(
            t.created_at,
            t.operation,
            t.configuration,
            t.served_model,
            t.response_model,
            t.upstream_model,
            t.latency_ms,
            t.time_to_first_token_ms,
            t.output_tokens_per_second,
            t.success,
            t.fallback_attempts,
            t.routing_policy_mode,
            t.routing_candidates,
            t.routing_rejections,
            t.routing_cost_basis,
            t.routing_explored,
            *(getattr(t, c) for _, c in _SIGNALS),
        )
        .where(t.created_at >= now - timedelta(days=days), t.routing_policy_mode != "")
        .order_by(t.created_at.desc(), t.id.desc())
        .limit(limit)
    )
    async with engine.connect() as connection:
        rows = (await connection.execute(query)).mappings().all()
    return [_call(row) for row in rows]


def _call(row: Any) -> dict[str, Any]:
    created: datetime = row["created_at"]
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return {
        "createdAt": created.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "operation": row["operation"],
        "configuration": row["configuration"],
        "servedModel": row["served_model"],
        # docs/api.md#admin: the model the upstream says it ran, when not the one sent.
        "upstreamModel": row["upstream_model"],
        "upstreamModelDiffers": row["upstream_model"] is not None,
        "latencyMs": row["latency_ms"],
        "ttftMs": row["time_to_first_token_ms"],
        "outputTokensPerSecond": row["output_tokens_per_second"],
        "success": bool(row["success"]),
        "fallbackAttempts": row["fallback_attempts"],
        "mode": row["routing_policy_mode"],
        "candidates": row["routing_candidates"],
        "rejections": [r for r in (row["routing_rejections"] or "").split(",") if r],
        "costBasis": row["routing_cost_basis"] or "",
        "signalsUsed": [name for name, column in _SIGNALS if row[column]],
        "explored": bool(row["routing_explored"]),
    }
