"""The rollup increments of one batch (gateway.telemetry.rollup)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gateway.routing.latency_buckets import bucket_of
from gateway.telemetry.rollup import hour_of, hourly_increments
from tests.unit.telemetry.factory import NOW, make_record


def test_hour_of_rounds_down_in_utc() -> None:
    moment = datetime(2026, 12, 2, 10, 59, 59, 999999, tzinfo=UTC)
    assert hour_of(moment) == datetime(2026, 12, 2, 10, tzinfo=UTC)
    assert hour_of(moment.replace(tzinfo=None)) == datetime(2026, 12, 2, 10, tzinfo=UTC)


def test_one_key_per_hour_and_the_populations_counted_apart() -> None:
    records = [
        make_record(latency_ms=100.0, actual_cost=Decimal("0.002"), actual_output_tokens=7),
        make_record(latency_ms=300.0, created_at=NOW + timedelta(minutes=59)),
        make_record(latency_ms=900.0, fallback_attempts=1),  # health failure, no history
        make_record(
            latency_ms=50.0,
            success=False,
            error_class="upstream_4xx",  # the caller's fault: not a health sample
            served_provider=None,
            served_model=None,
        ),
        make_record(latency_ms=5000.0, created_at=NOW + timedelta(hours=1)),
    ]
    hourly, latency = hourly_increments(records)
    first_hour = [row for row in hourly if row["hour"] == NOW]
    by_served = {row["provider"]: row for row in first_hour}
    served = by_served["openai-main"]
    assert served["calls"] == 3
    assert (served["history_calls"], served["history_latency_sum_ms"]) == (2, 400.0)
    assert served["fallbacks"] == 1
    assert (served["cost"], served["priced_calls"]) == (Decimal("0.002"), 1)
    assert served["output_tokens"] == 7
    assert (served["health_samples"], served["health_successes"]) == (3, 2)
    assert served["health_latency_calls"] == 2
    failed = by_served[""]
    assert (failed["calls"], failed["errors"], failed["health_samples"]) == (1, 1, 0)
    assert [row["hour"] for row in hourly].count(NOW + timedelta(hours=1)) == 1
    buckets = {(row["hour"], row["kind"], row["bucket"]): row["calls"] for row in latency}
    assert buckets == {
        (NOW, "total", bucket_of(100.0)): 1,
        (NOW, "total", bucket_of(300.0)): 1,
        (NOW + timedelta(hours=1), "total", bucket_of(5000.0)): 1,
    }


def test_a_ttft_adds_to_its_own_histogram() -> None:
    record = make_record(operation="stream", latency_ms=4000.0, time_to_first_token_ms=250.0)
    hourly, latency = hourly_increments([record])
    assert (hourly[0]["streams"], hourly[0]["history_ttft_calls"]) == (1, 1)
    assert {(row["kind"], row["bucket"]) for row in latency} == {
        ("total", bucket_of(4000.0)),
        ("ttft", bucket_of(250.0)),
    }
