"""Telemetry records for tests: a successful first-attempt chat call unless told otherwise."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.telemetry.records import TelemetryRecord

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def make_record(**overrides: Any) -> TelemetryRecord:
    fields: dict[str, Any] = {
        "created_at": NOW,
        "request_id": "req-1",
        "api_key_id": "alice",
        "operation": "chat",
        "configuration": "smart-chat",
        "provider": "openai-main",
        "adapter_type": "openai",
        "model": "gpt-4o-mini",
        "served_configuration": "smart-chat",
        "served_provider": "openai-main",
        "served_model": "gpt-4o-mini",
        "response_model": "gpt-4o-mini-2024-07-18",
        "success": True,
        "http_status": 200,
        "latency_ms": 100.0,
        "usage_source": "provider",
    }
    fields.update(overrides)
    return TelemetryRecord(**fields)
