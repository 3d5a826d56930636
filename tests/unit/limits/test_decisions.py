"""The sliding log in one process: exact per minute, tokens settled, slots, and how a
refusal and the x-ratelimit-* headers read."""

from __future__ import annotations

import pytest

from gateway.domain.errors import RateLimitExceeded
from gateway.domain.limits import RateLimit
from gateway.domain.model import Configuration, ConfigurationMode, Model
from gateway.domain.settings import ApiKey
from gateway.limits.decisions import (
    CONCURRENT,
    REQUESTS,
    TOKENS,
    Reading,
    Scope,
    answer_headers,
    call_scopes,
    duration,
    model_scope,
    refusal,
)
from gateway.limits.local import InProcessLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _limiter(clock: Clock) -> InProcessLimiter:
    return InProcessLimiter(lease_ms=660_000, clock=clock)


def _scope(kind: str = "key", **limits: int) -> Scope:
    return Scope(kind, "ci", RateLimit(**limits))


def test_requests_per_minute_admits_exactly_the_limit_then_frees_as_entries_age() -> None:
    clock = Clock()
    limiter = _limiter(clock)
    scope = _scope(requests_per_minute=3)
    admitted = []
    for _ in range(5):
        verdict, ticket = limiter.check([scope], 0)
        admitted.append(ticket is not None)
        clock.now += 10_000
    assert admitted == [True, True, True, False, False]
    verdict, _ = limiter.check([scope], 0)
    assert verdict.measure == REQUESTS
    # The first entry (t=0) leaves the window at t=60 s; now is t=50 s.
    assert verdict.readings[0].requests_wait_ms == 10_000
    clock.now += 10_000
    assert limiter.check([scope], 0)[1] is not None  # t=60 s: the first entry has aged out
    assert limiter.check([scope], 0)[1] is None  # the second (t=10 s) has not


def test_a_refused_call_leaves_nothing_in_any_scope() -> None:
    clock = Clock()
    limiter = _limiter(clock)
    roomy, tight = _scope("key", requests_per_minute=10), _scope("team", requests_per_minute=1)
    assert limiter.check([roomy, tight], 0)[1] is not None
    verdict, ticket = limiter.check([roomy, tight], 0)
    assert ticket is None and verdict.refused == 1
    verdict, _ = limiter.check([roomy], 0)
    assert verdict.readings[0].requests == 2  # the refused call was not counted


def test_tokens_are_held_then_settled_to_what_the_call_used() -> None:
    clock = Clock()
    limiter = _limiter(clock)
    scope = _scope(tokens_per_minute=1000)
    _, first = limiter.check([scope], 800)
    assert first is not None
    verdict, ticket = limiter.check([scope], 300)
    assert ticket is None and verdict.measure == TOKENS and verdict.readings[0].tokens == 800
    limiter.release(first, 100)  # it used 100 of the 800 held
    verdict, ticket = limiter.check([scope], 300)
    assert ticket is not None and verdict.readings[0].tokens == 400


def test_a_call_larger_than_the_limit_is_refused_for_good() -> None:
    clock = Clock()
    limiter = _limiter(clock)
    scope = _scope(tokens_per_minute=100)
    verdict, ticket = limiter.check([scope], 101)
    assert ticket is None
    error = refusal(scope, TOKENS, verdict.readings[0], 101)
    assert "more than the limit itself" in error.message
    assert error.retry_after_seconds == 60


def test_tokens_wait_is_until_enough_entries_leave_the_window() -> None:
    clock = Clock()
    limiter = _limiter(clock)
    scope = _scope(tokens_per_minute=100)
    limiter.check([scope], 40)
    clock.now += 5_000
    limiter.check([scope], 40)
    clock.now += 5_000
    verdict, ticket = limiter.check([scope], 70)  # 80 + 70 > 100: both entries must go
    assert ticket is None
    assert verdict.readings[0].tokens_wait_ms == 55_000  # the second leaves at t=65 s


def test_concurrent_slots_free_at_the_end_of_the_call_or_of_the_lease() -> None:
    clock = Clock()
    limiter = InProcessLimiter(lease_ms=30_000, clock=clock)
    scope = _scope(concurrent=2)
    first = limiter.check([scope], 0)[1]
    second = limiter.check([scope], 0)[1]
    assert first is not None and second is not None
    verdict, third = limiter.check([scope], 0)
    assert third is None and verdict.measure == CONCURRENT
    limiter.release(first, None)
    assert limiter.check([scope], 0)[1] is not None
    clock.now += 30_001  # a process that died mid-call: its slots end with their lease
    assert limiter.check([scope], 0)[1] is not None


def test_refusal_names_the_limit_and_retry_after_is_whole_seconds() -> None:
    scope = Scope("key", "ci", RateLimit(requests_per_minute=100))
    error = refusal(scope, REQUESTS, Reading(requests=100, requests_wait_ms=1_200), 0)
    assert isinstance(error, RateLimitExceeded)
    assert "key 'ci' 100 requests per minute" in error.message
    assert error.headers() == {"retry-after": "2"}
    assert error.envelope()["error"]["code"] == "rate_limit_exceeded"
    assert error.http_status == 429
    concurrent = refusal(Scope("team", "t", RateLimit(concurrent=5)), CONCURRENT, Reading(), 0)
    assert "team 't' 5 concurrent calls" in concurrent.message


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (250, "250ms"),
        (1000, "1s"),
        (59_500, "59.5s"),
        (360_000, "6m0s"),
        (61_250, "1m1.25s"),
    ],
)
def test_reset_durations_read_as_openai_writes_them(ms: int, text: str) -> None:
    assert duration(ms) == text


def test_headers_show_the_scope_with_least_left_and_never_a_model_quota() -> None:
    key = Scope("key", "ci", RateLimit(requests_per_minute=100, tokens_per_minute=1000))
    team = Scope("team", "t", RateLimit(requests_per_minute=10))
    model = Scope("model", "m", RateLimit(requests_per_minute=1))
    readings = [
        Reading(requests=5, requests_reset_ms=60_000, tokens=300, tokens_reset_ms=2_000),
        Reading(requests=9, requests_reset_ms=30_000),
        Reading(requests=1),
    ]
    assert answer_headers([key, team, model], readings) == {
        "x-ratelimit-limit-requests": "10",
        "x-ratelimit-remaining-requests": "1",
        "x-ratelimit-reset-requests": "30s",
        "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "700",
        "x-ratelimit-reset-tokens": "2s",
    }


def test_scopes_of_a_call_key_team_configuration_and_a_model() -> None:
    key = ApiKey(
        "ci",
        "0" * 64,
        team="build",
        rate_limit=RateLimit(requests_per_minute=5),
        team_rate_limit=RateLimit(concurrent=2),
    )
    configuration = Configuration(
        "chat", ConfigurationMode.FIXED, model="m", rate_limit=RateLimit(tokens_per_minute=9)
    )
    names = [scope.name for scope in call_scopes(key, configuration)]
    assert names == ["key 'ci'", "team 'build'", "configuration 'chat'"]
    bare = Configuration("chat", ConfigurationMode.FIXED, model="m")
    assert call_scopes(ApiKey("k", "0" * 64), bare) == ()
    assert call_scopes(None, bare) == ()
    assert model_scope(Model("m", "p", "m")) is None
    limited = Model("m", "p", "m", rate_limit=RateLimit(requests_per_minute=1))
    scope = model_scope(limited)
    assert scope is not None and scope.storage == "model:m"
