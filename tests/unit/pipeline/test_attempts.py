"""Attempts: retries on one provider, then the fallbacks, then the answer when all failed.

A fake adapter plays a script of outcomes per provider; the resolver, the circuit breakers
and the call context are the real ones. Retry-After "0" keeps the backoff instant.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import pytest

from gateway.config.loader import load_config_text
from gateway.domain.errors import (
    GatewayError,
    InternalError,
    NoEligibleModel,
    RateLimited,
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamFailed,
    UpstreamRejected,
    UpstreamTimedOut,
)
from gateway.domain.failures import ErrorClass, FailureKind
from gateway.domain.model import Endpoint
from gateway.domain.settings import GatewayConfig
from gateway.inbound import parse_inbound
from gateway.pipeline.attempts import Attempts
from gateway.pipeline.context import CallContext, Target
from gateway.pipeline.resolve import Resolver
from gateway.routing.circuit import CircuitBreakers
from gateway.routing.snapshot import Snapshot
from gateway.upstream.base import Adapter, UpstreamCall

CONFIG = """
auth: {allowUnauthenticated: true}
providers:
  - {id: pa, adapter: openai, baseUrl: "http://127.0.0.1:1/v1", maxRetries: 2}
  - {id: pb, adapter: openai, baseUrl: "http://127.0.0.1:2/v1", maxRetries: 0}
models:
  - {id: a, provider: pa, capabilities: [chat]}
  - {id: b, provider: pb, capabilities: [chat]}
configurations:
  - {id: main, mode: fixed, model: a, fallback: [to-b]}
  - {id: to-b, mode: fixed, model: b}
  - {id: alone, mode: fixed, model: a}
"""
Outcome = str | Exception  # a result, or what the call raises


def _failure(kind: FailureKind, **extra: str) -> UpstreamError:
    return UpstreamError(kind, f"upstream {kind}", retry_after=extra.get("retry_after", "0"))


@dataclass
class FakeAdapter:
    """Plays each provider's outcomes in order; the last one repeats."""

    script: dict[str, list[Outcome]]
    calls: list[str] = field(default_factory=list)

    async def dispatch(self, adapter: Adapter, call: UpstreamCall) -> str:
        provider = call.provider.id
        self.calls.append(provider)
        outcomes = self.script[provider]
        outcome = outcomes.pop(0) if len(outcomes) > 1 else outcomes[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@dataclass
class Setup:
    attempts: Attempts
    breakers: CircuitBreakers
    resolver: Resolver
    observed: list[tuple[str, str | None]]


def _setup(threshold: int = 10) -> Setup:
    config: GatewayConfig = load_config_text(CONFIG)
    breakers = CircuitBreakers(threshold, 30)

    def snapshot() -> Snapshot:
        return Snapshot(
            models=config.models,
            providers=config.providers,
            routing=config.routing,
            health={},
            quality={},
            history=None,
            open_circuits=breakers.open_providers(time.monotonic()),
        )

    resolver = Resolver(config, breakers, snapshot, dict)
    observed: list[tuple[str, str | None]] = []

    def observe(provider: str, seconds: float, kind: str | None) -> None:
        observed.append((provider, kind))

    def adapters(target: Target) -> Adapter:
        return None  # type: ignore[return-value]  # the dispatch below is the fake

    return Setup(Attempts(resolver, breakers, adapters, observe), breakers, resolver, observed)


def _ctx(configuration: str = "main", seconds: float = 60) -> CallContext:
    body = f'{{"model": "{configuration}", "messages": [{{"role": "user", "content": "x"}}]}}'
    request = parse_inbound(Endpoint.CHAT, body.encode())
    return CallContext(request, None, "call-1", time.monotonic() + seconds)


async def _run(
    setup: Setup, fake: FakeAdapter, ctx: CallContext | None = None
) -> tuple[str, Target, CallContext]:
    ctx = ctx or _ctx()
    primary = setup.resolver.resolve(
        setup.resolver._config.configurations[ctx.request.configuration], ctx.request
    )
    result, target = await setup.attempts.run(ctx, primary, fake.dispatch)
    return result, target, ctx


async def _failed(
    setup: Setup, fake: FakeAdapter, ctx: CallContext | None = None
) -> tuple[BaseException, CallContext]:
    ctx = ctx or _ctx()
    with pytest.raises((GatewayError, UpstreamRejected)) as caught:
        await _run(setup, fake, ctx)
    return caught.value, ctx


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


async def test_a_first_answer_is_served_with_no_retry() -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": ["answer-a"]})
    result, target, ctx = await _run(setup, fake)
    assert (result, target.provider.id) == ("answer-a", "pa")
    assert (ctx.record.provider_retries, ctx.record.fallback_attempts) == (0, 0)
    assert (ctx.record.served_provider, ctx.record.provider) == ("pa", "pa")
    assert setup.observed == [("pa", None)]


async def test_a_passing_failure_is_retried_on_the_same_provider_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX), _failure(FailureKind.TIMEOUT), "a"]})
    with caplog.at_level(logging.DEBUG, logger="gateway.pipeline.attempts"):
        result, _, ctx = await _run(setup, fake)
    assert result == "a" and fake.calls == ["pa", "pa", "pa"]
    assert ctx.record.provider_retries == 2 and ctx.record.error_class is None
    assert setup.observed == [("pa", "http_5xx"), ("pa", "timeout"), ("pa", None)]
    assert _lines(caplog, logging.INFO) == [
        "call call-1: retrying pa in 0.00 s after http_5xx (retry 1 of 2)",
        "call call-1: retrying pa in 0.00 s after timeout (retry 2 of 2)",
    ]


async def test_spent_retries_go_to_the_fallback_and_say_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)], "pb": ["answer-b"]})
    with caplog.at_level(logging.INFO, logger="gateway.pipeline.attempts"):
        result, target, ctx = await _run(setup, fake)
    assert (result, target.configuration.id) == ("answer-b", "to-b")
    assert fake.calls == ["pa", "pa", "pa", "pb"]
    assert ctx.record.fallback_attempts == 1 and ctx.record.provider_retries == 2
    assert (ctx.record.provider, ctx.record.served_provider) == ("pa", "pb")
    assert "call call-1: pa not retried after http_5xx: its 2 retries are spent" in _lines(
        caplog, logging.INFO
    )


async def test_refused_credentials_skip_the_retries_but_not_the_fallback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [_failure(FailureKind.AUTH_REJECTED)], "pb": ["answer-b"]})
    with caplog.at_level(logging.INFO, logger="gateway.pipeline.attempts"):
        result, _, _ = await _run(setup, fake)
    assert result == "answer-b" and fake.calls == ["pa", "pb"]
    assert (
        "call call-1: pa not retried after auth_rejected: "
        "auth_rejected would fail again on the same provider"
    ) in _lines(caplog, logging.INFO)


async def test_a_refusal_of_the_request_is_relayed_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup(threshold=1)
    refusal = UpstreamError(FailureKind.HTTP_4XX, "bad", status=400, body=b"{}")
    fake = FakeAdapter({"pa": [refusal], "pb": ["answer-b"]})
    with caplog.at_level(logging.DEBUG, logger="gateway.pipeline.attempts"):
        error, _ = await _failed(setup, fake)
    assert isinstance(error, UpstreamRejected) and error.error is refusal
    assert fake.calls == ["pa"]  # neither retried nor fallen back from
    assert setup.breakers.open_providers(time.monotonic()) == frozenset()  # it answered
    assert _lines(caplog, logging.DEBUG) == [
        "call call-1: pa not retried after http_4xx: the upstream refused the request itself"
    ]
    assert not _lines(caplog, logging.WARNING)  # the caller's fault: no warning


async def test_a_backoff_past_the_deadline_is_not_waited_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup()
    slow = _failure(FailureKind.HTTP_429, retry_after="20")
    fake = FakeAdapter({"pa": [slow], "pb": [_failure(FailureKind.HTTP_429)]})
    with caplog.at_level(logging.INFO, logger="gateway.pipeline.attempts"):
        error, ctx = await _failed(setup, fake, _ctx(seconds=5))
    assert fake.calls == ["pa", "pb"] and ctx.record.provider_retries == 0
    assert (
        "call call-1: pa not retried after http_429: "
        "its 20.00 s backoff would pass the call's deadline"
    ) in _lines(caplog, logging.INFO)
    assert isinstance(error, RateLimited)


async def test_a_bug_of_ours_is_an_internal_error_never_counted_against_the_provider() -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [TypeError("unhashable type: 'list'")], "pb": ["answer-b"]})
    error, _ = await _failed(setup, fake)
    assert isinstance(error, InternalError)
    assert error.http_status == 500 and error.code == "internal_error"
    assert error.error_class is ErrorClass.INTERNAL_ERROR  # the pipeline's row says so
    assert setup.observed == []  # no health reading: the provider was never at fault
    assert fake.calls == ["pa"]  # neither retried nor fallen back from
    assert setup.breakers.failures("pa") == 0


@pytest.mark.parametrize(
    ("last", "answer", "error_class"),
    [
        (FailureKind.TIMEOUT, UpstreamTimedOut, ErrorClass.UPSTREAM_TIMEOUT),
        (FailureKind.HTTP_429, RateLimited, ErrorClass.UPSTREAM_429),
        (FailureKind.HTTP_5XX, UpstreamFailed, ErrorClass.UPSTREAM_5XX),
        (FailureKind.CONNECT, UpstreamFailed, ErrorClass.UPSTREAM_CONNECT),
        (FailureKind.AUTH_REJECTED, UpstreamAuthFailed, ErrorClass.UPSTREAM_AUTH),
    ],
)
async def test_when_all_fail_the_last_attempt_decides_the_answer(
    last: FailureKind, answer: type[GatewayError], error_class: ErrorClass
) -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)], "pb": [_failure(last)]})
    error, ctx = await _failed(setup, fake)
    assert type(error) is answer
    assert ctx.record.error_class is error_class
    assert isinstance(error, GatewayError)
    # One entry per configuration attempted, with its last failure.
    assert error.message.endswith(f"(pa/a: http_5xx; pb/b: {last}).")


async def test_the_last_retry_after_reaches_the_client() -> None:
    setup = _setup()
    fake = FakeAdapter(
        {"pa": [_failure(FailureKind.HTTP_5XX)], "pb": [_failure(FailureKind.HTTP_429)]}
    )
    error, _ = await _failed(setup, fake)
    assert isinstance(error, RateLimited) and error.headers() == {"retry-after": "0"}


async def test_refused_credentials_name_the_provider_not_the_callers_key() -> None:
    setup = _setup()
    fake = FakeAdapter({"pa": [_failure(FailureKind.AUTH_REJECTED)]})
    error, _ = await _failed(setup, fake, _ctx("alone"))
    assert isinstance(error, UpstreamAuthFailed)
    assert error.message.startswith("The provider 'pa' rejected the gateway's credentials")


async def test_a_circuit_opened_by_the_call_ends_its_retries() -> None:
    setup = _setup(threshold=2)
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)], "pb": ["answer-b"]})
    result, _, _ = await _run(setup, fake)
    assert result == "answer-b"
    assert fake.calls == ["pa", "pa", "pb"]  # the second failure opened pa's circuit


async def test_a_retry_its_circuit_stops_is_not_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    setup = _setup(threshold=2)
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)], "pb": ["answer-b"]})
    with caplog.at_level(logging.INFO, logger="gateway.pipeline.attempts"):
        _, _, ctx = await _run(setup, fake)
    assert fake.calls == ["pa", "pa", "pb"]
    # One retry of pa was sent; the second was scheduled, then pa's circuit opened.
    assert ctx.record.provider_retries == 1
    assert "call call-1: pa not retried after http_5xx: its circuit opened" in _lines(
        caplog, logging.INFO
    )


async def test_a_retry_a_circuit_opened_meanwhile_stops_is_not_counted() -> None:
    setup = _setup(threshold=2)
    fake = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)], "pb": ["answer-b"]})

    async def others_fail_too(adapter: Adapter, call: UpstreamCall) -> str:
        if call.provider.id == "pa":  # other calls' failures open pa's circuit meanwhile
            for _ in range(2):
                setup.breakers.record_failure("pa", time.monotonic())
        return await fake.dispatch(adapter, call)

    ctx = _ctx()
    primary = setup.resolver.resolve(setup.resolver._config.configurations["main"], ctx.request)
    result, _ = await setup.attempts.run(ctx, primary, others_fail_too)
    assert result == "answer-b" and fake.calls == ["pa", "pb"]
    assert ctx.record.provider_retries == 0  # the retry was scheduled, never sent


async def test_nothing_attempted_behind_an_open_circuit_is_a_503() -> None:
    setup = _setup(threshold=1)
    first = FakeAdapter({"pa": [_failure(FailureKind.HTTP_5XX)]})
    await _failed(setup, first, _ctx("alone"))  # opens pa's circuit
    again = FakeAdapter({"pa": ["never"]})
    error, ctx = await _failed(setup, again, _ctx("alone"))
    assert isinstance(error, NoEligibleModel) and error.http_status == 503
    assert again.calls == []
    assert ctx.record.error_class is ErrorClass.CIRCUIT_OPEN
    assert error.message == "No eligible model for configuration 'alone': alone [circuit_open]"


async def test_a_translation_refusal_touches_neither_health_nor_the_circuit() -> None:
    """Nothing was sent: no health sample, the circuit as it was, and a half-open trial
    slot the call took is free again for the next call."""
    setup = _setup(threshold=1)
    setup.breakers.record_failure("pa", time.monotonic() - 60)  # opened, cooldown over
    refusal = UpstreamError(FailureKind.UNTRANSLATABLE, "no", status=400, body=b"{}")
    fake = FakeAdapter({"pa": [refusal], "pb": ["answer-b"]})
    error, _ = await _failed(setup, fake)
    assert isinstance(error, UpstreamRejected) and error.error.kind is FailureKind.UNTRANSLATABLE
    assert fake.calls == ["pa"]  # not retried, no fallback
    assert setup.observed == []
    assert setup.breakers.opened_at("pa") is not None  # still open, not closed by "success"
    assert setup.breakers.try_acquire("pa", time.monotonic())  # the trial slot is free


async def test_the_serving_attempts_ignored_params_are_the_rows() -> None:
    setup = _setup()

    async def dispatch(adapter: Adapter, call: UpstreamCall) -> str:
        call.ignore("text.verbosity")
        call.ignore("text.verbosity")
        call.ignore("tools[web_search]")
        return "answer"

    ctx = _ctx("alone")
    primary = setup.resolver.resolve(setup.resolver._config.configurations["alone"], ctx.request)
    await setup.attempts.run(ctx, primary, dispatch)
    assert ctx.record.ignored_params == "text.verbosity,tools[web_search]"
