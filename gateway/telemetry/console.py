"""Read-side queries of the console's Calls and Providers views (docs/console.md).

Calls are paged by id (keyset), newest first: a page costs the same at any depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
from sqlalchemy import ColumnElement, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.tables import telemetry
from gateway.domain.signals import Signal

FIXED_MODE = "fixed"  # the mode filter's value for calls that took no decision
_DECODER = msgspec.json.Decoder()
_t = telemetry.c


@dataclass(frozen=True, slots=True)
class CallFilters:
    configuration: str | None = None
    key: str | None = None
    model: str | None = None  # served model
    provider: str | None = None  # served provider, else the first attempted
    status: str | None = None  # "ok" | "error"
    error_class: str | None = None
    mode: str | None = None  # a policy mode, or "fixed"
    operation: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        if self.configuration:
            found.append(_t.configuration == self.configuration)
        if self.key:
            found.append(_t.api_key_id == self.key)
        if self.model:
            found.append(_t.served_model == self.model)
        if self.provider:
            found.append(
                or_(
                    _t.served_provider == self.provider,
                    and_(_t.served_provider.is_(None), _t.provider == self.provider),
                )
            )
        if self.status == "ok":
            found.append(_t.success == 1)
        elif self.status == "error":
            found.append(_t.success == 0)
        if self.error_class:
            found.append(_t.error_class == self.error_class)
        if self.mode == FIXED_MODE:
            found.append(_t.routing_policy_mode == "")
        elif self.mode:
            found.append(_t.routing_policy_mode == self.mode)
        if self.operation:
            found.append(_t.operation == self.operation)
        if self.since is not None:
            found.append(_t.created_at >= self.since)
        if self.until is not None:
            found.append(_t.created_at < self.until)
        return found


_LIST_COLUMNS = (
    _t.id,
    _t.created_at,
    _t.operation,
    _t.configuration,
    _t.api_key_id,
    _t.provider,
    _t.model,
    _t.served_provider,
    _t.served_model,
    _t.success,
    _t.error_class,
    _t.http_status,
    _t.latency_ms,
    _t.time_to_first_token_ms,
    _t.cache_hit,
    _t.fallback_attempts,
    _t.actual_input_tokens,
    _t.actual_output_tokens,
    _t.actual_cost,
    _t.routing_policy_mode,
)


@dataclass(frozen=True, slots=True)
class CallPage:
    calls: list[dict[str, Any]]
    older: int | None  # the ``before`` id of the next (older) page, None at the end
    newer: int | None  # the ``after`` id of the previous (newer) page, None at the start


async def list_calls(
    engine: AsyncEngine,
    filters: CallFilters,
    *,
    size: int,
    before: int | None = None,
    after: int | None = None,
) -> CallPage:
    """One page of calls, newest first: below ``before``, or just above ``after``."""
    conditions = filters.conditions()
    if before is not None:
        conditions.append(_t.id < before)
    if after is not None:
        conditions.append(_t.id > after)
    order = _t.id.asc() if after is not None else _t.id.desc()
    query = select(*_LIST_COLUMNS).where(*conditions).order_by(order).limit(size + 1)
    async with engine.connect() as connection:
        rows = [dict(r) for r in (await connection.execute(query)).mappings().all()]
        more = len(rows) > size
        rows = rows[:size]
        if after is not None:
            rows.reverse()
        calls = [_call(row) for row in rows]
        if not calls:
            return CallPage([], None, None)
        first, last = calls[0]["id"], calls[-1]["id"]
        if after is not None:
            older = last if await _exists(connection, filters, _t.id < last) else None
            newer = first if more else None
        else:
            older = last if more else None
            newer = (
                first
                if before is not None and await _exists(connection, filters, _t.id > first)
                else None
            )
    return CallPage(calls, older, newer)


async def _exists(connection: Any, filters: CallFilters, bound: ColumnElement[bool]) -> bool:
    query = select(_t.id).where(*filters.conditions(), bound).limit(1)
    return (await connection.execute(query)).first() is not None


async def call_detail(engine: AsyncEngine, call_id: int) -> dict[str, Any] | None:
    """One row, every column, with its decision detail decoded."""
    query = select(telemetry).where(_t.id == call_id)
    async with engine.connect() as connection:
        row = (await connection.execute(query)).mappings().first()
    if row is None:
        return None
    found = _call(dict(row))
    for name in (
        "correlation_id",
        "adapter_type",
        "served_configuration",
        "response_model",
        "provider_retries",
        "usage_source",
        "routing_candidates",
        "routing_rejections",
        "routing_cost_basis",
        "estimated_input_tokens",
        "estimated_output_tokens",
        "trace_id",
    ):
        found[_camel(name)] = row[name]
    found["estimatedCost"] = _money(row["estimated_cost"])
    found["signalsUsed"] = [signal.value for signal in Signal if row[signal.flag_column]]
    detail = row["routing_detail"]
    found["detail"] = _DECODER.decode(detail) if detail else None
    return found


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _money(value: Decimal | None) -> str | None:
    return None if value is None else format(value.normalize(), "f")


def iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _call(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": int(row["id"]),
        "createdAt": iso(row["created_at"]),
        "operation": row["operation"],
        "configuration": row["configuration"],
        "key": row["api_key_id"],
        "provider": row["provider"],
        "model": row["model"],
        "servedProvider": row["served_provider"],
        "servedModel": row["served_model"],
        "success": bool(row["success"]),
        "errorClass": row["error_class"],
        "httpStatus": row["http_status"],
        "latencyMs": row["latency_ms"],
        "ttftMs": row["time_to_first_token_ms"],
        "cacheHit": bool(row["cache_hit"]),
        "fallbackAttempts": row["fallback_attempts"],
        "inputTokens": row["actual_input_tokens"],
        "outputTokens": row["actual_output_tokens"],
        "cost": _money(row["actual_cost"]),
        "mode": row["routing_policy_mode"] or FIXED_MODE,
    }


async def provider_figures(engine: AsyncEngine, since: datetime) -> list[dict[str, Any]]:
    """Calls, errors and mean latency per provider and model since ``since``.

    Grouped by the first attempted provider and model (what the health window reads);
    the range scan uses the health window index.
    """
    failed = case((_t.success == 0, 1), else_=0)
    query = (
        select(
            _t.provider,
            _t.model,
            func.count().label("calls"),
            func.sum(failed).label("errors"),
            func.avg(_t.latency_ms).label("latency"),
        )
        .where(_t.created_at >= since, _t.provider.is_not(None))
        .group_by(_t.provider, _t.model)
        .order_by(_t.provider, _t.model)
    )
    async with engine.connect() as connection:
        rows = (await connection.execute(query)).mappings().all()
    return [
        {
            "provider": row["provider"],
            "model": row["model"],
            "calls": int(row["calls"]),
            "errors": int(row["errors"] or 0),
            "meanLatencyMs": float(row["latency"]) if row["latency"] is not None else None,
        }
        for row in rows
    ]
