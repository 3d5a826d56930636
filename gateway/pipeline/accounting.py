"""Price a finished call by the model that served it, and put the figures on the row.

Both write sites (whole responses and streams) come here, so a call is priced the
same way whichever path served it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gateway.domain.model import Model
from gateway.domain.usage import Usage
from gateway.inbound import Endpoint, InboundRequest
from gateway.pricing import cost
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import TokenCounter, count_request_tokens

_KIND = {
    Endpoint.CHAT: "chat",
    Endpoint.EMBEDDINGS: "embedding",
    Endpoint.COMPLETIONS: "completion",
}


def account_reported(record: TelemetryRecord, usage: Usage, model: Model) -> Decimal | None:
    """The upstream reported usage: actual tokens and cost on the row."""
    amount = cost(usage, model.price)
    record.actual_input_tokens = usage.input_tokens
    record.actual_output_tokens = usage.output_tokens
    record.actual_cost = amount
    record.usage_source = "provider"
    return amount


def account_estimated(
    record: TelemetryRecord,
    request: InboundRequest,
    model: Model,
    counter: TokenCounter,
    output_text: str,
) -> None:
    """No usage came back: tokens and cost stay NULL; the estimate goes to usage_daily."""
    estimated_in = count_request_tokens(counter, request.body, _KIND[request.endpoint], model.name)
    estimated_out = counter.count_text(output_text, model.name) if output_text else 0
    record.estimated_input_tokens = estimated_in
    record.estimated_output_tokens = estimated_out
    record.estimated_cost = cost(Usage(estimated_in, estimated_out), model.price)
    record.usage_source = "estimated"


def output_text_of(body: dict[str, Any]) -> str:
    """The generated text of a whole answer, for an estimate when no usage was reported."""
    parts: list[str] = []
    for choice in body.get("choices") or []:
        if not isinstance(choice, dict):
            continue
        text = choice.get("text")
        if isinstance(text, str):
            parts.append(text)
        message = choice.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    parts.append(function["arguments"])
    return "".join(parts)
