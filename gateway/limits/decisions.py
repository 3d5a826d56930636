"""Rate-limit decisions (pure): which scopes a call is limited by, whether it fits, how a
refusal reads, and the ``x-ratelimit-*`` headers of an answer.

The algorithm is a sliding log over the last 60 seconds (docs/operations.md, "Rate
limits"): each admitted call leaves its time (and, with ``tokensPerMinute``, its tokens)
in its scopes' logs; a call is admitted when, with the entries older than 60 s dropped,
``requests + 1 <= requestsPerMinute``, ``tokens + held <= tokensPerMinute`` and
``in flight + 1 <= concurrent`` in every scope. A refused call leaves nothing. Both
backends (``gateway.limits.local`` in process, ``gateway.limits.redis_limiter`` in one
Lua script) run exactly this and report it as one :class:`Reading` per scope.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.domain.errors import RateLimitExceeded
from gateway.domain.limits import RateLimit
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey

WINDOW_MS = 60_000
REQUESTS = "requests"
TOKENS = "tokens"
CONCURRENT = "concurrent"
NEVER = -1  # a wait that no amount of time ends (a call larger than the limit itself)


@dataclass(frozen=True, slots=True)
class Scope:
    """One limit a call is counted against: ``kind`` key | team | configuration | model."""

    kind: str
    id: str
    limit: RateLimit

    @property
    def name(self) -> str:
        return f"{self.kind} '{self.id}'"

    @property
    def storage(self) -> str:
        """The scope's name in a backend (Redis keys are ``gateway:rl:`` and this)."""
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True, slots=True)
class Reading:
    """One scope as the check found it; after an admission, with this call counted."""

    requests: int = 0  # admitted in the last 60 s
    requests_wait_ms: int = 0  # until one more request fits (0: fits now)
    requests_reset_ms: int = 0  # until the log is empty
    tokens: int = 0  # used or held in the last 60 s
    tokens_wait_ms: int = 0  # until this call's tokens fit (NEVER: they never do)
    tokens_reset_ms: int = 0
    in_flight: int = 0


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    readings: tuple[Reading, ...]
    refused: int | None = None  # index of the scope that refused
    measure: str | None = None  # REQUESTS | TOKENS | CONCURRENT


def call_scopes(key: ApiKey | None, configuration: Configuration) -> tuple[Scope, ...]:
    """The scopes a call is held to: its key's, its team's, its configuration's."""
    scopes: list[Scope] = []
    if key is not None:
        if key.rate_limit is not None and not key.rate_limit.is_empty:
            scopes.append(Scope("key", key.id, key.rate_limit))
        team = key.team_rate_limit
        if key.team is not None and team is not None and not team.is_empty:
            scopes.append(Scope("team", key.team, team))
    scope = configuration_scope(configuration)
    if scope is not None:
        scopes.append(scope)
    return tuple(scopes)


def configuration_scope(configuration: Configuration) -> Scope | None:
    """The configuration's own limit: a call's at admission, a fallback's when reached."""
    limit = configuration.rate_limit
    if limit is None or limit.is_empty:
        return None
    return Scope("configuration", configuration.id, limit)


def model_scope(model: Model) -> Scope | None:
    limit = model.rate_limit
    if limit is None or limit.is_empty:
        return None
    return Scope("model", model.id, limit)


def needs_tokens(scopes: Sequence[Scope]) -> bool:
    return any(scope.limit.tokens_per_minute is not None for scope in scopes)


# -- the check itself, on one process's logs (the Lua script mirrors it) -----------------


@dataclass(slots=True)
class TokenEntry:
    at: int  # admission time (ms)
    tokens: int  # held, then what the call used
    call_id: str


@dataclass(slots=True)
class ScopeLog:
    """One scope's state in process: admissions, tokens, and the calls in flight."""

    requests: deque[int] = field(default_factory=deque)  # admission times (ms)
    tokens: deque[TokenEntry] = field(default_factory=deque)
    token_entries: dict[str, TokenEntry] = field(default_factory=dict)  # by call id
    token_total: int = 0
    leases: dict[str, int] = field(default_factory=dict)  # call id -> lease end (ms)

    def expire(self, now: int) -> None:
        cut = now - WINDOW_MS
        requests = self.requests
        while requests and requests[0] <= cut:
            requests.popleft()
        tokens = self.tokens
        while tokens and tokens[0].at <= cut:
            entry = tokens.popleft()
            self.token_total -= entry.tokens
            self.token_entries.pop(entry.call_id, None)
        if self.leases:
            self.leases = {k: end for k, end in self.leases.items() if end > now}

    @property
    def idle(self) -> bool:
        return not (self.requests or self.tokens or self.leases)


def read(log: ScopeLog, limit: RateLimit, need: int, now: int) -> Reading:
    """``log`` (expired already) against ``limit`` for a call holding ``need`` tokens."""
    count = len(log.requests)
    requests_wait = 0
    rpm = limit.requests_per_minute
    if rpm is not None and count + 1 > rpm:
        requests_wait = log.requests[count - rpm] + WINDOW_MS - now
    tokens_wait = 0
    tpm = limit.tokens_per_minute
    if tpm is not None:
        if need > tpm:
            tokens_wait = NEVER
        elif log.token_total + need > tpm:
            freed = 0
            for entry in log.tokens:
                freed += entry.tokens
                if log.token_total - freed + need <= tpm:
                    tokens_wait = entry.at + WINDOW_MS - now
                    break
    return Reading(
        requests=count,
        requests_wait_ms=max(requests_wait, 0),
        requests_reset_ms=log.requests[-1] + WINDOW_MS - now if log.requests else 0,
        tokens=log.token_total,
        tokens_wait_ms=tokens_wait,
        tokens_reset_ms=log.tokens[-1].at + WINDOW_MS - now if log.tokens else 0,
        in_flight=len(log.leases),
    )


def refusing_measure(limit: RateLimit, reading: Reading, need: int) -> str | None:
    """The first measure this call would pass, if any (requests, tokens, then concurrent)."""
    rpm, tpm, concurrent = limit.requests_per_minute, limit.tokens_per_minute, limit.concurrent
    if rpm is not None and reading.requests + 1 > rpm:
        return REQUESTS
    if tpm is not None and reading.tokens + need > tpm:
        return TOKENS
    if concurrent is not None and reading.in_flight + 1 > concurrent:
        return CONCURRENT
    return None


def admitted_reading(limit: RateLimit, reading: Reading, need: int) -> Reading:
    """The reading once this call is counted in the scope."""
    rpm, tpm = limit.requests_per_minute is not None, limit.tokens_per_minute is not None
    return Reading(
        requests=reading.requests + 1 if rpm else 0,
        requests_wait_ms=0,
        requests_reset_ms=WINDOW_MS if rpm else 0,
        tokens=reading.tokens + need if tpm else 0,
        tokens_wait_ms=0,
        tokens_reset_ms=WINDOW_MS if tpm else 0,
        in_flight=reading.in_flight + 1 if limit.concurrent is not None else 0,
    )


def record(log: ScopeLog, limit: RateLimit, call_id: str, need: int, now: int, lease: int) -> None:
    if limit.requests_per_minute is not None:
        log.requests.append(now)
    if limit.tokens_per_minute is not None:
        entry = TokenEntry(now, need, call_id)
        log.tokens.append(entry)
        log.token_entries[call_id] = entry
        log.token_total += need
    if limit.concurrent is not None:
        log.leases[call_id] = now + lease


def settle(log: ScopeLog, call_id: str, tokens: int | None) -> None:
    """The call ended: its held tokens become ``tokens`` (None: unchanged), its slot is free."""
    entry = log.token_entries.pop(call_id, None)
    if entry is not None and tokens is not None:
        log.token_total += tokens - entry.tokens
        entry.tokens = tokens
    log.leases.pop(call_id, None)


# -- how an outcome reads ---------------------------------------------------------------


def wait_ms(measure: str, reading: Reading) -> int:
    """Until a refused call would fit the measure that refused it (NEVER: it never does;
    a slot: 1 s, when to look again)."""
    if measure == REQUESTS:
        return reading.requests_wait_ms
    if measure == TOKENS:
        return reading.tokens_wait_ms
    return 1000


def refusal(scope: Scope, measure: str, reading: Reading, need: int) -> RateLimitExceeded:
    """429 naming the limit (``key 'ci' 100 requests per minute``) and when to retry."""
    limit = scope.limit
    wait = wait_ms(measure, reading)
    if measure == REQUESTS:
        text = f"{scope.name} {limit.requests_per_minute} requests per minute"
    elif measure == TOKENS:
        text = (
            f"{scope.name} {limit.tokens_per_minute} tokens per minute ({reading.tokens} used "
            f"or held in the last minute; this call may need up to {need} tokens)"
        )
        if wait == NEVER:
            text += ", more than the limit itself: lower max_tokens or the prompt"
            wait = WINDOW_MS
    else:
        text = f"{scope.name} {limit.concurrent} concurrent calls"
    seconds = max(1, math.ceil(wait / 1000))
    return RateLimitExceeded(
        f"Rate limit exceeded: {text}; retry in {seconds} s.", retry_after_seconds=seconds
    )


def answer_headers(scopes: Sequence[Scope], readings: Sequence[Reading]) -> dict[str, str]:
    """OpenAI's ``x-ratelimit-*`` headers: of each measure, the scope with the least left
    (models' quotas are the gateway's, not the caller's: they are not shown)."""
    headers: dict[str, str] = {}
    best: tuple[int, int, int] | None = None  # remaining, limit, reset ms
    for scope, reading in zip(scopes, readings, strict=True):
        rpm = scope.limit.requests_per_minute
        if rpm is None or scope.kind == "model":
            continue
        figure = (max(rpm - reading.requests, 0), rpm, reading.requests_reset_ms)
        if best is None or figure[0] < best[0]:
            best = figure
    if best is not None:
        headers["x-ratelimit-limit-requests"] = str(best[1])
        headers["x-ratelimit-remaining-requests"] = str(best[0])
        headers["x-ratelimit-reset-requests"] = duration(best[2])
    best = None
    for scope, reading in zip(scopes, readings, strict=True):
        tpm = scope.limit.tokens_per_minute
        if tpm is None or scope.kind == "model":
            continue
        figure = (max(tpm - reading.tokens, 0), tpm, reading.tokens_reset_ms)
        if best is None or figure[0] < best[0]:
            best = figure
    if best is not None:
        headers["x-ratelimit-limit-tokens"] = str(best[1])
        headers["x-ratelimit-remaining-tokens"] = str(best[0])
        headers["x-ratelimit-reset-tokens"] = duration(best[2])
    return headers


def duration(ms: int) -> str:
    """OpenAI's reset format: ``0s``, ``250ms``, ``1s``, ``59.5s``, ``6m0s``."""
    if ms <= 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest = divmod(ms, 60_000)
    seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"
