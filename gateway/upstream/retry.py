"""The retry policy as two small functions (as openai-python does)."""

from __future__ import annotations

import random
import re

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import SAME_PROVIDER_FUTILE

MAX_RETRY_AFTER_SECONDS = 30.0
BASE_DELAY_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 8.0
_RNG = random.Random()
# What an upstream's Retry-After may be to be kept (and relayed with a final 429): seconds
# (a fraction tolerated, as some upstreams send one) or an IMF-fixdate (RFC 9110).
_RETRY_AFTER = re.compile(
    r"\d{1,10}(\.\d{1,6})?|[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT",
    re.ASCII,
)


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


def kept_retry_after(value: str | None) -> str | None:
    """An upstream's Retry-After in a form HTTP allows, else None: anything else (a text, a
    key the upstream echoes) would reach the client verbatim in the final 429's header."""
    if value is None:
        return None
    value = value.strip()
    return value if _RETRY_AFTER.fullmatch(value) else None


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff
    return max(0.0, seconds)
