"""The retry policy as two small functions (as openai-python does)."""

from __future__ import annotations

import random

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import SAME_PROVIDER_FUTILE

MAX_RETRY_AFTER_SECONDS = 30.0
BASE_DELAY_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 8.0
_RNG = random.Random()


def should_retry(error: UpstreamError, attempt: int, max_retries: int) -> bool:
    """``attempt`` is 0 for the first try."""
    return why_not_retried(error, attempt, max_retries) is None


def why_not_retried(error: UpstreamError, attempt: int, max_retries: int) -> str | None:
    """Why the same provider is not asked again after ``error``, or None when it is."""
    if not error.retryable:
        return "the upstream refused the request itself"
    if error.kind in SAME_PROVIDER_FUTILE:
        return f"{error.kind} would fail again on the same provider"
    if attempt >= max_retries:
        return f"its {max_retries} retries are spent"
    return None


def retry_delay(attempt: int, retry_after: str | None, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter; an upstream's Retry-After wins, capped at 30 s."""
    parsed = _parse_retry_after(retry_after)
    if parsed is not None:
        return min(parsed, MAX_RETRY_AFTER_SECONDS)
    base = min(BASE_DELAY_SECONDS * (2.0**attempt), MAX_BACKOFF_SECONDS)
    jitter = (rng or _RNG).uniform(0, base / 4)
    return base + jitter


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff
    return max(0.0, seconds)
