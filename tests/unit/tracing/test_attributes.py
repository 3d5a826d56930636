from datetime import UTC, datetime
from decimal import Decimal

from gateway.domain.failures import ErrorClass
from gateway.domain.usage import UsageSource
from gateway.telemetry.records import TelemetryRecord
from gateway.tracing.attributes import (
    answer_attributes,
    provider_name,
    record_attributes,
    request_attributes,
    span_name,
)


def _record(**changes: object) -> TelemetryRecord:
    record = TelemetryRecord(
        created_at=datetime(2026, 12, 4, tzinfo=UTC),
        request_id="r1",
        operation="chat",
        configuration="smart",
        success=True,
        http_status=200,
        latency_ms=12.0,
    )
    for name, value in changes.items():
        setattr(record, name, value)
    return record


def test_the_span_is_named_by_operation_and_configuration() -> None:
    assert span_name("chat/completions", "smart") == "chat smart"
    assert span_name("responses", "smart") == "chat smart"
    assert span_name("completions", "legacy") == "text_completion legacy"
    assert span_name("embeddings", "embed") == "embeddings embed"


def test_request_knobs_are_taken_only_when_numbers() -> None:
    body = {"max_completion_tokens": 64, "temperature": 0.2, "top_p": True, "stream": True}
    attributes = request_attributes("chat/completions", "smart", body)
    assert attributes["gen_ai.request.max_tokens"] == 64
    assert attributes["gen_ai.request.temperature"] == 0.2
    assert "gen_ai.request.top_p" not in attributes  # a bool is not a number here
    assert attributes["gen_ai.request.model"] == "smart"


def test_an_answer_gives_its_id_finish_reasons_and_reasoning_tokens() -> None:
    body = {
        "id": "chatcmpl-1",
        "choices": [{"finish_reason": "stop"}, {"finish_reason": "length"}, {"x": 1}],
        "usage": {"completion_tokens_details": {"reasoning_tokens": 30}},
    }
    assert answer_attributes(body) == {
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.response.finish_reasons": ["stop", "length"],
        "gen_ai.usage.reasoning_tokens": 30,
    }
    assert answer_attributes({"choices": "nonsense", "usage": None}) == {}


def test_the_row_gives_served_model_tokens_cost_and_never_a_key() -> None:
    record = _record(
        api_key_id="ci",
        adapter_type="anthropic",
        served_provider="claude",
        served_model="haiku",
        response_model="claude-haiku-2026",
        actual_input_tokens=100,
        actual_output_tokens=20,
        actual_cost=Decimal("0.000123456789"),
        usage_source=UsageSource.PROVIDER,
    )
    attributes = record_attributes(record)
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.response.model"] == "claude-haiku-2026"
    assert attributes["gateway.model"] == "haiku"
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        100,
        20,
    )
    assert attributes["gateway.cost_usd"] == 0.000123456789
    assert attributes["gateway.key_id"] == "ci"
    assert "error.type" not in attributes


def test_estimates_stand_in_and_a_budget_refusal_is_named() -> None:
    record = _record(
        success=False,
        http_status=429,
        error_class=ErrorClass.BUDGET_EXCEEDED,
        estimated_input_tokens=40,
        estimated_cost=Decimal("0.5"),
    )
    attributes = record_attributes(record)
    assert attributes["gen_ai.usage.input_tokens"] == 40
    assert attributes["gateway.cost_usd"] == 0.5
    assert attributes["error.type"] == "budget_exceeded"
    assert attributes["gateway.budget.outcome"] == "exceeded"


def test_provider_names_follow_the_conventions() -> None:
    assert provider_name("azure_openai") == "azure.ai.openai"
    assert provider_name("mistral") == "mistral_ai"
    assert provider_name("ollama") == "ollama"
