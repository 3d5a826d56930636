"""Run a suite's cases through the pipeline the proxy runs, grade the answers, sum them up.

A case is one whole chat completion handed to ``Pipeline.complete`` exactly as the HTTP
handler hands it one: routed, budgeted, priced and recorded in ``telemetry`` like any
call. Only the response cache is bypassed: an eval measures the model, not the cache.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

import msgspec

from gateway.domain.model import Endpoint
from gateway.domain.settings import ApiKey
from gateway.evals.graders import Grade
from gateway.evals.suite import EvalCase
from gateway.inbound import InboundRequest, parse_inbound
from gateway.pipeline.answers import Answer
from gateway.pipeline.context import CallContext

_ENCODER = msgspec.json.Encoder()


class CallPipeline(Protocol):
    def context(
        self, request: InboundRequest, key: ApiKey | None, request_id: str
    ) -> CallContext: ...

    async def complete(self, ctx: CallContext) -> Answer: ...


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    case: EvalCase
    provider: str | None  # who served; None when the call failed before any did
    model: str | None
    answer: str | None
    grade: Grade | None  # None when the call failed
    error: str | None = None  # the call's status and message when it failed
    cost: Decimal | None = None  # the call's price (USD), when it was priced

    @property
    def passed(self) -> bool:
        return self.grade is not None and self.grade.passed


@dataclass(frozen=True, slots=True)
class ModelScore:
    """One eval_results row: what one served model scored on the cases it answered."""

    provider: str
    model: str
    prompt_count: int
    passed_count: int
    cost: Decimal | None  # summed over its priced calls; None when none was priced

    @property
    def mean_score(self) -> float:
        return self.passed_count / self.prompt_count if self.prompt_count else 0.0


async def run_cases(
    pipeline: CallPipeline,
    configuration: str,
    cases: Sequence[EvalCase],
    *,
    concurrency: int = 4,
    key: ApiKey | None = None,
    on_done: Callable[[CaseOutcome], None] = lambda _: None,
) -> list[CaseOutcome]:
    """Every case through ``configuration``, at most ``concurrency`` at once; the outcomes
    in the suite's order, whatever order the calls ended in."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: EvalCase) -> CaseOutcome:
        async with gate:
            outcome = await run_case(pipeline, configuration, case, key)
        on_done(outcome)
        return outcome

    return list(await asyncio.gather(*(one(case) for case in cases)))


async def run_case(
    pipeline: CallPipeline, configuration: str, case: EvalCase, key: ApiKey | None = None
) -> CaseOutcome:
    raw = _ENCODER.encode(case.body(configuration))
    request = parse_inbound(Endpoint.CHAT, raw)
    request.cache_bypass = True
    ctx = pipeline.context(request, key, f"eval-{uuid.uuid4().hex}")
    answer = await pipeline.complete(ctx)
    provider = answer.headers.get("x-gateway-provider")
    model = answer.headers.get("x-gateway-model")
    cost = _cost(answer.headers.get("x-gateway-cost-usd"))
    if answer.status != 200:
        return CaseOutcome(case, None, None, None, None, _failure(answer), cost)
    text = answer_text(answer.body)
    if text is None:
        failure = "the answer has no message content"
        return CaseOutcome(case, provider, model, None, None, failure, cost)
    return CaseOutcome(case, provider, model, text, case.grader.grade(text), None, cost)


def answer_text(body: bytes) -> str | None:
    """``choices[0].message.content`` of a chat completion, when it is text."""
    try:
        data: Any = msgspec.json.decode(body)
        content = data["choices"][0]["message"]["content"]
    except (msgspec.DecodeError, KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def summarize(outcomes: Sequence[CaseOutcome]) -> list[ModelScore]:
    """One score per model that served, over the cases it answered, in order of first answer.

    A fixed configuration (or ``--model``) is one model; a criteria configuration may spread
    the cases over several, and each is credited with its own.
    """
    served: dict[tuple[str, str], list[CaseOutcome]] = {}
    for outcome in outcomes:
        if outcome.grade is None or outcome.provider is None or outcome.model is None:
            continue
        served.setdefault((outcome.provider, outcome.model), []).append(outcome)
    scores = []
    for (provider, model), answered in served.items():
        costs = [o.cost for o in answered if o.cost is not None]
        total = sum(costs, Decimal(0)) if costs else None
        passed = sum(o.passed for o in answered)
        scores.append(ModelScore(provider, model, len(answered), passed, total))
    return scores


def _cost(header: str | None) -> Decimal | None:
    if header is None:
        return None
    try:
        return Decimal(header)
    except InvalidOperation:
        return None


def _failure(answer: Answer) -> str:
    message = ""
    try:
        data: Any = msgspec.json.decode(answer.body)
        message = str(data["error"]["message"])
    except (msgspec.DecodeError, KeyError, TypeError):
        pass
    return f"HTTP {answer.status}" + (f": {message}" if message else "")
