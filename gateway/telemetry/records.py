"""The telemetry row as the request path builds it: one cheap struct per call.

Fields mirror the ``telemetry`` table (docs/telemetry.md#telemetry) except ``id``;
``request_id`` is written to its ``correlation_id`` column. Flags are
``bool`` here and 0/1 in the database. Strings longer than their column are cut
when written, so one odd ``x-request-id`` cannot fail a whole batch.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain.failures import ErrorClass
from gateway.domain.usage import UsageSource
from gateway.routing.detail import CallTrail, detail_document


class TelemetryRecord(msgspec.Struct, kw_only=True, gc=False):
    created_at: datetime  # when the call started, aware UTC
    request_id: str  # the x-request-id; the column is named correlation_id
    operation: str  # an Operation value
    configuration: str
    success: bool
    http_status: int
    latency_ms: float
    api_key_id: str | None = None
    provider: str | None = None  # first attempted; None when nothing was attempted
    adapter_type: str | None = None
    model: str | None = None
    served_configuration: str | None = None  # what answered; None when nothing did
    served_provider: str | None = None
    served_model: str | None = None
    response_model: str | None = None
    error_class: ErrorClass | None = None
    time_to_first_token_ms: float | None = None
    cache_hit: bool = False
    fallback_attempts: int = 0
    provider_retries: int = 0
    actual_input_tokens: int | None = None
    actual_output_tokens: int | None = None
    actual_cost: Decimal | None = None
    usage_source: UsageSource = UsageSource.NONE
    routing_policy_mode: str = ""
    routing_candidates: int = 0
    routing_rejections: str = ""
    routing_cost_basis: str = ""
    routing_signal_quality: bool = False
    routing_signal_health: bool = False
    routing_signal_cost: bool = False
    routing_signal_latency: bool = False
    routing_signal_call_cost: bool = False
    routing_explored: bool = False  # routing.exploration chose the model, not the ranking
    estimated_input_tokens: int | None = None
    estimated_output_tokens: int | None = None
    estimated_cost: Decimal | None = None  # the estimate's price, when usage was not reported
    output_tokens_per_second: float | None = None  # streams: output tokens / generation time
    upstream_model: str | None = None  # the model the upstream says it ran, when not the one sent
    trace_id: str | None = None  # the call's OpenTelemetry trace (32 hex), when traced
    team_id: str | None = None  # the calling key's team (gateway.governance)
    inbound_api: str | None = None  # chat | responses | messages | completions | embeddings
    ignored_params: str | None = None  # accepted, not passed on: "a,b" (x-gateway-ignored-params)
    price_source: str | None = None  # config | catalog:<data version>
    # What the pipeline decided and attempted: the row's routing_detail, encoded when the
    # writer inserts the row (off the request path).
    trail: CallTrail | None = None


_FLAGS = (
    "success",
    "cache_hit",
    "routing_signal_quality",
    "routing_signal_health",
    "routing_signal_cost",
    "routing_signal_latency",
    "routing_signal_call_cost",
    "routing_explored",
)


_ENCODER = msgspec.json.Encoder()


def routing_detail(record: TelemetryRecord) -> str | None:
    """The ``routing_detail`` JSON of a record, None when the pipeline noted nothing."""
    if record.trail is None:
        return None
    document = detail_document(
        record.trail,
        success=record.success,
        error_class=record.error_class,
        http_status=record.http_status,
    )
    return _ENCODER.encode(document).decode()


def to_row(record: TelemetryRecord, limits: dict[str, int]) -> dict[str, Any]:
    """The insert parameters for one record; ``limits`` maps string columns to lengths."""
    row: dict[str, Any] = msgspec.structs.asdict(record)  # every field, in C
    del row["trail"]
    row["correlation_id"] = row.pop("request_id")  # the column keeps its published name
    row["routing_detail"] = routing_detail(record)
    for name in _FLAGS:
        row[name] = 1 if row[name] else 0
    for name, length in limits.items():
        value = row[name]
        if value is not None and len(value) > length:
            row[name] = value[:length]
    return row
