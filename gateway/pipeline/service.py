"""The pipeline: configuration → route → attempt with retries and fallback → price → record."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import msgspec

from gateway.domain.errors import (
    BudgetExceeded,
    ConfigurationNotAllowed,
    GatewayError,
    InternalError,
    ModelNotFound,
    UpstreamRejected,
    as_gateway_error,
)
from gateway.domain.failures import ErrorClass
from gateway.domain.model import Configuration, Endpoint, Model
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
from gateway.pipeline.accounting import (
    HIT_COST_USD,
    account_reported,
    believable,
    costless,
    estimate_whole,
    log_invalid_usage,
)
from gateway.pipeline.attempts import Attempts, FallbackAdmission, StepAdmission
from gateway.pipeline.context import CallContext, Target, note_decision, note_fixed, trail_of
from gateway.pipeline.limits import CallLimits, limit_headers
from gateway.pipeline.measures import finish_measures, upstream_model
from gateway.pipeline.resolve import Resolution, Resolver
from gateway.pipeline.stream import StreamRelay
from gateway.pipeline.stream_open import OpenedStream, counting_tracker, open_checked
from gateway.pricing import format_usd
from gateway.telemetry.access import log_call, log_refused
from gateway.telemetry.records import TelemetryRecord
from gateway.tracing import TRACE_HEADER, CallTracer, NoTracing
from gateway.upstream.base import Adapter, UpstreamCall, UpstreamReply
from gateway.upstream.redaction import redact_key_bytes, redact_optional
from gateway.usage.tokens import TokenCounter

_ENCODER = msgspec.json.Encoder()
log = logging.getLogger(__name__)
_PATHS = {endpoint: endpoint.path for endpoint in Endpoint}


class TelemetrySink(Protocol):
    def submit(self, record: TelemetryRecord) -> None: ...


class CallObserver(Protocol):
    def observe_call(
        self, operation: str, status: int, seconds: float, error_class: ErrorClass | None
    ) -> None: ...

    def observe_capability_warning(self, configuration: str) -> None: ...


@dataclass(slots=True)
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


def error_answer(error: GatewayError, headers: dict[str, str] | None = None) -> Answer:
    """The one encoding of an error answer: its envelope, its status, its own headers."""
    merged = {**(headers or {}), **error.headers()}
    return Answer(error.http_status, _ENCODER.encode(error.envelope()), merged)


@dataclass(slots=True)
class StreamAnswer:
    headers: dict[str, str]
    relay: StreamRelay


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
            return self._unknown(ctx, error)
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
            answer = self._rejected(ctx, rejected)
        except GatewayError as error:
            refused = error
            answer = self._error(ctx, error)
        except Exception as exc:  # a bug of ours: still an envelope, a row and a settled hold
            answer = self._unexpected(ctx, exc)
        except BaseException:  # cancelled: still recorded and settled
            await self.end(ctx, held.reservation)
            raise
        else:
            if isinstance(served, StreamAnswer):
                _trace_header(ctx, served.headers)
                _limit_headers(ctx, served.headers)
                return served
            answer = served
        await self.end(ctx, held.reservation)
        _trace_header(ctx, answer.headers)
        _limit_headers(ctx, answer.headers, refused)
        return answer

    async def refuse(self, ctx: CallContext, refused: GatewayError) -> Answer:
        """A body refused at ingress after it named its configuration: its row (a known
        configuration's, as for any call) and access line, nothing attempted."""
        try:
            self._configuration(ctx)
        except GatewayError:
            return self._unknown(ctx, refused)  # nothing to attribute it to: no row
        ctx.record.error_class = ErrorClass.INVALID_REQUEST
        answer = self._error(ctx, refused)
        await self.end(ctx, None)
        _trace_header(ctx, answer.headers)
        return answer

    async def _whole(self, ctx: CallContext, configuration: Configuration, held: _Held) -> Answer:
        key = ctx.key
        cacheable = configuration.cache is not None and not ctx.request.cache_bypass
        if cacheable:  # before any decision: a hit routes nothing
            hit = await self._cache.lookup(configuration, ctx.request, ctx.api_key_id)
            if hit is not None:
                # One request served: request budgets count it (and refuse past them).
                await self._budgets.count_hit(key, configuration)
                return self._answer_cached(ctx, configuration, hit)
        primary = self._primary(ctx, configuration)
        held.reservation = await self._reserve(configuration, ctx, primary)
        reply, target = await self._attempts.run(
            ctx, primary, _complete, self._fallback_admission(ctx), self._step_admission(ctx)
        )
        answer, plain = await self._answer_whole(ctx, reply, target, keep_plain=cacheable)
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
        return StreamAnswer(_served_headers(target, ctx.record), relay)

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
        log_call(record, _PATHS[ctx.request.endpoint])
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

    async def _answer_whole(
        self, ctx: CallContext, reply: UpstreamReply, target: Target, *, keep_plain: bool
    ) -> tuple[Answer, bytes | None]:
        """The answer and, with ``keep_plain``, its body without ``usage.cost`` (what a cache
        keeps); only a cacheable call pays for that second encoding."""
        record = ctx.record
        record.success = True
        record.http_status = 200
        key = target.provider.api_key  # echoed anywhere in the answer, it is redacted
        record.response_model = redact_optional(reply.response_model, key)
        record.upstream_model = upstream_model(target.model.name, record.response_model)
        headers = _served_headers(target, record)
        body = reply.body
        if ctx.span is not None:
            ctx.span.note_answer(body)
        invalid = reply.usage is not None and not believable(reply.usage, ctx.request)
        if invalid:
            log_invalid_usage(ctx.request_id, target.model.id)
        if reply.usage is None or invalid:
            request = ctx.request
            await estimate_whole(
                record, request, target.model, self._counter, body, invalid=invalid
            )
            plain = redact_key_bytes(_ENCODER.encode(body), key)
            return Answer(200, plain, headers), plain if keep_plain else None
        amount = account_reported(record, reply.usage, target.model)
        if ctx.span is not None:
            ctx.span.note_cached_tokens(reply.usage.cache_read_tokens)
        usage = body.get("usage")
        if amount is None or not isinstance(usage, dict):
            plain = redact_key_bytes(_ENCODER.encode(body), key)
            return Answer(200, plain, headers), plain if keep_plain else None
        kept = redact_key_bytes(_ENCODER.encode(body), key) if keep_plain else None
        shown = format_usd(amount)
        usage["cost"] = msgspec.Raw(shown.encode("ascii"))  # usd_json_number, formatted once
        headers["x-gateway-cost-usd"] = shown
        return Answer(200, redact_key_bytes(_ENCODER.encode(body), key), headers), kept

    def _answer_cached(
        self, ctx: CallContext, configuration: Configuration, hit: CachedAnswer
    ) -> Answer:
        """Answered without the upstream: not billed (``cost`` 0 in body and header), never
        part of the call history."""
        record = ctx.record
        record.cache_hit = True
        record.success = True
        record.http_status = 200
        record.response_model = hit.response_model
        headers = {
            "x-gateway-configuration": configuration.id,
            "x-gateway-cache": "hit",
            "x-gateway-cost-usd": HIT_COST_USD,
        }
        return Answer(200, costless(hit.body), headers)

    def _rejected(self, ctx: CallContext, rejected: UpstreamRejected) -> Answer:
        error = rejected.error
        if error.status is None or not error.body:  # nothing an OpenAI client could read
            ctx.record.error_class = error.error_class
            return self._error(ctx, as_gateway_error(error))
        status = error.status
        ctx.record.http_status = status
        ctx.record.error_class = error.error_class
        return Answer(status, error.body, _failure_headers(ctx), error.content_type)

    def _unknown(self, ctx: CallContext, error: GatewayError) -> Answer:
        """An unknown configuration: an answer and an access line, no row."""
        answer = self._error(ctx, error)
        request = ctx.request
        path = _PATHS[request.endpoint]
        log_refused(path, answer.status, ctx.elapsed_ms(), ctx.request_id, request.configuration)
        return answer

    def _unexpected(self, ctx: CallContext, exc: Exception) -> Answer:
        """A bug of ours: logged with its traceback (the exception's text may quote the
        request, which the log may hold as the access line does), answered 500."""
        log.error(
            "call %s failed: internal error %s", ctx.request_id, type(exc).__name__, exc_info=exc
        )
        return self._error(ctx, InternalError())

    def _error(self, ctx: CallContext, error: GatewayError) -> Answer:
        status = error.http_status
        ctx.record.http_status = status
        if ctx.record.error_class is None and error.error_class is not None:
            ctx.record.error_class = error.error_class
        trail_of(ctx.record).error_message = error.message
        # An unknown configuration is the client's text: it goes in no header.
        known = not isinstance(error, ModelNotFound)
        return error_answer(error, _failure_headers(ctx) if known else None)


def _trace_header(ctx: CallContext, headers: dict[str, str]) -> None:
    if ctx.span is not None and ctx.span.trace_id is not None:
        headers[TRACE_HEADER] = ctx.span.trace_id


def _limit_headers(
    ctx: CallContext, headers: dict[str, str], refused: GatewayError | None = None
) -> None:
    """OpenAI's x-ratelimit-* headers, on every answer to a call a rate limit applies to
    (``refused``: the error the answer is, if any)."""
    if ctx.limit_readings or ctx.step_refusal_reading is not None:
        headers.update(limit_headers(ctx, refused))


IGNORED_HEADER = "x-gateway-ignored-params"


def _served_headers(target: Target, record: TelemetryRecord) -> dict[str, str]:
    """On an answer a target served: what served it, and the request fields its
    translation accepted without passing them on (the row's ``ignored_params``)."""
    headers = {
        "x-gateway-configuration": target.configuration.id,
        "x-gateway-provider": target.provider.id,
        "x-gateway-model": target.model.id,
    }
    if record.ignored_params:
        headers[IGNORED_HEADER] = record.ignored_params
    return headers


def _failure_headers(ctx: CallContext) -> dict[str, str]:
    """On an answer nothing served: the configuration, and what was attempted if anything."""
    record = ctx.record
    headers = {"x-gateway-configuration": ctx.request.configuration}
    if record.provider is not None and record.model is not None:
        headers["x-gateway-provider"] = record.provider
        headers["x-gateway-model"] = record.model
    return headers


async def _complete(adapter: Adapter, call: UpstreamCall) -> UpstreamReply:
    return await adapter.complete(call)
