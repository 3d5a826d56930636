"""What a call holds at admission, what it finally used, and how a refusal reads (pure).

Admission holds the worst case: one request, the prompt's tokens plus every
token the call may generate, and that priced by the model. Completion replaces
the hold by the actual figures; a call nothing answered releases it all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal

from gateway.budgets.windows import BudgetLine, iso_utc
from gateway.domain.errors import BudgetExceeded
from gateway.domain.model import Endpoint, Model
from gateway.domain.usage import Usage
from gateway.inbound import InboundRequest
from gateway.pricing import cost, format_usd
from gateway.telemetry.records import TelemetryRecord

# Output tokens held when neither the request nor the model bounds them.
DEFAULT_MAX_OUTPUT_TOKENS = 4096
# Money columns keep 10 places; a hold is rounded up to them so its release is exact.
COST_QUANTUM = Decimal("1e-10")
# The largest cost a Numeric(18, 10) column holds. A dearer worst case is held as this: no
# cost budget is that large, so it is refused the same way on every database.
MAX_HELD_COST = Decimal("99999999.9999999999")


@dataclass(frozen=True, slots=True)
class Amounts:
    requests: int
    tokens: int
    cost: Decimal

    def __add__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.requests + other.requests, self.tokens + other.tokens, self.cost + other.cost
        )

    def __sub__(self, other: Amounts) -> Amounts:
        return Amounts(
            self.requests - other.requests, self.tokens - other.tokens, self.cost - other.cost
        )

    def __neg__(self) -> Amounts:
        return Amounts(-self.requests, -self.tokens, -self.cost)

    @property
    def is_zero(self) -> bool:
        return not (self.requests or self.tokens or self.cost)


NOTHING = Amounts(0, 0, Decimal(0))
ONE_REQUEST = Amounts(1, 0, Decimal(0))


def money(value: Decimal | None) -> Decimal:
    if value is None:
        return Decimal(0)
    return value.quantize(COST_QUANTUM, rounding=ROUND_CEILING)


def max_output_tokens(request: InboundRequest, model: Model | None) -> int:
    """``max_completion_tokens``/``max_tokens``, else the model's bound, else a default; times
    the choices generated (``n``; ``best_of`` on completions, which are generated and billed)."""
    if request.endpoint is Endpoint.EMBEDDINGS:
        return 0
    bound = request.max_tokens
    if bound is None and model is not None:
        bound = model.max_output_tokens
    if bound is None:
        bound = DEFAULT_MAX_OUTPUT_TOKENS
    choices = request.count_of("n")
    if request.endpoint is Endpoint.COMPLETIONS:
        choices = max(choices, request.count_of("best_of"))
    return max(bound * max(choices, 1), 0)


def worst_case(request: InboundRequest, model: Model | None, prompt: int) -> Amounts:
    """The call's hold: the prompt's estimate plus the output bound, priced (0 when unpriced)."""
    output = max_output_tokens(request, model)
    price = model.price if model is not None else None
    held = min(money(cost(Usage(prompt, output), price)), MAX_HELD_COST)
    return Amounts(1, prompt + output, held)


def actual_amounts(record: TelemetryRecord) -> Amounts:
    """What the finished call used; nothing when nothing answered."""
    if record.served_model is None:
        return NOTHING
    if record.actual_input_tokens is not None:
        tokens = record.actual_input_tokens + (record.actual_output_tokens or 0)
    else:
        tokens = (record.estimated_input_tokens or 0) + (record.estimated_output_tokens or 0)
    spent = record.actual_cost if record.actual_cost is not None else record.estimated_cost
    return Amounts(1, tokens, money(spent))


def refusal(
    line: BudgetLine,
    held: Amounts,
    used: Amounts | None,
    now: datetime,
    *,
    prompt_upper_bound: bool = False,
) -> BudgetExceeded:
    """429 naming the budget, what is used, and when its window resets.

    ``prompt_upper_bound``: the hold's prompt tokens are an upper bound (the prompt was
    too large to count exactly), which the message says when tokens or cost refused."""
    resets = line.resets_at
    measure = _refusing_measure(line, held, used)
    limits = line.limits
    if measure == "cost":
        limit_text = f"{_usd(limits.cost or Decimal(0))} USD"
        detail = _detail(_usd(used.cost) if used else None, _usd(held.cost), "USD")
    elif measure == "tokens":
        limit_text = f"{limits.tokens} tokens"
        detail = _detail(str(used.tokens) if used else None, str(held.tokens), "tokens")
    else:
        limit_text = f"{limits.requests} requests"
        detail = f" ({used.requests} used or held)" if used is not None else ""
    if prompt_upper_bound and measure != "requests":
        detail += (
            "; the prompt was too large to count exactly, so its tokens are held at their "
            "upper bound, its size in bytes"
        )
    message = (
        f"Budget exceeded: {line.describe()} {measure} budget of {limit_text}{detail}; "
        f"it resets at {iso_utc(resets)}."
    )
    seconds = max(1, math.ceil((resets - now).total_seconds()))
    return BudgetExceeded(message, retry_after_seconds=seconds)


def _refusing_measure(line: BudgetLine, held: Amounts, used: Amounts | None) -> str:
    limits = line.limits
    checks = (
        ("requests", limits.requests, used.requests if used else None, held.requests),
        ("tokens", limits.tokens, used.tokens if used else None, held.tokens),
        ("cost", limits.cost, used.cost if used else None, held.cost),
    )
    limited = [check for check in checks if check[1]]
    for name, limit, spent, asked in limited:
        if spent is not None and limit is not None and spent + asked > limit:
            return name
    return limited[0][0] if limited else "requests"


def _detail(used: str | None, asked: str, unit: str) -> str:
    if used is None:
        return f" (this call may need up to {asked} {unit})"
    return f" ({used} used or held; this call may need up to {asked} {unit})"


def _usd(value: Decimal) -> str:
    """At least two decimals: ``5`` → ``5.00``, ``0.0001`` stays."""
    text = format_usd(value)
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"
