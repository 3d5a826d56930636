"""The worst case a call holds, what it finally used, and the 429 it gets when refused."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec

from gateway.budgets.figures import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    MAX_HELD_COST,
    NOTHING,
    Amounts,
    actual_amounts,
    refusal,
    worst_case,
)
from gateway.budgets.windows import budget_lines
from gateway.domain.model import (
    BudgetLimits,
    BudgetSpec,
    Configuration,
    ConfigurationMode,
    Endpoint,
    Model,
    Price,
)
from gateway.domain.settings import ApiKey
from gateway.inbound import InboundRequest, parse_inbound
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tokens import CharEstimateCounter

COUNTER = CharEstimateCounter()
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
PRICED = Model(
    id="small",
    provider="fake",
    name="small-model",
    max_output_tokens=1000,
    price=Price(input=Decimal("1.00"), output=Decimal("2.00")),
)


def _request(endpoint: Endpoint = Endpoint.CHAT, **body: Any) -> InboundRequest:
    payload: dict[str, Any] = {"model": "chat"}
    if endpoint is Endpoint.CHAT:
        payload["messages"] = [{"role": "user", "content": "x" * 40}]
    elif endpoint is Endpoint.EMBEDDINGS:
        payload["input"] = "y" * 40
    payload.update(body)
    return parse_inbound(endpoint, msgspec.json.encode(payload))


def _prompt_only(request: InboundRequest) -> int:
    return count_request_tokens(COUNTER, request.body, Endpoint.CHAT, "small-model")


def test_worst_case_is_prompt_plus_the_requests_max_tokens_priced() -> None:
    request = _request(max_tokens=100)
    prompt = _prompt_only(request)
    held = worst_case(request, PRICED, prompt)
    assert held.requests == 1
    assert held.tokens == prompt + 100
    assert held.cost == (Decimal(prompt) * 1 + 100 * 2) / Decimal(1_000_000)


def test_max_completion_tokens_takes_precedence_over_max_tokens() -> None:
    request = _request(max_tokens=100, max_completion_tokens=30)
    assert worst_case(request, PRICED, _prompt_only(request)).tokens == _prompt_only(request) + 30


def test_without_max_tokens_the_models_max_output_bounds_the_hold() -> None:
    request = _request()
    assert worst_case(request, PRICED, _prompt_only(request)).tokens == _prompt_only(request) + 1000


def test_without_any_bound_a_default_output_is_held() -> None:
    request = _request()
    held = worst_case(request, None, _prompt_only(request))
    assert held.tokens == _prompt_only(request) + DEFAULT_MAX_OUTPUT_TOKENS
    assert held.cost == 0  # no model, no price: nothing to hold in money


def test_several_choices_hold_their_output_each() -> None:
    request = _request(max_tokens=50, n=3)
    assert worst_case(request, PRICED, _prompt_only(request)).tokens == _prompt_only(request) + 150


def test_embeddings_hold_no_output() -> None:
    request = _request(Endpoint.EMBEDDINGS)
    prompt = count_request_tokens(COUNTER, request.body, Endpoint.EMBEDDINGS, "small-model")
    assert worst_case(request, PRICED, prompt).tokens == prompt == 10  # 40 characters / 4


def test_unpriced_model_holds_no_cost() -> None:
    unpriced = Model(id="free", provider="p", name="free", max_output_tokens=10)
    assert worst_case(_request(), unpriced, 10).cost == 0


def _record(**fields: Any) -> TelemetryRecord:
    base: dict[str, Any] = {"success": True, "http_status": 200, "latency_ms": 1.0}
    return TelemetryRecord(
        created_at=NOW,
        request_id="c",
        operation="chat",
        configuration="chat",
        **{**base, **fields},
    )


def test_nothing_answered_releases_the_whole_hold() -> None:
    assert actual_amounts(_record(served_model=None, success=False)) is NOTHING


def test_reported_usage_is_what_the_call_used() -> None:
    record = _record(
        served_model="small",
        actual_input_tokens=10,
        actual_output_tokens=5,
        actual_cost=Decimal("0.00002"),
    )
    assert actual_amounts(record) == Amounts(1, 15, Decimal("0.00002"))


def test_unreported_usage_settles_at_the_estimate() -> None:
    record = _record(
        served_model="small",
        estimated_input_tokens=7,
        estimated_output_tokens=3,
        estimated_cost=Decimal("0.000013"),
    )
    assert actual_amounts(record) == Amounts(1, 10, Decimal("0.000013"))


def _line(**limits: Any) -> Any:
    key = ApiKey(id="alice", key_hash="0" * 64, budget=BudgetSpec(daily=BudgetLimits(**limits)))
    (line,) = budget_lines(key, Configuration(id="chat", mode=ConfigurationMode.FIXED), NOW)
    return line


def test_refusal_names_the_budget_its_limit_and_when_it_resets() -> None:
    line = _line(cost=Decimal("5.00"))
    error = refusal(line, Amounts(1, 10, Decimal("0.2")), Amounts(9, 90, Decimal("4.9")), NOW)
    assert error.status == 429 and error.code == "budget_exceeded"
    assert "key 'alice' daily cost budget of 5.00 USD" in error.message
    assert "resets at 2026-11-30T00:00:00Z" in error.message
    assert error.retry_after_seconds == 6 * 3600
    assert error.headers() == {"retry-after": str(6 * 3600)}


def test_refusal_names_the_measure_that_is_used_up() -> None:
    line = _line(requests=10, tokens=1000)
    error = refusal(line, Amounts(1, 100, Decimal(0)), Amounts(3, 950, Decimal(0)), NOW)
    assert "daily tokens budget of 1000 tokens" in error.message
    error = refusal(line, Amounts(1, 100, Decimal(0)), Amounts(10, 10, Decimal(0)), NOW)
    assert "daily requests budget of 10 requests" in error.message


def test_a_refusal_says_when_the_prompt_was_held_at_its_upper_bound() -> None:
    line = _line(tokens=1000)
    held, used = Amounts(1, 4000, Decimal(0)), Amounts(3, 950, Decimal(0))
    bounded = refusal(line, held, used, NOW, prompt_upper_bound=True)
    assert "too large to count exactly" in bounded.message
    assert "upper bound" in bounded.message
    assert "upper bound" not in refusal(line, held, used, NOW).message
    by_requests = refusal(
        _line(requests=1), held, Amounts(1, 0, Decimal(0)), NOW, prompt_upper_bound=True
    )
    assert "upper bound" not in by_requests.message  # the prompt's size is not what refused


def test_a_null_max_completion_tokens_leaves_max_tokens_bounding_the_hold() -> None:
    request = _request(max_completion_tokens=None, max_tokens=100_000)
    prompt = _prompt_only(request)
    assert worst_case(request, PRICED, prompt).tokens == prompt + 100_000


def test_best_of_on_completions_holds_every_generated_choice() -> None:
    request = _request(Endpoint.COMPLETIONS, prompt="p" * 40, max_tokens=50, n=2, best_of=5)
    prompt = count_request_tokens(COUNTER, request.body, Endpoint.COMPLETIONS, "small-model")
    assert worst_case(request, PRICED, prompt).tokens == prompt + 250


def test_a_worst_case_dearer_than_a_counter_holds_is_held_at_the_column_limit() -> None:
    dear = Model(
        id="dear",
        provider="p",
        name="dear",
        price=Price(input=Decimal("1000"), output=Decimal("1000")),
    )
    request = _request(max_tokens=2**31 - 1, n=128)
    assert worst_case(request, dear, _prompt_only(request)).cost == MAX_HELD_COST
