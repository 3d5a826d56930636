"""The retry policy: whether the same provider is asked again, why not, and how long to wait."""

from __future__ import annotations

import random

import pytest

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.upstream.retry import (
    BASE_DELAY_SECONDS,
    MAX_BACKOFF_SECONDS,
    MAX_RETRY_AFTER_SECONDS,
    kept_retry_after,
    retry_delay,
    should_retry,
    why_not_retried,
)


def _error(kind: FailureKind, retryable: bool | None = None) -> UpstreamError:
    return UpstreamError(kind, "x", retryable=retryable)


@pytest.mark.parametrize(
    "kind",
    [
        FailureKind.TIMEOUT,
        FailureKind.CONNECT,
        FailureKind.HTTP_5XX,
        FailureKind.HTTP_429,
        FailureKind.HTTP_408,
        FailureKind.INVALID_RESPONSE,
    ],
)
def test_a_passing_failure_is_retried_until_the_retries_are_spent(kind: FailureKind) -> None:
    error = _error(kind)
    assert [should_retry(error, attempt, 2) for attempt in range(4)] == [True, True, False, False]
    assert why_not_retried(error, 1, 2) is None
    assert why_not_retried(error, 2, 2) == "its 2 retries are spent"
    assert not should_retry(error, 0, 0)  # maxRetries 0: one try


@pytest.mark.parametrize(
    "kind", [FailureKind.AUTH_REJECTED, FailureKind.OVERSIZE, FailureKind.CIRCUIT_OPEN]
)
def test_a_failure_the_same_provider_would_repeat_is_never_retried(kind: FailureKind) -> None:
    error = _error(kind, retryable=True)  # as Attempts raises circuit_open: fallbacks may answer
    assert not should_retry(error, 0, 5)
    assert why_not_retried(error, 0, 5) == f"{kind} would fail again on the same provider"


def test_a_refusal_of_the_request_itself_is_neither_retried_nor_fallen_back_from() -> None:
    error = _error(FailureKind.HTTP_4XX)
    assert not error.retryable
    assert why_not_retried(error, 0, 5) == "the upstream refused the request itself"


def test_an_adapter_may_overrule_the_kind() -> None:
    """A stream cut before its first byte is retryable; a 5xx marked final is not."""
    assert should_retry(_error(FailureKind.STREAM_CUT, retryable=True), 0, 1)
    assert not should_retry(_error(FailureKind.STREAM_CUT), 0, 1)
    assert not should_retry(_error(FailureKind.HTTP_5XX, retryable=False), 0, 1)


@pytest.mark.parametrize(
    ("header", "expected"),
    [("0", 0.0), ("2", 2.0), ("1.5", 1.5), ("-3", 0.0), ("120", MAX_RETRY_AFTER_SECONDS)],
)
def test_retry_after_in_seconds_wins_capped(header: str, expected: float) -> None:
    assert retry_delay(0, header) == expected
    assert retry_delay(5, header) == expected  # whatever the attempt


@pytest.mark.parametrize("header", [None, "", "Wed, 21 Oct 2026 07:28:00 GMT", "soon"])
def test_without_a_usable_retry_after_the_backoff_doubles_with_jitter(header: str | None) -> None:
    rng = random.Random(1)
    for attempt in range(8):
        base = min(BASE_DELAY_SECONDS * 2**attempt, MAX_BACKOFF_SECONDS)
        delay = retry_delay(attempt, header, rng)
        assert base <= delay <= base * 1.25, (attempt, delay)


def test_the_jitter_comes_from_the_generator_given() -> None:
    assert retry_delay(3, None, random.Random(7)) == retry_delay(3, None, random.Random(7))
    delays = {retry_delay(3, None, random.Random(seed)) for seed in range(20)}
    assert len(delays) > 1


def test_only_a_retry_after_http_allows_is_kept() -> None:
    assert kept_retry_after(" 7 ") == "7" and kept_retry_after("0.5") == "0.5"
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert kept_retry_after(date) == date
    for odd in ("sk-upstream-secret-42", "7 sk-x", "-1", "١٢", "", None, "9" * 11):
        assert kept_retry_after(odd) is None
