"""Price a finished call by the model that served it, and put the figures on the row.

Both write sites (whole responses and streams) come here, so a call is priced the
same way whichever path served it.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import msgspec

from gateway.domain.model import Endpoint, Model
from gateway.domain.usage import TokenCount, Usage, UsageSource
from gateway.inbound import InboundRequest
from gateway.pricing import cost
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.estimate import prompt_tokens, text_tokens
from gateway.usage.sanity import UPSTREAM_ALLOWANCE, input_bound, plausible
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)

HIT_COST_USD = "0"  # a cache hit's x-gateway-cost-usd: nothing went upstream, nothing is billed
_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()


def costless(body: bytes) -> bytes:
    """A cached answer's body as served on a hit: its ``usage`` (when it has one) gains
    ``cost: 0``, as a miss's gains its price, so ``usage.cost`` reads the same on both."""
    try:
        answer = _DECODER.decode(body)
    except msgspec.DecodeError:
        return body
    usage = answer.get("usage") if isinstance(answer, dict) else None
    if not isinstance(usage, dict):
        return body
    usage["cost"] = 0
    return _ENCODER.encode(answer)


def log_invalid_usage(request_id: str, model_id: str) -> None:
    log.warning(
        "call %s: model %s reported usage no call can reach; the estimate is recorded "
        "and charged instead (usage_source 'invalid')",
        request_id,
        model_id,
    )


def account_reported(record: TelemetryRecord, usage: Usage, model: Model) -> Decimal | None:
    """The upstream reported usage: actual tokens and cost on the row."""
    amount = cost(usage, model.price)
    record.actual_input_tokens = usage.input_tokens
    record.actual_output_tokens = usage.output_tokens
    record.actual_cost = amount
    if amount is not None:
        record.price_source = model.price_source
    record.usage_source = UsageSource.PROVIDER
    return amount


def believable(usage: Usage, request: InboundRequest) -> bool:
    """Whether the reported usage can be true of this request (usage/sanity.py)."""
    output = request.max_tokens
    if output is not None:
        choices = request.count_of("n")
        if request.endpoint is Endpoint.COMPLETIONS:
            choices = max(choices, request.count_of("best_of"))
        output *= max(choices, 1)
    bound: int | None = request.body_bytes
    if usage.input_tokens > request.body_bytes + UPSTREAM_ALLOWANCE:
        # Only a figure past the body's size asks whether the body names content the
        # upstream expands: the walk over every message's parts is spared otherwise.
        bound = input_bound(request.body, request.body_bytes)
    return plausible(usage, bound, output)


def account_estimated(
    record: TelemetryRecord,
    model: Model,
    prompt: TokenCount,
    output: TokenCount,
    *,
    invalid: bool = False,
) -> None:
    """No usage came back (or none to believe, ``invalid``): tokens and cost stay NULL; the
    estimate goes to usage_daily and the budgets."""
    record.estimated_input_tokens = prompt.tokens
    record.estimated_output_tokens = output.tokens
    record.estimated_cost = cost(Usage(prompt.tokens, output.tokens), model.price)
    if record.estimated_cost is not None:
        record.price_source = model.price_source
    record.usage_source = UsageSource.INVALID if invalid else UsageSource.ESTIMATED


async def estimate_whole(
    record: TelemetryRecord,
    request: InboundRequest,
    model: Model,
    counter: TokenCounter,
    body: dict[str, Any],
    *,
    invalid: bool = False,
) -> None:
    """A whole answer without usage: its prompt (memoised) and output estimated."""
    prompt = await prompt_tokens(counter, request, model.name)
    output = await text_tokens(counter, output_text_of(body), model.name)
    account_estimated(record, model, prompt, output, invalid=invalid)


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
    for block in body.get("content") or []:  # a /v1/messages answer
        if isinstance(block, dict):
            for key in ("text", "thinking"):
                if isinstance(block.get(key), str):
                    parts.append(block[key])
            if isinstance(block.get("input"), dict):
                parts.append(_ENCODER.encode(block["input"]).decode())
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
