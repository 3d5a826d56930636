"""Rate limits on a call's way through the pipeline (docs/operations.md, "Rate limits").

- Admission, before the cache and the budgets: the key's, team's and configuration's
  limits in one check; the tokens held are the budget hold's estimate (the prompt plus
  the largest output the call may take, on the dearest model it may end on).
- Each fallback the call reaches, against its own ``configurations[].rateLimit``, when it
  is about to be attempted (the primary's was counted at admission): a fallback at its
  limit is skipped like one with nothing eligible (``rate_limit_exceeded`` in the call's
  trail), so the next fallback is tried; it holds the tokens of its own model.
- Each model the call is about to be sent to, against its ``models[].rateLimit``: a model
  at its quota is not sent the call. In criteria mode the next candidate in rank order is
  tried and the model is refused with ``RATE_LIMITED`` in the call's decision (readout and
  row); a fixed configuration resolves to nothing, so its fallback is next.
- A call that attempted nothing because every step was refused so gets 429
  ``rate_limit_exceeded`` naming, of the limits met, the one that frees first (the
  first met on a tie), its ``Retry-After`` (``Attempts``); one that attempted something
  gets that attempt's error.
- The end of the call: held tokens become the call's real usage (a model's or a
  fallback's: what it used if it served, else 0), slots are freed.

Nothing here runs for a call no limit applies to: no clock read, no round trip.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from gateway.budgets.figures import actual_amounts, worst_case
from gateway.domain.errors import GatewayError
from gateway.domain.failures import ErrorClass
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import GatewayConfig
from gateway.inbound import InboundRequest
from gateway.limits import RateLimiter, Ticket
from gateway.limits.decisions import (
    NEVER,
    Scope,
    answer_headers,
    call_scopes,
    configuration_scope,
    model_scope,
    needs_tokens,
    refusal,
    wait_ms,
)
from gateway.pipeline.context import CallContext, Target, note_decision
from gateway.pipeline.resolve import Resolution
from gateway.routing.eligibility import Rejection, RejectionReason
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.estimate import prompt_tokens
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)
_FOREVER = 1 << 62  # a refusal that never frees, compared with one that does


class CallLimits:
    def __init__(self, limiter: RateLimiter, counter: TokenCounter, config: GatewayConfig) -> None:
        self._limiter = limiter
        self._counter = counter
        self._config = config

    @staticmethod
    def scopes(ctx: CallContext, configuration: Configuration) -> tuple[Scope, ...]:
        """The call's key, team and configuration limits (most calls: none, no await)."""
        return call_scopes(ctx.key, configuration)

    async def admit(
        self,
        ctx: CallContext,
        scopes: tuple[Scope, ...],
        models: Callable[[], Sequence[Model]],
    ) -> None:
        """Count the call against ``scopes`` (its key's, team's and configuration's
        limits), or raise RateLimitExceeded (429) naming the one it would pass."""
        need = 0
        if needs_tokens(scopes):
            need = await self._need(ctx.request, models())
        verdict, ticket = await self._limiter.admit(scopes, need)
        ctx.limit_readings = list(zip(scopes, verdict.readings, strict=True))
        if ticket is None:
            assert verdict.refused is not None and verdict.measure is not None
            refused = refusal(
                scopes[verdict.refused], verdict.measure, verdict.readings[verdict.refused], need
            )
            log.warning("rate limit refused call %s: %s", ctx.request_id, refused.message)
            raise refused
        if ticket.settles:
            ctx.limit_tickets.append((ticket, None))

    async def admit_step(
        self, ctx: CallContext, resolution: Resolution, primary: bool
    ) -> Resolution:
        """A step about to be attempted: a fallback against its own configuration limit
        (none left to attempt when it is at it), then its model against its quota."""
        target = resolution.target
        if primary or target is None:
            return await self.admit_model(ctx, resolution, primary)
        scope = configuration_scope(resolution.configuration)
        if scope is not None and not await self._admit_scope(ctx, scope, target.model):
            return Resolution(resolution.configuration, None, None, ErrorClass.RATE_LIMIT_EXCEEDED)
        return await self.admit_model(ctx, resolution, primary)

    async def admit_model(
        self, ctx: CallContext, resolution: Resolution, primary: bool
    ) -> Resolution:
        """The resolution with a target whose model is under its quota (counted there), or
        none; the unchanged resolution when no model limit is in the way."""
        target = resolution.target
        if target is None or target.model.rate_limit is None:
            return resolution
        decision = resolution.decision
        if decision is None:  # fixed: the one model, else the fallback
            if await self._admit_model(ctx, target.model):
                return resolution
            return Resolution(resolution.configuration, None, None, ErrorClass.RATE_LIMIT_EXCEEDED)
        order = [target.model]
        order.extend(c.model for c in decision.candidates if c.model.id != target.model.id)
        limited: list[Model] = []
        chosen: Model | None = None
        for model in order:
            if await self._admit_model(ctx, model):
                chosen = model
                break
            limited.append(model)
        if not limited:
            return resolution
        gone = {model.id for model in limited}
        changed = replace(
            decision,
            selected=chosen,
            candidates=tuple(c for c in decision.candidates if c.model.id not in gone),
            rejected=decision.rejected
            + tuple(Rejection(m, m.provider, RejectionReason.RATE_LIMITED) for m in limited),
        )
        if primary:
            note_decision(ctx.record, changed)
        configuration = resolution.configuration
        if chosen is None:
            return Resolution(configuration, None, changed, ErrorClass.RATE_LIMIT_EXCEEDED)
        provider = self._config.provider_of(chosen)
        return Resolution(configuration, Target(configuration, chosen, provider, changed), changed)

    async def _admit_model(self, ctx: CallContext, model: Model) -> bool:
        scope = model_scope(model)
        return scope is None or await self._admit_scope(ctx, scope, model)

    async def _admit_scope(self, ctx: CallContext, scope: Scope, model: Model) -> bool:
        """Count the call in one step's ``scope`` (a model's quota, a fallback's own limit),
        holding its tokens on ``model``; False, the refusal kept, when it is at its limit."""
        need = await self._need(ctx.request, [model]) if needs_tokens([scope]) else 0
        verdict, ticket = await self._limiter.admit([scope], need)
        reading = verdict.readings[0]
        if ticket is None:
            assert verdict.measure is not None
            refused = refusal(scope, verdict.measure, reading, need)
            log.info(
                "call %s: %s not sent the call: %s", ctx.request_id, scope.name, refused.message
            )
            wait = wait_ms(verdict.measure, reading)
            wait = _FOREVER if wait == NEVER else wait
            if ctx.step_refusal is None or wait < ctx.step_refusal_wait_ms:
                ctx.step_refusal, ctx.step_refusal_wait_ms = refused, wait
                ctx.step_refusal_reading = (scope, reading) if scope.kind != "model" else None
            return False
        if scope.kind != "model":  # a model's quota is ours: never in the headers
            ctx.limit_readings.append((scope, reading))
        if ticket.settles:
            ctx.limit_tickets.append((ticket, scope))
        return True

    async def _need(self, request: InboundRequest, models: Sequence[Model]) -> int:
        """The budget hold's token estimate: the largest over the models the call may end on."""
        candidates: Sequence[Model | None] = models or [None]
        need = 0
        for model in candidates:
            prompt = await prompt_tokens(self._counter, request, model.name if model else "")
            need = max(need, worst_case(request, model, prompt.tokens).tokens)
        return need

    def settle_local(self, ctx: CallContext) -> None:
        """Settle at once, without yielding to the loop, what this process counted itself
        (no round trip to wait for); what Redis counted is left to ``settle``."""
        release = self._limiter.release
        kept: list[tuple[Ticket, Scope | None]] = []
        for ticket, step in ctx.limit_tickets:
            if ticket.local:
                release(ticket, _used(ctx.record, step))
            else:
                kept.append((ticket, step))
        ctx.limit_tickets = kept

    async def settle(self, ctx: CallContext) -> None:
        tickets, ctx.limit_tickets = ctx.limit_tickets, []
        record = ctx.record
        for ticket, step in tickets:
            try:
                await self._limiter.settle(ticket, _used(record, step))
            except Exception as error:  # never lose the row's settle of budgets for it
                log.error("rate limit settlement failed: %s", type(error).__name__)


def limit_headers(ctx: CallContext, refused: GatewayError | None) -> dict[str, str]:
    """The answer's x-ratelimit-* headers: of the scopes the call was counted in and, when
    the answer is a fallback's own limit refusing it, of that limit."""
    pairs = ctx.limit_readings
    kept = ctx.step_refusal_reading
    if kept is not None and refused is not None and refused is ctx.step_refusal:
        pairs = [*pairs, kept]
    if not pairs:
        return {}
    return answer_headers([scope for scope, _ in pairs], [reading for _, reading in pairs])


def _used(record: TelemetryRecord, step: Scope | None) -> int:
    """What the call used of a scope's tokens: all of it for the call's own scopes; for a
    step's (a model's, a fallback's), all of it if that step served, else nothing."""
    if step is not None:
        served = record.served_model if step.kind == "model" else record.served_configuration
        if served != step.id:
            return 0
    return actual_amounts(record).tokens
