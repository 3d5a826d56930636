"""Price a finished call by the model that served it, and put the figures on the row.

Both write sites (whole responses and streams) come here, so a call is priced the
same way whichever path served it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gateway.domain.model import Model
from gateway.domain.usage import TokenCount, Usage, UsageSource
from gateway.inbound import InboundRequest
from gateway.pricing import cost
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.estimate import prompt_tokens, text_tokens
from gateway.usage.tokens import TokenCounter


def account_reported(record: TelemetryRecord, usage: Usage, model: Model) -> Decimal | None:
    """The upstream reported usage: actual tokens and cost on the row."""
    amount = cost(usage, model.price)
    record.actual_input_tokens = usage.input_tokens
    record.actual_output_tokens = usage.output_tokens
    record.actual_cost = amount
    record.usage_source = UsageSource.PROVIDER
    return amount


def account_estimated(
    record: TelemetryRecord, model: Model, prompt: TokenCount, output: TokenCount
) -> None:
    """No usage came back: tokens and cost stay NULL; the estimate goes to usage_daily."""
    record.estimated_input_tokens = prompt.tokens
    record.estimated_output_tokens = output.tokens
    record.estimated_cost = cost(Usage(prompt.tokens, output.tokens), model.price)
    record.usage_source = UsageSource.ESTIMATED


async def estimate_whole(
    record: TelemetryRecord,
    request: InboundRequest,
    model: Model,
    counter: TokenCounter,
    body: dict[str, Any],
) -> None:
    """A whole answer without usage: its prompt (memoised) and output estimated."""
    prompt = await prompt_tokens(counter, request, model.name)
    output = await text_tokens(counter, output_text_of(body), model.name)
    account_estimated(record, model, prompt, output)


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
    for item in body.get("output") or []:  # a /v1/responses answer
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("arguments"), str):
            parts.append(item["arguments"])
        for part in item.get("content") or []:
            if isinstance(part, dict):
                for key in ("text", "refusal"):
                    if isinstance(part.get(key), str):
                        parts.append(part[key])
    return "".join(parts)
