"""The Overview's figures (read from usage_daily and the hourly rollup, docs/console.md#overview)
equal the same figures computed here from the telemetry rows: for calls made through the real
server and calls spread over forty days written through the real telemetry writer, for every
range, read twice (the second read takes settled days from the process's memory). On SQLite,
and on PostgreSQL and MariaDB when their URLs are set."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gateway.routing.latency_buckets import bucket_of, percentile
from tests.support.console import console_yaml, signed_in
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.routed import MESSAGES
from tests.unit.db.scratch import BACKENDS, scratch_database
from tests.unit.telemetry.factory import make_record

RANGES = {"today": 1, "7d": 7, "30d": 30}
CONFIGURATIONS = ("smart", "steady", "capped", "tools")
KEYS = ("alice", "bob", None)
SERVED = (("p-a", "model-a"), ("p-b", "model-b"), ("p-b", "model-c"))
ERRORS = ("upstream_5xx", "upstream_4xx", "client_disconnected", "budget_exceeded")


@pytest.fixture(params=BACKENDS)
def gateway(
    request: pytest.FixtureRequest, upstream: FakeUpstream, tmp_path: Path
) -> Iterator[RunningGateway]:
    with scratch_database(request.param, tmp_path) as url:
        running = RunningGateway(console_yaml(upstream.url, url))
        try:
            yield running
        finally:
            running.stop()


def _through_the_server(gateway: RunningGateway, upstream: FakeUpstream) -> None:
    """Routed, fixed and streamed calls, a failure, and a fallback (smart → steady)."""
    client = gateway.client()
    for configuration in ("smart", "steady", "smart"):
        client.chat.completions.create(model=configuration, messages=MESSAGES)
    for _ in range(2):
        stream = client.chat.completions.create(model="steady", messages=MESSAGES, stream=True)
        for _chunk in stream:
            pass
    upstream.behave("model-b", fail_always=500)
    client.chat.completions.create(model="smart", messages=MESSAGES)  # served by steady
    upstream.behave("model-a", fail_always=500)
    with pytest.raises(Exception):  # noqa: B017 - the upstream's 500 becomes a 502
        client.chat.completions.create(model="steady", messages=MESSAGES)
    upstream.reset()


def _generated(rng: random.Random, now: datetime, count: int) -> list[Any]:
    """Calls over the last forty days (a tenth of them today), every outcome."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    records = []
    for _ in range(count):
        if rng.random() < 0.1:
            created = midnight + (now - midnight) * rng.random()
        else:
            created = now - timedelta(seconds=rng.uniform(0, 40 * 86400))
        operation = rng.choice(("chat", "stream", "tools"))
        success = rng.random() > 0.15
        cache_hit = success and rng.random() < 0.08
        fallback = 1 if rng.random() < 0.1 else 0
        answered = success or rng.random() < 0.2
        provider, model = rng.choice(SERVED)
        latency = rng.lognormvariate(5.5, 1.0)
        # As the pipeline measures: a whole answer's first token comes with its last.
        ttft = (
            (latency * rng.uniform(0.1, 0.9) if operation == "stream" else latency)
            if success
            else None
        )
        records.append(
            make_record(
                created_at=created,
                api_key_id=rng.choice(KEYS),
                configuration=rng.choice(CONFIGURATIONS),
                operation=operation,
                provider=None if cache_hit else rng.choice(("p-a", "p-b")),
                model=model,
                served_provider=provider if answered else None,
                served_model=model if answered else None,
                success=success,
                http_status=200 if success else 502,
                error_class=None if success else rng.choice(ERRORS),
                cache_hit=cache_hit,
                fallback_attempts=fallback,
                latency_ms=latency,
                time_to_first_token_ms=ttft,
                actual_input_tokens=rng.randint(1, 4000) if answered else None,
                actual_output_tokens=rng.randint(0, 800) if answered else None,
                actual_cost=Decimal(rng.randint(1, 10**7)) / Decimal(10**10)
                if answered and rng.random() > 0.1
                else None,
                routing_policy_mode=rng.choice(("", "economy")),
            )
        )
    return records


def _money(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _from_rows(rows: list[dict[str, Any]], first: date, today: date) -> dict[str, Any]:
    """The Overview's figures, computed from the rows alone."""
    mine = [r for r in rows if _day(r["created_at"]) >= first]
    answered = [r for r in mine if r["served_model"] is not None]
    history = [
        r
        for r in mine
        if r["success"] and not r["fallback_attempts"] and not r["cache_hit"] and r["served_model"]
    ]
    total = [r["latency_ms"] for r in history]
    ttft = [
        r["time_to_first_token_ms"]
        for r in history
        if r["operation"] == "stream" and r["time_to_first_token_ms"] is not None
    ]
    per_day: dict[date, Decimal] = {}
    for row in answered:
        day = _day(row["created_at"])
        per_day[day] = per_day.get(day, Decimal(0)) + _cost(row)
    tops = {}
    for name, column in (
        ("configurations", "configuration"),
        ("keys", "api_key_id"),
        ("models", "served_model"),
    ):
        sums: dict[str, list[Any]] = {}
        for row in answered:
            entry = sums.setdefault(row[column] or "", [0, Decimal(0)])
            entry[0] += 1
            entry[1] += _cost(row)
        ranked = sorted(sums.items(), key=lambda item: (-item[1][1], item[0]))[:10]
        tops[name] = [(n, calls, cost) for n, (calls, cost) in ranked]
    days = [first + timedelta(days=n) for n in range((today - first).days + 1)]
    return {
        "totals": {
            "calls": len(answered),
            "inputTokens": sum(r["actual_input_tokens"] or 0 for r in answered),
            "outputTokens": sum(r["actual_output_tokens"] or 0 for r in answered),
            "cost": sum((_cost(r) for r in answered), Decimal(0)),
        },
        "rates": {
            "calls": len(mine),
            "errors": sum(1 for r in mine if not r["success"]),
            "cacheHits": sum(1 for r in mine if r["cache_hit"]),
            "fallbacks": sum(1 for r in mine if r["fallback_attempts"] > 0),
            "streams": sum(1 for r in mine if r["operation"] == "stream"),
        },
        "exact": {"total": sorted(total), "ttft": sorted(ttft)},
        "latency": {
            "calls": len(total),
            "p50Ms": _histogram_percentile(total, 50),
            "p95Ms": _histogram_percentile(total, 95),
            "streams": len(ttft),
            "ttftP50Ms": _histogram_percentile(ttft, 50),
            "ttftP95Ms": _histogram_percentile(ttft, 95),
        },
        "costPerDay": [(d.isoformat(), per_day.get(d, Decimal(0))) for d in days],
        "top": tops,
    }


def _day(moment: datetime) -> date:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).date()


def _cost(row: dict[str, Any]) -> Decimal:
    value = row["actual_cost"]
    return Decimal(0) if value is None else Decimal(str(value))


def _histogram_percentile(values: list[float], percent: int) -> float | None:
    counts: dict[int, int] = {}
    for value in values:
        counts[bucket_of(value)] = counts.get(bucket_of(value), 0) + 1
    return percentile(counts, percent)


def _nearest_rank(ordered: list[float], percent: int) -> float:
    return ordered[max(1, -(-percent * len(ordered) // 100)) - 1]


def _same_money(dialect: str, shown: str, expected: Decimal) -> None:
    if dialect == "sqlite":  # NUMERIC is a double there (docs/telemetry.md)
        assert abs(Decimal(shown) - expected) < Decimal("1e-9"), (shown, expected)
    else:
        assert shown == _money(expected)


def _compare(dialect: str, shown: dict[str, Any], expected: dict[str, Any]) -> None:
    totals = shown["totals"]
    for name in ("calls", "inputTokens", "outputTokens"):
        assert totals[name] == expected["totals"][name], name
    _same_money(dialect, totals["cost"], expected["totals"]["cost"])
    assert shown["rates"] == expected["rates"]
    assert shown["latency"] == expected["latency"]
    # Histogram percentiles are within about 9 % of the exact nearest-rank ones.
    for name, kind, percent in (
        ("p50Ms", "total", 50),
        ("p95Ms", "total", 95),
        ("ttftP50Ms", "ttft", 50),
        ("ttftP95Ms", "ttft", 95),
    ):
        exact = _nearest_rank(expected["exact"][kind], percent)
        assert abs(shown["latency"][name] - exact) <= 0.091 * exact, (name, exact)
    assert [d["day"] for d in shown["costPerDay"]] == [d for d, _ in expected["costPerDay"]]
    for day, (_, cost) in zip(shown["costPerDay"], expected["costPerDay"], strict=True):
        _same_money(dialect, day["cost"], cost)
    for name, ranked in expected["top"].items():
        listed = shown["top"][name]
        assert [(t["name"], t["calls"]) for t in listed] == [(n, c) for n, c, _ in ranked], name
        for entry, (_, _, cost) in zip(listed, ranked, strict=True):
            _same_money(dialect, entry["cost"], cost)


def test_the_overview_from_the_rollup_equals_the_overview_from_the_rows(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    _through_the_server(gateway, upstream)
    served = gateway.rows(expect=7)
    assert any(r["fallback_attempts"] for r in served) and not all(r["success"] for r in served)
    for record in _generated(random.Random(7), datetime.now(UTC), 1200):
        gateway.runtime.writer.submit(record)
    rows = gateway.rows()
    dialect = gateway.runtime.engine.dialect.name
    client = signed_in(gateway)
    for chosen, days in RANGES.items():
        for _read in range(2):  # the second read takes the settled days from memory
            shown = client.get(f"/admin/api/overview?range={chosen}").json()
            first = date.fromisoformat(shown["since"])
            today = first + timedelta(days=days - 1)
            expected = _from_rows(rows, first, today)
            assert expected["rates"]["errors"] and expected["rates"]["cacheHits"]
            assert expected["latency"]["streams"] and expected["rates"]["fallbacks"]
            _compare(dialect, shown, expected)
    page = client.get("/admin/?range=30d").text
    assert "latency histogram" in page and "within about 9 %" in page
