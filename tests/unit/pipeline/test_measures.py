"""The measures a row gets when its call ends (gateway.pipeline.measures)."""

from __future__ import annotations

import pytest

from gateway.pipeline.measures import finish_measures, tokens_per_second, upstream_model
from tests.unit.telemetry.factory import make_record


def test_a_whole_answer_has_its_latency_as_time_to_first_token() -> None:
    record = make_record(latency_ms=812.5, actual_output_tokens=40)
    finish_measures(record, streamed=False)
    assert record.time_to_first_token_ms == 812.5
    assert record.output_tokens_per_second is None


def test_a_failed_whole_call_has_no_first_token() -> None:
    record = make_record(success=False, latency_ms=30.0)
    finish_measures(record, streamed=False)
    assert record.time_to_first_token_ms is None


def test_a_stream_rates_its_output_over_the_time_after_the_first_token() -> None:
    record = make_record(latency_ms=2300.0, time_to_first_token_ms=300.0, actual_output_tokens=50)
    finish_measures(record, streamed=True)
    assert record.time_to_first_token_ms == 300.0
    assert record.output_tokens_per_second == pytest.approx(25.0)


def test_an_estimated_output_counts_when_none_was_reported() -> None:
    record = make_record(
        latency_ms=1100.0,
        time_to_first_token_ms=100.0,
        actual_output_tokens=None,
        estimated_output_tokens=12,
    )
    finish_measures(record, streamed=True)
    assert record.output_tokens_per_second == pytest.approx(12.0)


@pytest.mark.parametrize(
    ("tokens", "latency", "first"),
    [(None, 100.0, 10.0), (0, 100.0, 10.0), (5, 100.0, None), (5, 100.0, 100.0)],
)
def test_no_rate_without_tokens_a_first_token_or_generation_time(
    tokens: int | None, latency: float, first: float | None
) -> None:
    assert tokens_per_second(tokens, latency, first) is None


def test_the_upstream_model_is_kept_only_when_it_differs() -> None:
    assert upstream_model("gpt-4o-mini", "gpt-4o-mini-2024-07-18") == "gpt-4o-mini-2024-07-18"
    assert upstream_model("gpt-4o-mini", "gpt-4o-mini") is None
    assert upstream_model("gpt-4o-mini", None) is None
