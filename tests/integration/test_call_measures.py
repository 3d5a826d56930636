"""What a row measures, through the real server with the openai SDK against the fake upstream:
time to first token and output tokens per second (docs/telemetry.md#telemetry), the model the
upstream says it ran (``upstream_model``), the hourly rollup, and the readouts that show them
(docs/routing.md#stream-latency, docs/routing.md#latency-statistic, docs/api.md#admin)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from gateway.db.rollup_tables import telemetry_hourly, telemetry_hourly_latency
from gateway.routing.readout import render_table
from tests.support.fake_upstream import FakeUpstream
from tests.support.routed import (
    EACH_ALONE,
    MESSAGES,
    TWO_MODELS,
    Start,
    admin_get,
    candidate,
    explain,
    routed_gateways,
)

CONFIGURATIONS = EACH_ALONE + "  - {id: routed, mode: criteria, criteria: {capabilities: [chat]}}"


@pytest.fixture
def start(upstream: FakeUpstream, sqlite_url: str) -> Iterator[Start]:
    settings = {"models": TWO_MODELS, "configurations": CONFIGURATIONS}
    with routed_gateways(upstream.url, sqlite_url, **settings) as starting:
        yield starting


def test_a_whole_answer_names_the_snapshot_that_ran_and_is_priced_by_the_configured_model(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(routing="{policyMode: balanced}")
    upstream.behave("model-a", prompt_tokens=1000, completion_tokens=500)
    answer = gateway.client().chat.completions.create(model="routed", messages=MESSAGES)
    assert answer.model == "model-a-2026-01-01"  # relayed as the upstream said it
    (row,) = gateway.rows(expect=1)
    # The fake answers as a dated snapshot of the model it was sent.
    assert (row["served_model"], row["upstream_model"]) == ("a", "model-a-2026-01-01")
    assert row["response_model"] == "model-a-2026-01-01"
    # Priced by the configured model a: 1000 * 0.15 + 500 * 0.60 per million tokens.
    assert row["actual_cost"] == Decimal("0.00045")
    assert row["time_to_first_token_ms"] == row["latency_ms"] > 0
    assert row["output_tokens_per_second"] is None

    response = admin_get(gateway, "/admin/routing/calls")
    assert response.status_code == 200
    (call,) = response.json()["calls"]
    assert call["upstreamModel"] == "model-a-2026-01-01"
    assert call["upstreamModelDiffers"] is True
    assert call["ttftMs"] == call["latencyMs"] == row["latency_ms"]


def test_a_stream_records_its_first_token_and_its_output_rate(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(routing="{policyMode: balanced}")
    upstream.behave(
        "model-b",
        stream_pieces=["one ", "two ", "three ", "four"],
        completion_tokens=40,
        chunk_delay_ms=40,
    )
    chunks = list(
        gateway.client().chat.completions.create(
            model="only-b", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "one two three four"
    )
    (row,) = gateway.rows(expect=1)
    ttft, latency = row["time_to_first_token_ms"], row["latency_ms"]
    assert 0 < ttft < latency
    assert latency - ttft >= 3 * 40 * 0.9  # three pauses between the four pieces
    assert row["actual_output_tokens"] == 40
    assert row["output_tokens_per_second"] == pytest.approx(40 * 1000 / (latency - ttft))
    assert row["upstream_model"] is None  # the stream named the model it was sent


def test_the_rollup_sums_what_the_server_wrote(start: Start, upstream: FakeUpstream) -> None:
    gateway = start(routing="{policyMode: balanced, callHistory: true}")
    upstream.behave("model-a", chunk_delay_ms=20, completion_tokens=30)
    client = gateway.client()
    for _ in range(3):
        client.chat.completions.create(model="only-a", messages=MESSAGES)
        list(client.chat.completions.create(model="only-a", messages=MESSAGES, stream=True))
    rows = gateway.rows(expect=6)
    hourly = gateway._select(
        select(
            func.sum(telemetry_hourly.c.calls).label("calls"),
            func.sum(telemetry_hourly.c.streams).label("streams"),
            func.sum(telemetry_hourly.c.history_calls).label("history"),
            func.sum(telemetry_hourly.c.latency_sum_ms).label("latency"),
        )
    )[0]
    assert (hourly["calls"], hourly["streams"], hourly["history"]) == (6, 3, 6)
    assert hourly["latency"] == pytest.approx(sum(r["latency_ms"] for r in rows))
    buckets = gateway._select(
        select(
            telemetry_hourly_latency.c.kind, func.sum(telemetry_hourly_latency.c.calls).label("n")
        )
        .group_by(telemetry_hourly_latency.c.kind)
        .order_by(telemetry_hourly_latency.c.kind)
    )
    assert [tuple(b.values()) for b in buckets] == [("total", 6), ("ttft", 6)]

    gateway.refresh_signals()
    stream = candidate(explain(gateway, "routed", "stream"), "a")["history"]
    streams = [r for r in rows if r["operation"] == "stream"]
    assert (stream["latencyMeasure"], stream["latencyStatistic"]) == ("ttft", "mean")
    assert stream["latencyMs"] == stream["ttftMs"]
    assert stream["ttftMs"] == pytest.approx(sum(r["time_to_first_token_ms"] for r in streams) / 3)
    assert stream["totalMs"] == pytest.approx(sum(r["latency_ms"] for r in streams) / 3)
    assert stream["totalMs"] > stream["ttftMs"]


def test_one_very_slow_call_does_not_move_the_p50_in_the_readout(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(routing="{policyMode: balanced, callHistory: true, callHistoryStatistic: p50}")
    upstream.behave("model-a", latency_ms=20)
    client = gateway.client()
    for _ in range(9):
        client.chat.completions.create(model="only-a", messages=MESSAGES)
    gateway.refresh_signals()
    before = candidate(explain(gateway, "routed", "chat"), "a")["history"]
    upstream.behave("model-a", latency_ms=1500)
    client.chat.completions.create(model="only-a", messages=MESSAGES)
    gateway.refresh_signals()
    after = candidate(explain(gateway, "routed", "chat"), "a")["history"]
    assert (before["calls"], after["calls"]) == (9, 10)
    assert after["latencyStatistic"] == "p50"
    assert after["latencyMs"] == before["latencyMs"] < 1000
    assert after["meanLatencyMs"] > before["meanLatencyMs"] + 100  # the mean moved
    table = render_table(explain(gateway, "routed", "chat"))
    assert "10 calls, p50 " in table
