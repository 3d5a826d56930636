"""The pipeline: configuration → route → attempt with retries and fallback → price → record."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gateway.domain.errors import (
    BudgetExceeded,
    ConfigurationNotAllowed,
    GatewayError,
    ModelNotFound,
    UpstreamRejected,
)
from gateway.domain.failures import ErrorClass
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey, GatewayConfig
from gateway.domain.suggest import valid_hint
from gateway.hooks import (
    BudgetGate,
    CachedAnswer,
    NoBudgets,
    NoCache,
    Reservation,
    ResponseCache,
)
from gateway.inbound import InboundRequest
from gateway.limits import RateLimiter
from gateway.pipeline.answers import (
    PATHS,
    Answer,
    StreamAnswer,
    add_limit_headers,
    answer_cached,
    answer_whole,
    failed_answer,
    rejected_answer,
    served_headers,
    trace_header,
    unexpected_answer,
    unknown_answer,
)
from gateway.pipeline.attempts import Attempts, FallbackAdmission, StepAdmission
from gateway.pipeline.context import CallContext, note_decision, note_fixed
from gateway.pipeline.limits import CallLimits
from gateway.pipeline.measures import finish_measures
from gateway.pipeline.resolve import Resolution, Resolver
from gateway.pipeline.stream import StreamRelay
from gateway.pipeline.stream_open import OpenedStream, counting_tracker, open_checked
from gateway.telemetry.access import log_call
from gateway.telemetry.records import TelemetryRecord
from gateway.tracing import CallTracer, NoTracing
from gateway.upstream.base import Adapter, UpstreamCall, UpstreamReply
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)


class TelemetrySink(Protocol):
    def submit(self, record: TelemetryRecord) -> None: ...


class CallObserver(Protocol):
    def observe_call(
        self, operation: str, status: int, seconds: float, error_class: ErrorClass | None
    ) -> None: ...

    def observe_capability_warning(self, configuration: str) -> None: ...


@dataclass(slots=True)
class _Held:
    """The primary's budget hold, once taken: settled however the call ends."""

    reservation: Reservation | None = None


_T = TypeVar("_T", Answer, StreamAnswer)
_Serve = Callable[[CallContext, Configuration, _Held], Awaitable[_T]]


class Pipeline:
    def __init__(
        self,
        config: GatewayConfig,
        resolver: Resolver,
        attempts: Attempts,
        counter: TokenCounter,
        telemetry: TelemetrySink,
        observer: CallObserver,
        budgets: BudgetGate | None = None,
        cache: ResponseCache | None = None,
        tracer: CallTracer | None = None,
        limiter: RateLimiter | None = None,
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._attempts = attempts
        self._counter = counter
        self._telemetry = telemetry
        self._observer = observer
        self._budgets: BudgetGate = budgets or NoBudgets()
        self._cache: ResponseCache = cache or NoCache()
        self._tracer: CallTracer = tracer or NoTracing()
        self._limits = CallLimits(limiter, counter, config) if limiter is not None else None

    def context(
        self,
        request: InboundRequest,
        key: ApiKey | None,
        request_id: str,
        carrier: Mapping[str, str] | None = None,
    ) -> CallContext:
        """A call's state; ``carrier``: the client's trace headers (traceparent, tracestate)."""
        deadline = time.monotonic() + self._config.server.request_timeout_seconds
        ctx = CallContext(request, key, request_id, deadline)
        span = self._tracer.start_call(
            request.endpoint.value, request.configuration, request.body, carrier or {}
        )
        if span is not None:
            ctx.span = span
            ctx.record.trace_id = span.trace_id
        return ctx

    async def complete(self, ctx: CallContext) -> Answer:
        """A whole (non-stream) call."""
        return await self._call(ctx, self._whole)

    async def stream(self, ctx: CallContext) -> Answer | StreamAnswer:
        """A stream: falls back only until the first byte; then the relay owns the row.

        Streams are never cached.
        """
        return await self._call(ctx, self._streamed)

    async def _call(self, ctx: CallContext, serve: _Serve[_T]) -> _T | Answer:
        """What every call shares: the configuration (unknown: a 404 and no row), the key's
        permission, then ``serve``; any failure becomes an answer. The row is recorded
        and the budget holds settled when it ends, except for a stream that opened: its
        relay does that when the stream ends."""
        try:
            configuration = self._configuration(ctx)
        except GatewayError as error:
            return unknown_answer(ctx, error)
        held = _Held()
        refused: GatewayError | None = None
        try:
            self._permit(configuration, ctx.key)
            limits = self._limits
            if limits is not None:
                scopes = limits.scopes(ctx, configuration)
                if scopes:
                    await limits.admit(ctx, scopes, self._models_of(ctx, configuration))
            served = await serve(ctx, configuration, held)
        except UpstreamRejected as rejected:
            answer = rejected_answer(ctx, rejected)
        except GatewayError as error:
            refused = error
            answer = failed_answer(ctx, error)
        except Exception as exc:  # a bug of ours: still an envelope, a row and a settled hold
            answer = unexpected_answer(ctx, exc)
        except BaseException:  # cancelled: still recorded and settled
            await self.end(ctx, held.reservation)
            raise
        else:
            if isinstance(served, StreamAnswer):
                trace_header(ctx, served.headers)
                add_limit_headers(ctx, served.headers)
                return served
            answer = served
        await self.end(ctx, held.reservation)
        trace_header(ctx, answer.headers)
        add_limit_headers(ctx, answer.headers, refused)
        return answer

    async def refuse(self, ctx: CallContext, refused: GatewayError) -> Answer:
        """A body refused at ingress after it named its configuration: its row (a known
        configuration's, as for any call) and access line, nothing attempted."""
        try:
            self._configuration(ctx)
        except GatewayError:
            return unknown_answer(ctx, refused)  # nothing to attribute it to: no row
        ctx.record.error_class = ErrorClass.INVALID_REQUEST
        answer = failed_answer(ctx, refused)
        await self.end(ctx, None)
        trace_header(ctx, answer.headers)
        return answer

    async def _whole(self, ctx: CallContext, configuration: Configuration, held: _Held) -> Answer:
        key = ctx.key
        cacheable = configuration.cache is not None and not ctx.request.cache_bypass
        if cacheable:  # before any decision: a hit routes nothing
            hit = await self._cache.lookup(configuration, ctx.request, ctx.api_key_id)
            if hit is not None:
                # One request served: request budgets count it (and refuse past them).
                await self._budgets.count_hit(key, configuration)
                return answer_cached(ctx, configuration, hit)
        primary = self._primary(ctx, configuration)
        held.reservation = await self._reserve(configuration, ctx, primary)
        reply, target = await self._attempts.run(
            ctx, primary, _complete, self._fallback_admission(ctx), self._step_admission(ctx)
        )
        answer, plain = await answer_whole(ctx, reply, target, self._counter, keep_plain=cacheable)
        if plain is not None:
            kept = CachedAnswer(plain, ctx.record.response_model)
            await self._cache.store(configuration, ctx.request, ctx.api_key_id, kept)
        return answer

    async def _streamed(
        self, ctx: CallContext, configuration: Configuration, held: _Held
    ) -> StreamAnswer:
        primary = self._primary(ctx, configuration)
        held.reservation = reservation = await self._reserve(configuration, ctx, primary)
        opened, target = await self._attempts.run(
            ctx,
            primary,
            self._open_stream,
            self._fallback_admission(ctx),
            self._step_admission(ctx),
        )

        async def on_end(ended: CallContext) -> None:
            await self.end(ended, reservation)

        relay = StreamRelay(ctx, target, opened, self._counter, on_end)
        return StreamAnswer(served_headers(target, ctx.record), relay)

    async def _open_stream(self, adapter: Adapter, call: UpstreamCall) -> OpenedStream:
        """Open the stream and read its first block (see ``open_checked``), with a tracker
        that counts the text as it goes and a decoder capped at one event's size."""
        chunks = await adapter.open_stream(call, ask_usage=True)
        tracker = counting_tracker(self._counter, call.model.name, call.endpoint)
        return await open_checked(chunks, tracker, self._config.server.max_upstream_event_bytes)

    def _models_of(
        self, ctx: CallContext, configuration: Configuration
    ) -> Callable[[], list[Model]]:
        """The models a call to ``configuration`` may end on, resolved as the budget
        estimate does (never exploring): asked only when a tokens limit applies."""

        def models() -> list[Model]:
            request = ctx.request
            steps: list[Configuration | Resolution] = [configuration]
            steps.extend(self._resolver.fallbacks(configuration, request))
            found: list[Model] = []
            for step in steps:
                resolution = self._resolver.resolved(step, request)
                if resolution.target is not None:
                    found.append(resolution.target.model)
            return found

        return models

    def _step_admission(self, ctx: CallContext) -> StepAdmission | None:
        limits = self._limits
        if limits is None:
            return None

        async def admit(resolution: Resolution, primary: bool) -> Resolution:
            return await limits.admit_step(ctx, resolution, primary)

        return admit

    async def _reserve(
        self, configuration: Configuration, ctx: CallContext, primary: Resolution
    ) -> Reservation | None:
        def models() -> list[Model]:
            """Every model the call may end on: a hold covers the dearest of them."""
            found = [primary.target.model] if primary.target is not None else []
            for step in self._resolver.fallbacks(configuration, ctx.request):
                resolution = (
                    step
                    if isinstance(step, Resolution)
                    else self._resolver.resolve(step, ctx.request)
                )
                if resolution.target is not None:
                    found.append(resolution.target.model)
            return found

        try:
            return await self._budgets.reserve(ctx.key, configuration, ctx.request, models)
        except BudgetExceeded as refused:
            log.warning("budget refused call %s: %s", ctx.request_id, refused.message)
            raise

    def _fallback_admission(self, ctx: CallContext) -> FallbackAdmission:
        """A fallback reached with a budget of its own is held on it before it is tried."""

        async def admit(resolution: Resolution) -> None:
            models = [resolution.target.model] if resolution.target is not None else []
            held = await self._budgets.reserve(
                ctx.key, resolution.configuration, ctx.request, lambda: models, fallback=True
            )
            if held is not None:
                ctx.fallback_holds.append(held)
            self._warn_observed(ctx, resolution)  # admitted: it is attempted next

        return admit

    async def end(self, ctx: CallContext, reservation: Reservation | None) -> None:
        """Record the row, then settle the budget holds by the actual figures.

        The row goes first and synchronously, so nothing after it (a client hanging up
        mid-settle) can lose it; the settle is shielded from such a cancellation.
        """
        self._record(ctx)
        holds = [reservation] if reservation is not None else []
        holds.extend(ctx.fallback_holds)
        if ctx.limit_tickets and self._limits is not None:
            self._limits.settle_local(ctx)  # in process: at once, no task, no yield
        if holds or ctx.limit_tickets:
            await asyncio.shield(self._settle_all(holds, ctx))

    async def _settle_all(self, holds: list[Reservation], ctx: CallContext) -> None:
        """The budget holds, then the rate limits' tokens and slots."""
        for held in holds:
            await self._budgets.settle(held, ctx.record)
        if ctx.limit_tickets and self._limits is not None:
            await self._limits.settle(ctx)

    def _record(self, ctx: CallContext) -> None:
        record = ctx.record
        record.latency_ms = ctx.elapsed_ms()
        finish_measures(record, streamed=ctx.request.stream)
        self._observer.observe_call(
            record.operation, record.http_status, record.latency_ms / 1000.0, record.error_class
        )
        self._telemetry.submit(record)
        log_call(record, PATHS[ctx.request.endpoint])
        if ctx.span is not None:
            ctx.span.finish(record)

    def _configuration(self, ctx: CallContext) -> Configuration:
        """Unknown configurations get a 404 and no row (there is nothing to attribute).

        The message lists the closest ids this key may use, none it may not.
        """
        name = ctx.request.configuration
        configuration = self._config.configurations.get(name)
        if configuration is None:
            allowed = ctx.key.configurations if ctx.key is not None else None
            usable = [c for c in self._config.configurations if allowed is None or c in allowed]
            hint = valid_hint(name, usable, "model")
            raise ModelNotFound(f"The model '{name}' does not exist. {hint}", param="model")
        return configuration

    @staticmethod
    def _permit(configuration: Configuration, key: ApiKey | None) -> None:
        allowed = key.configurations if key is not None else None
        if allowed is not None and configuration.id not in allowed:
            raise ConfigurationNotAllowed(
                f"This key may not use the configuration '{configuration.id}'.", param="model"
            )

    def _primary(self, ctx: CallContext, configuration: Configuration) -> Resolution:
        primary = self._resolver.resolve(configuration, ctx.request, may_explore=True)
        if primary.decision is not None:
            note_decision(ctx.record, primary.decision)
            ctx.record.routing_explored = primary.explored
        elif configuration.model is not None:  # fixed mode: the model it names
            model = self._config.model(configuration.model)
            note_fixed(ctx.record, model, model.provider)
        self._warn_observed(ctx, primary)
        return primary

    def _warn_observed(self, ctx: CallContext, resolution: Resolution) -> None:
        """operationCapabilityEnforcement: observe: a configuration whose model lacks what
        the call needs is attempted anyway, with a warning line and the metric (the primary
        and each fallback attempted)."""
        if not resolution.warnings:
            return
        configuration = resolution.configuration.id
        self._observer.observe_capability_warning(configuration)
        log.warning(
            "call %s to %s sent anyway (observe): %s",
            ctx.request_id,
            configuration,
            "; ".join(resolution.warnings),
        )


async def _complete(adapter: Adapter, call: UpstreamCall) -> UpstreamReply:
    return await adapter.complete(call)
