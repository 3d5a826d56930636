"""Attempt the resolved target with retries, then the fallbacks, until one answers."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gateway.circuits import CircuitStates
from gateway.domain.errors import (
    BudgetExceeded,
    GatewayError,
    InternalError,
    NoEligibleModel,
    UpstreamError,
    UpstreamRejected,
    exhausted,
)
from gateway.domain.failures import ErrorClass, FailureKind
from gateway.domain.model import Configuration
from gateway.pipeline.context import (
    CallContext,
    Target,
    note_attempt,
    note_served,
    note_step,
)
from gateway.pipeline.resolve import Resolution, Resolver
from gateway.upstream.base import Adapter, UpstreamCall
from gateway.upstream.retry import retry_delay, why_not_retried

T = TypeVar("T")
log = logging.getLogger(__name__)
Dispatch = Callable[[Adapter, UpstreamCall], Awaitable[T]]
# provider id, seconds, the failure's kind (None: it answered)
UpstreamObserver = Callable[[str, float, FailureKind | None], None]
# Holds a fallback's own budget before it is tried; raises BudgetExceeded to skip it.
FallbackAdmission = Callable[[Resolution], Awaitable[None]]
# A step against its rate limits (a fallback's own configurations[].rateLimit, the model's
# models[].rateLimit): the resolution to attempt (another candidate, or none); the flag
# says it is the call's primary.
StepAdmission = Callable[[Resolution, bool], Awaitable[Resolution]]


class Attempts:
    def __init__(
        self,
        resolver: Resolver,
        breakers: CircuitStates,
        adapters: Callable[[Target], Adapter],
        observe: UpstreamObserver,
    ) -> None:
        self._resolver = resolver
        self._breakers = breakers
        self._adapters = adapters
        self._observe = observe

    async def run(
        self,
        ctx: CallContext,
        primary: Resolution,
        dispatch: Dispatch[T],
        admit_fallback: FallbackAdmission | None = None,
        admit_step: StepAdmission | None = None,
    ) -> tuple[T, Target]:
        """A fallback its budget refuses is not attempted; when nothing is attempted after
        it, that refusal is the answer."""
        failures: list[tuple[Resolution, UpstreamError | None]] = []
        fallbacks = self._resolver.fallbacks(primary.configuration, ctx.request)
        plan: list[Configuration | Resolution] = [primary, *fallbacks]
        refused: BudgetExceeded | None = None
        for index, step in enumerate(plan):
            resolution = self._resolver.resolved(step, ctx.request)
            if admit_step is not None and resolution.target is not None:
                resolution = await admit_step(resolution, index == 0)
            target = resolution.target
            cid = resolution.configuration.id
            if target is None:
                failures.append((resolution, None))
                note_step(ctx.record, cid, None, resolution.failure or "no_eligible_model")
                continue
            if index > 0 and admit_fallback is not None:
                try:
                    await admit_fallback(resolution)
                except BudgetExceeded as error:
                    refused = error
                    note_step(ctx.record, cid, target, "budget_refused")
                    continue
            refused = None
            if index > 0:  # fallback_attempts counts the sibling dispatches
                ctx.record.fallback_attempts += 1
            note_attempt(ctx.record, target)
            retries_before = ctx.record.provider_retries
            try:
                result = await self._with_retries(ctx, target, dispatch)
            except UpstreamError as error:
                retries = ctx.record.provider_retries - retries_before
                note_step(ctx.record, cid, target, error.kind, error.status, retries)
                if not error.retryable:
                    raise UpstreamRejected(error) from error
                failures.append((resolution, error))
                continue
            retries = ctx.record.provider_retries - retries_before
            note_step(ctx.record, cid, target, "served", None, retries)
            note_served(ctx.record, target)
            return result, target
        if refused is not None:
            raise refused
        raise _final_error(ctx, failures)

    async def _with_retries(self, ctx: CallContext, target: Target, dispatch: Dispatch[T]) -> T:
        provider = target.provider
        adapter = self._adapters(target)
        attempt = 0
        last: UpstreamError | None = None
        while True:
            if not self._breakers.try_acquire(provider.id, time.monotonic()):
                # Opened while this call waited (by another call or process), or another
                # call holds the half-open probe: the last real attempt decides, else the
                # fallbacks are next.
                if last is not None:
                    _not_retried(ctx, provider.id, last, "its circuit opened")
                    raise last
                raise UpstreamError(
                    FailureKind.CIRCUIT_OPEN,
                    f"circuit open for provider {provider.id}",
                    retryable=True,
                )
            remaining = ctx.remaining()
            if remaining <= 0:
                raise last or UpstreamError(FailureKind.TIMEOUT, "the call's deadline passed")
            if attempt > 0:  # counted when sent, not when scheduled
                ctx.record.provider_retries += 1
            headers = {**ctx.request.forward_headers, "x-request-id": ctx.request_id}
            span = None
            if ctx.span is not None:
                span = ctx.span.attempt(
                    provider.id,
                    provider.adapter.value,
                    provider.base_url,
                    target.model.name,
                    attempt,
                )
                if span is not None:
                    headers.update(span.headers() or {})
            call = UpstreamCall(
                provider=provider,
                model=target.model,
                endpoint=ctx.request.endpoint,
                body=ctx.request.body,
                stream=ctx.request.stream,
                remaining_seconds=remaining,
                headers=headers,
            )
            started = time.perf_counter()
            try:
                result = await dispatch(adapter, call)
            except UpstreamError as error:
                failure = error
            except asyncio.CancelledError:
                if span is not None:
                    span.end(None, "cancelled", "the call was cancelled")
                raise
            except Exception as exc:
                if span is not None:
                    span.end(None, "internal_error", "a fault of the gateway's own")
                # A fault of the gateway's own (a bug in a translation, say): the provider
                # was not at fault, so it is neither retried nor fallen back from, and its
                # health and circuit are untouched; the call ends as a 500 with its row.
                log.error(
                    "call %s: internal error while calling %s",
                    ctx.request_id,
                    provider.id,
                    exc_info=exc,
                )
                raise InternalError() from exc
            else:
                self._observe(provider.id, time.perf_counter() - started, None)
                self._breakers.record_success(provider.id)
                if span is not None:
                    span.end(200, None, None)
                ctx.record.ignored_params = ",".join(call.ignored) or None
                return result
            if failure.kind is FailureKind.UNTRANSLATABLE:
                # Refused by the gateway's own translation before anything was sent: the
                # provider did nothing, so its health and circuit are untouched (a trial
                # slot this call took is given back).
                self._breakers.release(provider.id)
                if span is not None:
                    span.end(failure.status, failure.kind, "refused by the translation")
                _not_retried(ctx, provider.id, failure, "the translation refused the request")
                raise failure
            self._observe(provider.id, time.perf_counter() - started, failure.kind)
            if not failure.retryable:
                self._breakers.record_success(provider.id)  # it answered: the fault is ours
                refusal = "the upstream refused the request itself"
                if span is not None:
                    span.end(failure.status, failure.kind, refusal)
                _not_retried(ctx, provider.id, failure, refusal)
                raise failure
            opened = self._failed(ctx, target, failure)
            last = failure
            reason = why_not_retried(failure, attempt, provider.max_retries)
            if reason is None and opened:
                reason = "its circuit opened"
            if reason is None:
                delay = retry_delay(attempt, failure.retry_after)
                if delay < ctx.remaining():
                    if span is not None:
                        span.end(failure.status, failure.kind, None)
                    attempt += 1
                    log.info(
                        "call %s: retrying %s in %.2f s after %s (retry %d of %d)",
                        ctx.request_id,
                        provider.id,
                        delay,
                        failure.kind,
                        attempt,
                        provider.max_retries,
                    )
                    await asyncio.sleep(delay)
                    continue
                reason = f"its {delay:.2f} s backoff would pass the call's deadline"
            if span is not None:
                span.end(failure.status, failure.kind, reason)
            _not_retried(ctx, provider.id, failure, reason)
            raise failure

    def _failed(self, ctx: CallContext, target: Target, failure: UpstreamError) -> bool:
        """A retryable upstream failure: counted by the circuit, one warning line each.
        True when it opened the provider's circuit."""
        provider = target.provider.id
        status = f" (HTTP {failure.status})" if failure.status is not None else ""
        log.warning(
            "upstream %s failed for model %s: %s%s, call %s",
            provider,
            target.model.id,
            failure.kind,
            status,
            ctx.request_id,
        )
        if not self._breakers.record_failure(provider, time.monotonic()):
            return False
        log.warning(
            "circuit opened for provider %s: its calls are refused for %g s",
            provider,
            self._breakers.cooldown_seconds,
        )
        return True


def _not_retried(ctx: CallContext, provider: str, failure: UpstreamError, reason: str) -> None:
    """Why the provider is not asked again: the fallbacks (if any) are next."""
    level = logging.INFO if failure.retryable else logging.DEBUG
    log.log(
        level,
        "call %s: %s not retried after %s: %s",
        ctx.request_id,
        provider,
        failure.kind,
        reason,
    )


def _final_error(
    ctx: CallContext, failures: list[tuple[Resolution, UpstreamError | None]]
) -> GatewayError:
    attempted = [
        (r, e) for r, e in failures if e is not None and e.kind != FailureKind.CIRCUIT_OPEN
    ]
    name = ctx.request.configuration
    limited = ctx.step_refusal
    quota = ErrorClass.RATE_LIMIT_EXCEEDED
    if not attempted and limited is not None and all(r.failure is quota for r, _ in failures):
        return limited  # every step at a rate limit (its models' or its own): 429, not 503
    if not attempted:
        ctx.record.error_class = _nothing_attempted_class(failures)
        return NoEligibleModel(
            _refusal_message(name, failures), caller_fault=_caller_fault(failures)
        )
    last = attempted[-1][1]
    assert last is not None
    ctx.record.error_class = last.error_class
    listing = "; ".join(
        f"{r.target.provider.id}/{r.target.model.id}: {e.kind}"
        for r, e in attempted
        if r.target is not None and e is not None
    )
    target = attempted[-1][0].target
    return exhausted(last, listing, target.provider.id if target is not None else "?")


def _nothing_attempted_class(
    failures: list[tuple[Resolution, UpstreamError | None]],
) -> ErrorClass:
    for resolution, error in failures:
        if error is not None or resolution.failure is ErrorClass.CIRCUIT_OPEN:
            return ErrorClass.CIRCUIT_OPEN
    return ErrorClass.NO_ELIGIBLE_MODEL


def _caller_fault(failures: list[tuple[Resolution, UpstreamError | None]]) -> bool:
    return bool(failures) and all(r.refused_for_capability for r, _ in failures)


def _refusal_message(name: str, failures: list[tuple[Resolution, UpstreamError | None]]) -> str:
    parts: list[str] = []
    for resolution, error in failures:
        cid = resolution.configuration.id
        if resolution.decision is not None:
            parts.append(f"{cid} [{resolution.decision.refusal_reasons()}]")
        elif resolution.missing:
            needed = ", ".join(sorted(resolution.missing))
            model = resolution.configuration.model
            parts.append(f"{cid} [{model}: OPERATION_CAPABILITY_MISSING, lacks {needed}]")
        else:
            parts.append(f"{cid} [{error.kind if error else resolution.failure}]")
    return f"No eligible model for configuration '{name}': " + "; ".join(parts)
