"""The span attributes of a call, from its row and its request: pure, so tested alone.

GenAI semantic conventions (``gen_ai.*``) where they have a name, the gateway's own under
``gateway.*``. Never a key: the key's id only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.telemetry.records import TelemetryRecord

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = dict[str, AttributeValue]

# The conventions' gen_ai.operation.name per inbound endpoint (its path after /v1/).
_OPERATIONS = {
    "chat/completions": "chat",
    "responses": "chat",
    "messages": "chat",
    "completions": "text_completion",
    "embeddings": "embeddings",
}
# gen_ai.provider.name's well-known values, by adapter; any other adapter is its own name.
_PROVIDER_NAMES = {
    "openai": "openai",
    "azure_openai": "azure.ai.openai",
    "anthropic": "anthropic",
    "mistral": "mistral_ai",
    "groq": "groq",
    "gemini": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
}
_REQUEST_NUMBERS = (
    ("max_tokens", "gen_ai.request.max_tokens"),
    ("max_completion_tokens", "gen_ai.request.max_tokens"),
    ("max_output_tokens", "gen_ai.request.max_tokens"),
    ("temperature", "gen_ai.request.temperature"),
    ("top_p", "gen_ai.request.top_p"),
)
BRIEF_CANDIDATES = 5  # the decision's best candidates named on the span


def operation_name(endpoint: str) -> str:
    return _OPERATIONS.get(endpoint, "chat")


def span_name(endpoint: str, configuration: str) -> str:
    """``{gen_ai.operation.name} {gen_ai.request.model}``, as the conventions name it."""
    return f"{operation_name(endpoint)} {configuration}"


def provider_name(adapter: str) -> str:
    return _PROVIDER_NAMES.get(adapter, adapter)


def request_attributes(endpoint: str, configuration: str, body: Mapping[str, Any]) -> Attributes:
    """What is known when the call starts: the operation, the configuration, the knobs."""
    attributes: Attributes = {
        "gen_ai.operation.name": operation_name(endpoint),
        "gen_ai.request.model": configuration,
        "gateway.configuration": configuration,
    }
    for field, name in _REQUEST_NUMBERS:
        value = body.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            attributes[name] = value
    return attributes


def answer_attributes(body: Mapping[str, Any]) -> Attributes:
    """A whole answer's id, finish reasons and reasoning tokens (Chat Completions' shape)."""
    attributes: Attributes = {}
    answer_id = body.get("id")
    if isinstance(answer_id, str):
        attributes["gen_ai.response.id"] = answer_id
    choices = body.get("choices")
    if isinstance(choices, list):
        reasons = [
            choice["finish_reason"]
            for choice in choices
            if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
        ]
        if reasons:
            attributes["gen_ai.response.finish_reasons"] = reasons
    usage = body.get("usage")
    if isinstance(usage, dict):
        details = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
        if isinstance(details, dict):
            reasoning = details.get("reasoning_tokens")
            if isinstance(reasoning, int) and not isinstance(reasoning, bool):
                attributes["gen_ai.usage.reasoning_tokens"] = reasoning
    return attributes


def record_attributes(record: TelemetryRecord) -> Attributes:
    """The row's figures when the call ends: served model, tokens, cost, decision, outcome."""
    attributes: Attributes = {
        "gateway.request_id": record.request_id,
        "gateway.cache_hit": record.cache_hit,
        "gateway.fallback_depth": record.fallback_attempts,
        "gateway.provider_retries": record.provider_retries,
        "http.response.status_code": record.http_status,
        "gateway.usage_source": str(record.usage_source),
    }
    if record.api_key_id is not None:
        attributes["gateway.key_id"] = record.api_key_id
    team = getattr(record, "team_id", None)
    if isinstance(team, str):
        attributes["gateway.team"] = team
    if record.adapter_type is not None:
        attributes["gen_ai.provider.name"] = provider_name(record.adapter_type)
    if record.served_provider is not None:
        attributes["gateway.provider"] = record.served_provider
    served = record.upstream_model or record.response_model or record.served_model
    if served is not None:
        attributes["gen_ai.response.model"] = served
    if record.served_model is not None:
        attributes["gateway.model"] = record.served_model
    input_tokens = _first(record.actual_input_tokens, record.estimated_input_tokens)
    output_tokens = _first(record.actual_output_tokens, record.estimated_output_tokens)
    if input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = input_tokens
    if output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = output_tokens
    amount = record.actual_cost if record.actual_cost is not None else record.estimated_cost
    if amount is not None:
        attributes["gateway.cost_usd"] = float(amount)
    price_source = getattr(record, "price_source", None)
    if isinstance(price_source, str):
        attributes["gateway.price_source"] = price_source
    if record.time_to_first_token_ms is not None:
        attributes["gateway.time_to_first_token_ms"] = record.time_to_first_token_ms
    if record.error_class is not None:
        attributes["error.type"] = str(record.error_class)
        attributes["gateway.error_class"] = str(record.error_class)
    attributes.update(_budget_outcome(record))
    attributes.update(_decision_attributes(record))
    return attributes


def _budget_outcome(record: TelemetryRecord) -> Attributes:
    error = str(record.error_class) if record.error_class is not None else ""
    outcome: Attributes = {}
    if error.startswith("budget_"):
        outcome["gateway.budget.outcome"] = error.removeprefix("budget_")
    if error.startswith("rate_limit"):
        outcome["gateway.rate_limit.outcome"] = "refused"
    return outcome


def _decision_attributes(record: TelemetryRecord) -> Attributes:
    attributes: Attributes = {}
    if record.routing_policy_mode:
        attributes["gateway.routing.policy_mode"] = record.routing_policy_mode
        attributes["gateway.routing.candidate_count"] = record.routing_candidates
        attributes["gateway.routing.explored"] = record.routing_explored
    if record.routing_rejections:
        attributes["gateway.routing.rejections"] = record.routing_rejections
    trail = record.trail
    if trail is None:
        return attributes
    decision = trail.decision
    if decision is not None:
        attributes["gateway.routing.candidates"] = [
            f"{candidate.model.id}={candidate.score:.4f}"
            for candidate in decision.candidates[:BRIEF_CANDIDATES]
        ]
        if decision.decided_by is not None:
            attributes["gateway.routing.decided_by"] = decision.decided_by
    elif trail.fixed_model is not None:
        attributes["gateway.routing.policy_mode"] = "fixed"
    return attributes


def _first(*values: int | None) -> int | None:
    for value in values:
        if value is not None:
            return value
    return None
